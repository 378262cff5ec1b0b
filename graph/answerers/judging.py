"""The answer judge (models/judge) as the answerers use it: the pairs it reads, and, for the LLM
answerer, which passages are evidence and whether a drafted sentence is supported.

- `judge_candidates`: a question (or a drafted sentence) and passage sentences as the judge's
  `Candidate`s. An English question and an English passage are read by its cross-encoder as
  (question, "section | sentence"); any other pair by its multilingual head, which needs the
  multilingual vectors of both, encoded here. Both answerers build their pairs this way, so the
  judge's cache (per question, section and sentence) is shared between them.
- `screen_evidence`: the passages a model is sent. A passage none of whose sentences the judge
  reads at or above `Judge.scope_floor` is left out (see EVIDENCE_READS for what is read).
- `ClaimSupport`: the validator's support check (graph/validate.py `SupportCheck`): a factual
  sentence of a draft, its citations taken out, is read as the "question" against the sentences of
  the chunks it cites; supported when the best reads at or above `Judge.support_at`. The judge was
  trained on questions, not claims: the card (models/judge/weights/README.md) has what it measured
  on claims (`python -m bench.claim_support`) and why the threshold is where it is.

Reading costs ~10–20 ms a pair on one core, so each caller reads a shortlist by a cheap prior: the
rarity-weighted share of the question's (or sentence's) words a sentence and its section have, the
answerer's own lexical feature (graph/answerers/features.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from graph.answerers import features
from models.judge import Candidate, Judge
from retrieval.language import detect_language

# Sentences of each passage the evidence screen reads that the gate's reading has not: of four
# passages, twelve pairs at most (~0.1–0.2 s on one busy core), and pairs already read cost nothing.
EVIDENCE_READS = 3
# Sentences of each cited chunk read per factual sentence of a draft (a draft has 1–4 of them).
SUPPORT_READS = 4


class Judged(Protocol):
    """What the judge needs of a passage: its section path and language."""

    @property
    def heading(self) -> str: ...

    @property
    def lang(self) -> str: ...


def judge_candidates(embedder: Any, question: str, language: str, passages: Sequence[Judged],
                     sentences: Sequence[tuple[int, str]]) -> tuple[list[Candidate], np.ndarray | None]:
    """The judge's candidates for `sentences` ((passage index, sentence as scored) pairs, best first:
    the order is the prior a budget keeps) and the question's multilingual vector, None where every
    pair is English. Blocking (it may encode): call it in a thread from async code."""
    english = [language == "en" and passages[p].lang == "en" for p, _ in sentences]
    question_vector, vectors = None, {}
    if not all(english):
        texts = [question, *(text for (_, text), e in zip(sentences, english, strict=True) if not e)]
        encoded = np.asarray(embedder.encode_multilingual(texts), dtype=np.float32)
        question_vector, vectors = encoded[0], dict(zip(texts[1:], encoded[1:], strict=True))
    candidates = [Candidate(passage=p, heading=passages[p].heading, text=text, english=e,
                            vector=None if e else vectors[text], prior=-rank)
                  for rank, ((p, text), e) in enumerate(zip(sentences, english, strict=True))]
    return candidates, question_vector


def read_sentences(judge: Judge, embedder: Any, question: str, language: str, passages: Sequence[Judged],
                   sentences: Sequence[tuple[int, str]]) -> np.ndarray:
    """The judge's probability for each of `sentences` (0 where it could not read one). Blocking."""
    if not sentences:
        return np.zeros(0, dtype=np.float64)
    candidates, question_vector = judge_candidates(embedder, question, language, passages, sentences)
    return np.nan_to_num(judge.read(question, candidates, question_vector=question_vector), nan=0.0)


