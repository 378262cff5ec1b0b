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

import functools
import json
import re
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
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
# A question that matches some chunk on every term but one, where that one term occurs in none of
# the same-language candidates: the BM25 legs put any chunk containing a rare term near the top,
# so the term is, in practice, absent from what the caller may read, and it is what makes the
# question different ("returns policy for wholesale customers" over a retail-only returns
# policy). Every score is scaled (the order is kept). Only short questions qualify, where the one
# term is a large share of the question: paraphrases ("how fast may forklifts drive" for a speed
# limit, "the meal allowance when I travel overnight") differ in more or smaller ways.
UNKNOWN_TERM_FACTOR = 0.5
UNKNOWN_TERM_MAX_KNOWN = 3
# …unless the question words behind the unknown term are one or two typing errors away from a
# word the candidates contain ("susbtance", "charecterized", "Raouliii"): a misspelt question asks
# about what is there. One edit for words under this length, two from it on.
TYPO_TWO_EDITS_FROM = 8


# Words of a chat message that say nothing about the policy asked about ("hey quick q", "pls",
# "lol", "how much do i get"), and Slack abbreviations of words the documents write in full
# ("next wk", "per yr"). Counted as question terms, they lower the share of the question a chunk
# covers, and a colloquial question fell under the floor on the very chunk that answers it.
# (Words whose stem is a word of policy text are left out: "basically" is "basic", "really" "real".)
CHAT_FILLER = ("hey hi hello yo thanks thx ty pls plz please quick q qq lol haha btw fyi curious anyone anybody ok "
               "okay yeah yep um uh hmm gonna wanna gotta kinda just like thats whats im ive idk tbh imo much many "
               "get got")
ABBREVIATIONS = {"wk": "week", "wks": "weeks", "yr": "year", "yrs": "years", "mo": "month", "mos": "months",
                 "hrs": "hours", "mins": "minutes", "b4": "before", "tmrw": "tomorrow", "abt": "about",
                 "info": "information", "docs": "documents", "mgr": "manager", "approx": "approximately"}


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


def content_terms(terms: set[int], language: str) -> set[int]:
    """The question's terms less chat filler, with abbreviations read as the words they stand for
    (English; other languages as they are)."""
    if language != "en":
        return terms
    filler, abbreviations = _chat_terms()
    return {abbreviations.get(t, t) for t in terms if t not in filler}


@functools.cache
def _chat_terms() -> tuple[frozenset[int], dict[int, int]]:
    analyser = _analyser("sparse_en")

    def ids(word: str) -> list[int]:
        return list(analyser.embed_query(word).indices)

    filler = {t for w in CHAT_FILLER.split() for t in ids(w)}
    abbreviations: dict[int, int] = {}
    for short, full in ABBREVIATIONS.items():
        if ids(full):
            abbreviations.update(zip(ids(short), ids(full), strict=True))
        else:  # the word it stands for is a stopword ("b4", "abt")
            filler.update(ids(short))
    return frozenset(filler), abbreviations


def unknown_terms(terms: set[int], language: str, candidates: Sequence[Candidate]) -> set[int]:
    """Question terms found in no candidate of the question's own language (empty if none share it)."""
    same = [c for c in candidates if c.vectors is not None and (c.lang == language or language == "mixed")]
    if not terms or not same:
        return set()
    seen: set[int] = set()
    for cand in same:
        if cand.vectors is not None:
            seen.update(json.loads(cand.vectors["terms"]))
    return terms - seen


_WORD = re.compile(r"\w+")


def misspelt_only(query: str, language: str, unknown: set[int], candidates: Sequence[Candidate]) -> bool:
    """Whether the question words behind the unknown terms are all near misses of candidate words."""
    analyser = _analyser("sparse_ar" if language == "ar" else "sparse_en")
    words = [w for w in dict.fromkeys(_WORD.findall(query.lower()))
             if set(analyser.embed_query(w).indices) & unknown]
    same = [c for c in candidates if c.lang == language or language == "mixed"]
    vocab = {w for c in same for w in _WORD.findall(c.text.lower())}
    return bool(words) and all(near_miss(w, vocab) for w in words)


