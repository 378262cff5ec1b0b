"""Rerankers: trim the fused candidates to the few that enter the prompt, with a calibrated score.

Default, `JudgeReranker`: the answer judge (models/judge) reads each candidate chunk's best sentence
(by the MiniLM cosine of the sentence vectors stored at ingestion) against the question; a chunk
scores the judge's probability that it answers. A pair with an Arabic side is read by the judge's
multilingual reader from the USE vectors an Arabic chunk stores; an English chunk under an Arabic
question has no multilingual sentence vector here and keeps the cheap score. The cheap score,
`SentenceReranker`, orders what the judge reads and stands in where it cannot read: the best
sentence's cosine blended with the whole chunk's, scaled by the share of the question's BM25 terms
the chunk holds.

With `CAIRN_RERANK_MODEL` pointing at a local sentence-transformers CrossEncoder directory,
`CrossEncoderReranker` scores (question, chunk) pairs with it instead (sigmoid scores).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

# Tuning constants, chosen on a SQuAD 2.0 tuning split for the pooled sentence vectors of
# retrieval/embed.py, with the sample handbook's questions as a check (see docs/benchmarks.md).
SENTENCE_WEIGHT = 0.9  # best sentence vs whole chunk
COVERAGE_FLOOR = 0.4  # score multiplier when no query term occurs in the chunk
# The multilingual model's cosines run lower than MiniLM's; this maps them onto the same scale so
# one floor serves both (score = ML_SCALE * cos + ML_SHIFT).
ML_SCALE = 2.2
ML_SHIFT = -0.18
# The multilingual branch keeps its own blend: its sentence vectors (USE, one per sentence) are not
# the pooled MiniLM ones the two constants above were tuned for.
ML_SENTENCE_WEIGHT = 0.7
ML_COVERAGE_FLOOR = 0.2
# The judge's reads per question (one pair each: a candidate's best sentence), and the share of its
# cheap score a chunk the judge did not read keeps (below any probability it could have been given).
JUDGE_READS = 12
UNREAD_SHARE = 0.01

@dataclass(frozen=True)
class Candidate:
    point_id: str
    chunk_id: str
    text: str
    lang: str
    vectors: Any | None  # a chunk_vectors row, or None when missing


class Reranker(Protocol):
    name: str

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]: ...


def unpack_vectors(blob: bytes | None, dim: int) -> np.ndarray | None:
    if not blob or not dim:
        return None
    return np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(-1, dim)


def query_terms(query_vecs: Mapping[str, Any], language: str) -> set[int]:
    """Hashed BM25 terms of the question (stopwords removed, stemmed) in its own language."""
    name = "sparse_ar" if language == "ar" else "sparse_en"
    sparse = query_vecs.get(name)
    return set(sparse.indices) if sparse is not None else set()


@functools.cache
def _analyser(name: str) -> Any:
    from qdrant_edge import Bm25, Bm25Config

    return Bm25(Bm25Config(language="arabic" if name == "sparse_ar" else "english"))


def analysed_terms(text: str, language: str) -> set[int]:
    """The BM25 terms of a text (stopwords out, stemmed) in the analyser of `language`."""
    return set(_analyser("sparse_ar" if language == "ar" else "sparse_en").embed_query(text).indices)


class SentenceReranker:
    """Best sentence + whole chunk cosine, scaled by how much of the question the chunk covers.

    Coverage: the share of the question's BM25 terms the chunk holds. The multiplier only applies
    when question and chunk share a language (across languages there are no shared terms to count).
    """

    name = "sentence-minilm+coverage"

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]:
        q_en = np.asarray(query_vecs["dense"], dtype=np.float32) if query_vecs.get("dense") is not None else None
        q_ml = (np.asarray(query_vecs["dense_ml"], dtype=np.float32)
                if query_vecs.get("dense_ml") is not None else None)
        terms = query_terms(query_vecs, language)
        return [self._one(c, language, q_en, q_ml, terms) for c in candidates]

    def _one(self, cand: Candidate, language: str, q_en: np.ndarray | None, q_ml: np.ndarray | None,
             terms: set[int]) -> float:
        row = cand.vectors
        if row is None:
            return 0.0
        sents = unpack_vectors(row["sentence_vecs"], row["sent_dim"])
        if language == "en" and cand.lang == "en" and q_en is not None:
            base, floor = _minilm_reading(row, sents, q_en), COVERAGE_FLOOR
        elif q_ml is not None:
            ml = unpack_vectors(row["ml_vec"], row["ml_dim"])
            chunk_cos = float(ml[0] @ q_ml) if ml is not None else 0.0
            same_space = sents is not None and len(sents) and sents.shape[1] == q_ml.shape[0]
            floor = ML_COVERAGE_FLOOR
            best = float((sents @ q_ml).max()) if same_space else chunk_cos
            base = ML_SCALE * (ML_SENTENCE_WEIGHT * best + (1 - ML_SENTENCE_WEIGHT) * chunk_cos) + ML_SHIFT
        else:  # an Arabic question with the multilingual model switched off: no comparable vector
            return 0.0
        if terms and (language == cand.lang or language == "mixed"):
            coverage = len(terms & set(json.loads(row["terms"]))) / len(terms)
            base *= floor + (1 - floor) * coverage
        return min(base, 1.0)


class JudgeReranker:
    """The judge's probability that a chunk answers, read on its best sentences (see the module note).

    Reads at most `reads` pairs a question with the English reader: the best sentence of each
    candidate, the candidates in the cheap score's order; a chunk it does not read keeps its cheap
    score scaled under every read one's (UNREAD_SHARE), so it ranks after them in the cheap order."""

    def __init__(self, judge: Any, *, reads: int = JUDGE_READS) -> None:
        self.judge = judge
        self.reads = reads
        self.cheap = SentenceReranker()
        self.name = f"judge:{judge.version}"

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]:
        from models.judge import Candidate as Pair

        cheap = self.cheap.score(query=query, query_vecs=query_vecs, language=language, candidates=candidates)
        q_en = np.asarray(query_vecs["dense"], dtype=np.float32) if query_vecs.get("dense") is not None else None
        q_ml = (np.asarray(query_vecs["dense_ml"], dtype=np.float32)
                if query_vecs.get("dense_ml") is not None else None)
        pairs: list[Pair] = []
        for at, cand in enumerate(candidates):
            row = cand.vectors
            sents = unpack_vectors(row["sentence_vecs"], row["sent_dim"]) if row is not None else None
            english = language == "en" and cand.lang == "en"
            q = q_en if english else q_ml
            if sents is None or not len(sents) or q is None or sents.shape[1] != q.shape[0]:
                continue
            best = int(np.argmax(sents @ q))
            texts = json.loads(row["sentences"]) if row is not None else []
            if best >= len(texts):
                continue
            pairs.append(Pair(passage=at, heading=cand.text.partition("\n")[0], text=texts[best], english=english,
                              vector=None if english else sents[best], prior=cheap[at]))
        read = self.judge.read(query, pairs, budget=self.reads, question_vector=q_ml)
        judged: dict[int, float] = {}
        for pair, p in zip(pairs, read, strict=True):
            if not np.isnan(p):
                judged[pair.passage] = max(judged.get(pair.passage, 0.0), float(p))
        return [judged[at] if at in judged else UNREAD_SHARE * min(max(c, 0.0), 1.0)
                for at, c in enumerate(cheap)]


