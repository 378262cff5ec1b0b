"""The answer judge: which sentences answer a question, and is the question answerable from them?

One port, `Judge`, below the graph and retrieval (a leaf: it imports neither). It reads
(question, section + sentence) pairs with a trained model and returns calibrated probabilities:

- English question and English sentence: the MiniLM cross-encoder (crossencoder.py), fine-tuned
  in this project (train.py);
- any pair with another language on a side: the multilingual head over USE vectors
  (multilingual.py, train_multilingual.py).

Each reader's logit becomes a probability by its own Platt scaling, fitted on its tune pairs by
its training recipe (weights/judge-*.json), so one threshold means the same in English and Arabic:
`answerable_at` in weights/calibration.json, chosen on the tune split's end-to-end turns
(bench/judge_threshold.py).
`verdict` gives what an answer needs: the sentences to quote (the best one, and the other
sentences of its passage that the judge also reads as answering), the answerable probability (the
best sentence's), and a reason. Reading costs ~10–20 ms a pair on one core: callers shortlist with a
cheap prior and give a budget; scores are kept per (question, section, sentence), so the reranker's
reading and the answer's are shared.

The shipped weights (weights/) load offline; their card is weights/README.md.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from models.judge.crossencoder import CrossEncoder
    from models.judge.multilingual import MultilingualHead

WEIGHTS = Path(__file__).resolve().parent / "weights"
CACHE_SIZE = 20_000
# Quoted beside the best sentence: another sentence of its passage the judge reads as answering,
# at least this probability and within SCOPE_MARGIN of the best (calibration.json may set both).
SCOPE_FLOOR = 0.25
SCOPE_MARGIN = 0.35
MAX_QUOTED = 3
# A drafted sentence is supported by a cited chunk when the judge, reading the sentence as the
# question, reads one of the chunk's sentences at least this high (calibration.json `support_at`;
# measured by `python -m bench.claim_support`, see weights/README.md).
SUPPORT_AT = 0.05


@dataclass(frozen=True)
class Candidate:
    """A sentence to judge. `passage`: which passage it comes from (the best one's passage gives the
    scope sentences); `english`: both the sentence and the question are English (else `vector`, the
    sentence's multilingual vector, is needed); `prior`: a cheap score that orders the shortlist."""

    passage: int
    heading: str
    text: str
    english: bool = True
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)
    prior: float = 0.0


@dataclass(frozen=True)
class Verdict:
    probabilities: np.ndarray  # per candidate; NaN where it was not read
    quoted: list[int]  # candidates to quote, best first
    answerable: float  # calibrated probability that the best sentence answers
    threshold: float
    reason: str

    @property
    def ok(self) -> bool:
        return bool(self.quoted) and self.answerable >= self.threshold