@functools.cache
def _analyser(name: str) -> Any:
    from qdrant_edge import Bm25, Bm25Config

    return Bm25(Bm25Config(language="arabic" if name == "sparse_ar" else "english"))


def near_miss(word: str, vocab: AbstractSet[str]) -> bool:
    """`word` is a typing error or two away from a word of `vocab` (see TYPO_TWO_EDITS_FROM).

    Two cheap bounds run before the edit distance: the lengths, and the letters the two words do
    not share (an edit changes at most two of them). A large vocabulary (a tenant's every word)
    is indexed once by length and letter set, so only the words within both
    bounds are compared letter by letter."""
    edits = 2 if len(word) >= TYPO_TWO_EDITS_FROM else 1
    if len(vocab) >= INDEXED_VOCABULARY and isinstance(vocab, frozenset):
        return any(_within(word, v, edits) for v in _LetterIndex.of(vocab).candidates(word, edits))
    letters = set(word)
    return any(abs(len(v) - len(word)) <= edits and len(letters.symmetric_difference(v)) <= 2 * edits
               and _within(word, v, edits) for v in vocab)


INDEXED_VOCABULARY = 2000  # words; a smaller vocabulary is scanned as it is


class _LetterIndex:
    """A vocabulary by word length, with each word's letters as a 64-bit mask (a-z and 0-9 one bit
    each, any other letter one of the remaining 28): letters in one word's mask and not the other's
    are letters the words do not share, so the mask bound never drops a true near miss."""

    def __init__(self, vocab: AbstractSet[str]) -> None:
        by_length: dict[int, list[str]] = {}
        for v in vocab:
            by_length.setdefault(len(v), []).append(v)
        self.words = {n: sorted(ws) for n, ws in by_length.items()}
        self.masks = {n: np.array([_mask(w) for w in ws], dtype=np.uint64) for n, ws in self.words.items()}

    @staticmethod
    @functools.lru_cache(maxsize=8)
    def of(vocab: frozenset[str]) -> _LetterIndex:
        return _LetterIndex(vocab)

    def candidates(self, word: str, edits: int) -> list[str]:
        mask = np.uint64(_mask(word))
        out: list[str] = []
        for n in range(len(word) - edits, len(word) + edits + 1):
            if n in self.masks:
                close = np.flatnonzero(np.bitwise_count(self.masks[n] ^ mask) <= 2 * edits)
                out.extend(self.words[n][i] for i in close)
        return out


def _mask(word: str) -> int:
    bits = 0
    for ch in set(word):
        if "a" <= ch <= "z":
            bits |= 1 << (ord(ch) - 97)
        elif "0" <= ch <= "9":
            bits |= 1 << (ord(ch) - 48 + 26)
        else:
            bits |= 1 << (36 + ord(ch) % 28)
    return bits


def _within(a: str, b: str, edits: int) -> bool:
    """Levenshtein distance of a and b is at most `edits` (row by row, stopping once every cell exceeds it)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > edits:
            return False
        prev = cur
    return prev[-1] <= edits


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
        # Coverage counts what the question asks about; the unknown-term rule below keeps every
        # term (its "short question" is counted in the terms it was tuned on).
        scores = [self._one(c, language, q_en, q_ml, content_terms(terms, language))
                  for c in candidates]
        unknown = unknown_terms(terms, language, candidates)
        known = terms - unknown
        if len(unknown) != 1 or not 2 <= len(known) <= UNKNOWN_TERM_MAX_KNOWN:
            return scores
        if not any(c.vectors is not None and known <= set(json.loads(c.vectors["terms"])) for c in candidates):
            return scores
        if misspelt_only(query, language, unknown, candidates):
            return scores
        return [s * UNKNOWN_TERM_FACTOR for s in scores]

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
