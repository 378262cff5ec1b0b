"""The judge's reader across languages: a small head over multilingual USE vectors.

MiniLM has no Arabic, so a pair with an Arabic side (an Arabic question over English or Arabic
sentences) is read from the multilingual Universal Sentence Encoder vectors the index already
keeps (normalised, 512-d): the head sees the element-wise product and difference of question and
sentence and their cosine, through one hidden layer, and gives one logit. Trained by
models/judge/train_multilingual.py on XQuAD (Arabic question, English paragraph), ARCD (Arabic
question, Arabic paragraph) and Arabic handbook questions, each split by article or page.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FORMAT = "cairn-judge-ml/1"
WEIGHTS = Path(__file__).resolve().parent / "weights"


def features(question: np.ndarray, sentences: np.ndarray) -> np.ndarray:
    """(n, 1025) inputs of the head: q·s element-wise, |q − s|, cosine. Vectors normalised."""
    q = np.asarray(question, dtype=np.float32).reshape(1, -1)
    s = np.asarray(sentences, dtype=np.float32).reshape(-1, q.shape[1])
    cos = (s @ q[0]).reshape(-1, 1)
    return np.concatenate([s * q, np.abs(s - q), cos], axis=1).astype(np.float32)


class MultilingualHead:
    def __init__(self, weights_dir: Path = WEIGHTS) -> None:
        card = json.loads((weights_dir / "judge-ml.json").read_text())
        if card.get("format") != FORMAT:
            raise ValueError(f"{weights_dir}: judge weights of format {card.get('format')!r}, expected {FORMAT!r}")
        with np.load(weights_dir / "judge-ml.npz") as w:
            self._w1 = np.ascontiguousarray(w["w1"], dtype=np.float32)  # (in, hidden)
            self._b1 = w["b1"].astype(np.float32)
            self._w2 = w["w2"].astype(np.float32).reshape(-1)
            self._b2 = np.float32(w["b2"].reshape(-1)[0])
        self.card = card

    def logits(self, question: np.ndarray, sentences: np.ndarray) -> np.ndarray:
        if not len(sentences):
            return np.zeros(0, np.float32)
        hidden = np.maximum(features(question, sentences) @ self._w1 + self._b1, 0)
        return hidden @ self._w2 + self._b2