class Judge:
    """Thread-safe. Loads its readers on first use (the cross-encoder ~0.5 s)."""

    def __init__(self, weights_dir: Path = WEIGHTS) -> None:
        self.weights_dir = weights_dir
        self._cache: OrderedDict[tuple[str, str, str, bool], float] = OrderedDict()
        self._lock = threading.Lock()
        self._spent_s = 0.0  # seconds spent reading, all callers together (benchmarks report its share)
        calibration = json.loads((weights_dir / "calibration.json").read_text())
        self._platt = {}
        for name in ("en", "ml"):
            card = json.loads((weights_dir / f"judge-{name}.json").read_text())
            self._platt[name] = (float(card["platt"]["a"]), float(card["platt"]["b"]))
        self.answerable_at = float(calibration["answerable_at"])
        self.scope_floor = float(calibration.get("scope_floor", SCOPE_FLOOR))
        self.scope_margin = float(calibration.get("scope_margin", SCOPE_MARGIN))
        self.support_at = float(calibration.get("support_at", SUPPORT_AT))
        self.version = str(calibration.get("version", "judge"))

    @cached_property
    def english(self) -> CrossEncoder:
        from models.judge.crossencoder import CrossEncoder

        return CrossEncoder(self.weights_dir)

    @cached_property
    def multilingual(self) -> MultilingualHead:
        from models.judge.multilingual import MultilingualHead

        return MultilingualHead(self.weights_dir)

    def warm_up(self) -> None:
        self.english.logits("warm up", [("", "warm up")])
        _ = self.multilingual

    def probability(self, reader: str, logit: float) -> float:
        a, b = self._platt[reader]
        return 1.0 / (1.0 + math.exp(-(a * logit + b)))

    def read(self, question: str, candidates: Sequence[Candidate], *, budget: int | None = None,
             question_vector: np.ndarray | None = None) -> np.ndarray:
        """Calibrated probabilities, one per candidate; NaN for those left unread. Candidates already
        read for this question (cached) cost nothing; of the others, the best `budget` by prior are
        read (all when None). A candidate that is not English is read only with `question_vector`
        (the question's multilingual vector) and its own `vector`."""
        out = np.full(len(candidates), np.nan, dtype=np.float64)
        fresh: list[int] = []
        with self._lock:
            for i, c in enumerate(candidates):
                key = (question, c.heading, c.text, c.english)
                if key in self._cache:
                    self._cache.move_to_end(key)
                    out[i] = self._cache[key]
                elif c.english or (c.vector is not None and question_vector is not None):
                    fresh.append(i)
        started = time.perf_counter()
        fresh = list(dict.fromkeys(fresh))
        english = sorted((i for i in fresh if candidates[i].english), key=lambda i: -candidates[i].prior)
        if budget is not None:
            english = english[:budget]
        other = [i for i in fresh if not candidates[i].english]
        if english:
            unique = list(dict.fromkeys((candidates[i].heading, candidates[i].text) for i in english))
            logits = dict(zip(unique, self.english.logits(question, unique), strict=True))
            for i in english:
                out[i] = self.probability("en", float(logits[(candidates[i].heading, candidates[i].text)]))
        if other and question_vector is not None:
            vectors = np.stack([np.asarray(candidates[i].vector, dtype=np.float32) for i in other])
            for i, logit in zip(other, self.multilingual.logits(question_vector, vectors), strict=True):
                out[i] = self.probability("ml", float(logit))
        with self._lock:
            for i in [*english, *other]:
                if not math.isnan(out[i]):
                    c = candidates[i]
                    self._cache[(question, c.heading, c.text, c.english)] = float(out[i])
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
            self._spent_s += time.perf_counter() - started
        return out

    @property
    def spent_ms(self) -> float:
        """Milliseconds spent reading since the judge was loaded (a turn's share: the difference)."""
        with self._lock:
            return self._spent_s * 1000

    def verdict(self, question: str, candidates: Sequence[Candidate], *, budget: int | None = None,
                question_vector: np.ndarray | None = None, max_quoted: int = MAX_QUOTED) -> Verdict:
        """Read the candidates (see `read`) and decide: quote the best sentence, with the other
        sentences of its passage the judge reads as answering too, in document order after it."""
        p = self.read(question, candidates, budget=budget, question_vector=question_vector)
        if not len(candidates) or np.all(np.isnan(p)):
            return Verdict(p, [], 0.0, self.answerable_at, "no sentence to judge")
        best = int(np.nanargmax(p))
        top = float(p[best])
        if top < self.answerable_at:
            return Verdict(p, [best], top, self.answerable_at,
                           f"no sentence reads as an answer (best {top:.2f} < {self.answerable_at:.2f})")
        scope = [i for i in np.argsort(-np.nan_to_num(p, nan=-1.0)) if int(i) != best
                 and candidates[int(i)].passage == candidates[best].passage
                 and p[i] >= max(self.scope_floor, top - self.scope_margin)]
        quoted = [best, *(int(i) for i in scope[: max_quoted - 1])]
        return Verdict(p, quoted, top, self.answerable_at, f"answered (best {top:.2f})")


_shared: Judge | None = None
_shared_lock = threading.Lock()


def shared_judge() -> Judge:
    """One judge per process (its readers and cache are shared by every caller)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Judge()
        return _shared
