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

SENTENCE_WEIGHT = 0.7


@dataclass(frozen=True)
class Candidate:
    point_id: str
    chunk_id: str
    text: str
    vectors: Any | None  # a chunk_vectors row, or None when missing


class Reranker(Protocol):
    name: str

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]: ...


def _unpack(blob: bytes | None, dim: int) -> np.ndarray | None:
    if not blob or not dim:
        return None
    return np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(-1, dim)


class SentenceReranker:
    name = "sentence-minilm"

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]:
        use_ml = language != "en" and query_vecs.get("dense_ml") is not None
        q = np.asarray(query_vecs["dense_ml" if use_ml else "dense"], dtype=np.float32)
        scores: list[float] = []
        for cand in candidates:
            row = cand.vectors
            if row is None:
                scores.append(0.0)
                continue
            if use_ml:
                ml = _unpack(row["ml_vec"], row["ml_dim"])
                scores.append(float(ml[0] @ q) if ml is not None else 0.0)
                continue
            chunk = _unpack(row["chunk_vec"], row["dim"])
            sents = _unpack(row["sentence_vecs"], row["dim"])
            chunk_cos = float(chunk[0] @ q) if chunk is not None else 0.0
            best = float((sents @ q).max()) if sents is not None and len(sents) else chunk_cos
            scores.append(SENTENCE_WEIGHT * best + (1 - SENTENCE_WEIGHT) * chunk_cos)
        return scores


class CrossEncoderReranker:
    def __init__(self, model_dir: Path) -> None:
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(model_dir), device="cpu")
        self.name = f"cross-encoder:{model_dir.name}"

    def score(self, *, query: str, query_vecs: Mapping[str, Any], language: str,
              candidates: Sequence[Candidate]) -> list[float]:
        if not candidates:
            return []
        raw = self.model.predict([(query, c.text) for c in candidates], show_progress_bar=False)
        arr = np.asarray(raw, dtype=np.float32).reshape(len(candidates), -1)[:, -1]
        if arr.min() < 0 or arr.max() > 1:  # logits → probabilities so one floor fits all models
            arr = 1 / (1 + np.exp(-arr))
        return arr.tolist()


def best_sentence(row: Any, query_vec: Sequence[float]) -> tuple[str, float] | None:
    """The sentence of a chunk closest to the question (for extractive answers and traces)."""
    sents = _unpack(row["sentence_vecs"], row["dim"])
    if sents is None or not len(sents):
        return None
    sims = sents @ np.asarray(query_vec, dtype=np.float32)
    i = int(sims.argmax())
    return json.loads(row["sentences"])[i], float(sims[i])


def build_reranker(model_dir: Path | None) -> Reranker:
    return CrossEncoderReranker(model_dir) if model_dir else SentenceReranker()