def _minilm_reading(row: Any, sents: np.ndarray | None, q: np.ndarray) -> float:
    """An English chunk's score for a MiniLM query vector: its best sentence and the whole chunk."""
    chunk = unpack_vectors(row["chunk_vec"], row["dim"])
    chunk_cos = float(chunk[0] @ q) if chunk is not None else 0.0
    same_space = sents is not None and len(sents) and sents.shape[1] == q.shape[0]
    best = float((sents @ q).max()) if same_space else chunk_cos
    return SENTENCE_WEIGHT * best + (1 - SENTENCE_WEIGHT) * chunk_cos


class CrossEncoderReranker:
    def __init__(self, model_dir: Path) -> None:
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(model_dir), device="cpu")
        self.name = f"cross-encoder:{model_dir.name}"

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]:
        if not candidates:
            return []
        # Probabilities so one floor fits all models, decided by the model's head and never by the
        # batch's values (a score must not depend on which other chunks were candidates): a class
        # head gives P(relevant) by softmax, a bare logit gets a sigmoid.
        labels = int(getattr(self.model, "num_labels", 1))
        raw = self.model.predict([(query, c.text) for c in candidates], show_progress_bar=False,
                                 apply_softmax=labels > 1)
        arr = np.asarray(raw, dtype=np.float32).reshape(len(candidates), -1)[:, -1]
        if labels == 1 and type(getattr(self.model, "activation_fn", None)).__name__ == "Identity":
            arr = (1 / (1 + np.exp(-arr))).astype(np.float32)
        return arr.tolist()


def best_sentence(row: Any, query_vec: Sequence[float]) -> tuple[str, float] | None:
    """The sentence of a chunk closest to the question (for extractive answers and traces).

    `query_vec` must come from the model the chunk's sentences were embedded with (MiniLM for
    English chunks, the multilingual model otherwise: see `row["sent_dim"]`).
    """
    sents = unpack_vectors(row["sentence_vecs"], row["sent_dim"])
    q = np.asarray(query_vec, dtype=np.float32)
    if sents is None or not len(sents) or sents.shape[1] != q.shape[0]:
        return None
    sims = sents @ q
    i = int(sims.argmax())
    return json.loads(row["sentences"])[i], float(sims[i])


def build_reranker(model_dir: Path | None, *, judge: Any = None) -> Reranker:
    """A local cross-encoder when one is configured, else the judge (the cheap score without one)."""
    if model_dir:
        return CrossEncoderReranker(model_dir)
    return JudgeReranker(judge) if judge is not None else SentenceReranker()