def shortlist(anchor: str, passages: Sequence[Judged], sentences: Sequence[Sequence[str]],
              per_passage: int) -> list[tuple[int, str]]:
    """The `per_passage` sentences of each passage (`sentences[i]`: passage i's, as scored) with the
    best cheap prior for `anchor`: the rarity-weighted share of its words the sentence (its section for
    half) has. Best first, then by passage; ties keep document order."""
    anchor_terms = features.with_places(features.question_terms(anchor), anchor, widen=True)
    terms = [[features.with_places(features.tokens(s), s) for s in mine] for mine in sentences]
    weights = features.term_weights(anchor_terms, [t for mine in terms for t in mine])
    ranked: list[tuple[float, int, int]] = []
    for p, (mine, mine_terms) in enumerate(zip(sentences, terms, strict=True)):
        heading = features.tokens(passages[p].heading)
        prior = [features.coverage(weights, t, heading) for t in mine_terms]
        order = sorted(range(len(mine)), key=lambda i: -prior[i])[:per_passage]
        ranked += [(prior[i], p, i) for i in order]
    ranked.sort(key=lambda r: -r[0])
    return [(p, sentences[p][i]) for _, p, i in ranked]


@dataclass(frozen=True)
class EvidenceScreen:
    """Which passages the judge reads as evidence for a question. `best`: chunk id → the best
    probability read among its sentences (0 for a passage with no sentence to read)."""

    kept: list[Any]
    dropped: list[Any]
    best: dict[str, float]
    floor: float

    def trace(self) -> dict[str, Any]:
        def rows(passages: Sequence[Any]) -> list[dict[str, Any]]:
            return [{"chunk_id": p.chunk_id, "best": round(self.best[p.chunk_id], 4)} for p in passages]
        return {"floor": self.floor, "kept": rows(self.kept), "dropped": rows(self.dropped)}


async def screen_evidence(judge: Judge, embedder: Any, question: str, passages: Sequence[Any], *,
                          known: Mapping[str, float] | None = None) -> EvidenceScreen:
    """Keep the passages with a sentence the judge reads at or above its scope floor. `known`: chunk
    id → a probability the gate has already read for one of its sentences (a passage known to reach
    the floor is not read again).

    Why the scope floor (0.25 shipped) and not the answer threshold (0.55): the gate has already
    found the question answerable from the best passage; the others are there for what an answer
    needs beside it (an exception, the population a rule is for), which alone does not answer. The
    scope floor is where the judge reads a sentence as close enough to the answer to quote beside the
    best one; a passage with no such sentence has nothing an answer would quote, and only tempts a
    model to answer from a neighbouring rule."""
    from graph.answerers.extractive import answer_candidates  # the answerer's own reading of a chunk

    floor = judge.scope_floor
    best = {p.chunk_id: float((known or {}).get(p.chunk_id, 0.0)) for p in passages}
    unread = [p for p in passages if best[p.chunk_id] < floor]
    if unread:
        sentences = [answer_candidates(p.text) for p in unread]
        picked = shortlist(question, unread, sentences, EVIDENCE_READS)
        p_read = await asyncio.to_thread(read_sentences, judge, embedder, question, detect_language(question),
                                         unread, picked)
        for (i, _), probability in zip(picked, p_read, strict=True):
            chunk_id = unread[i].chunk_id
            best[chunk_id] = max(best[chunk_id], float(probability))
    kept = [p for p in passages if best[p.chunk_id] >= floor]
    dropped = [p for p in passages if best[p.chunk_id] < floor]
    return EvidenceScreen(kept, dropped, best, floor)


class ClaimSupport:
    """A `SupportCheck` (graph/validate.py) over the passages sent this turn: (a drafted sentence
    without its citations, the sent chunk ids it cites) → (supported, the best probability read).
    Blocking: the validate node runs the whole validation in a thread."""

    def __init__(self, judge: Judge, embedder: Any, passages: Sequence[Any]) -> None:
        self.judge = judge
        self.embedder = embedder
        self.passages = {p.chunk_id: p for p in passages}
        self.threshold = judge.support_at

    def __call__(self, sentence: str, chunk_ids: Sequence[str]) -> tuple[bool, float]:
        from graph.answerers.extractive import answer_candidates

        cited = [self.passages[c] for c in dict.fromkeys(chunk_ids) if c in self.passages]
        picked = shortlist(sentence, cited, [answer_candidates(p.text) for p in cited], SUPPORT_READS)
        p = read_sentences(self.judge, self.embedder, sentence, detect_language(sentence), cited, picked)
        best = float(np.max(p)) if len(p) else 0.0
        return best >= self.threshold, best
