"""Rerankers: trim the fused candidates to the few that enter the prompt, with a calibrated score.

Offline default, `SentenceReranker`: an answer to a policy question is usually one sentence, so a
chunk is scored by its best-matching sentence (MiniLM cosine, vectors computed at ingestion)
blended with the whole-chunk cosine for context. No model call at query time beyond the query
embedding the dense leg already made, so it costs a few milliseconds. Arabic and mixed questions
are scored with the multilingual chunk vector (MiniLM cannot compare across languages).

With `CAIRN_RERANK_MODEL` pointing at a local sentence-transformers CrossEncoder directory,
`CrossEncoderReranker` scores (question, chunk) pairs with it instead (sigmoid scores).
"""

from __future__ import annotations

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


class SentenceReranker:
    """Best sentence + whole chunk cosine, scaled by how much of the question the chunk covers.

    Coverage matters for the questions that must be refused: "wholesale returns" lands close to
    the retail returns policy in embedding space, but "wholesale" occurs nowhere in it. The
    multiplier only applies when question and chunk share a language (across languages there
    are no shared terms to count).
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


def build_reranker(model_dir: Path | None) -> Reranker:
    return CrossEncoderReranker(model_dir) if model_dir else SentenceReranker()
