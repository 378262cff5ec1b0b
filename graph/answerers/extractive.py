"""The offline answerer: quotes the policy sentences the judge reads as answering, each cited.

The passages at or above the score floor (at most MAX_PASSAGES of each organisation) are read as
candidate sentences (graph/answerers/candidates.py); the judge (models/judge) scores each against the
question and decides: the best sentence, with the other sentences of its passage it also reads as
answering, or no answer (`below_score_floor`, with the judge's reason). The judge reads at most
READS new sentences a turn, the best by a cheap prior (the MiniLM cosine of the standalone vectors
the server prepares, `prepare_answer_vectors`, else the pooled ones stored at ingestion, plus the
share of the question's terms the sentence holds); a pair with
an Arabic side is read from multilingual vectors, all of them (that reader costs microseconds).

Where the passages are several organisations' (a tenant holding several companies' handbooks, and a
question that names none of them: graph/tenant_names.py), each organisation whose own best sentence
the judge reads as answering gets its sentences, each line led by the organisation's name
("GitLab: According to …"): the asker's company may be any of them.

Each quoted sentence becomes one line, `According to <title> (<section>): “<sentence>” [chunk_id]`.
Only the connective phrase is Cairn's; an Arabic question gets an Arabic connective, with the
sentence quoted in the passage's own language. Every line carries a citation, so the draft passes
validation by construction (it is still validated).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from graph.answerers import Answerer, AnswerRequest, Draft, draft_message
from graph.answerers.candidates import (
    CandidateSentence,
    StoredVectors,
    passage_candidates,
    vectors_by_text,
)
from graph.tenant_names import by_organisation
from graph.validate import validate_answer
from models.judge import Candidate, Judge, Verdict
from retrieval.embed import DENSE, DENSE_ML, DENSE_SIZES
from retrieval.language import detect_language
from retrieval.search import Passage

MAX_PASSAGES = 3
MAX_SENTENCES = 3
# New (question, sentence) pairs the English reader reads per turn, besides those the reranker read.
READS = 10
# The English reader's shortlist is ordered by the cosine plus this much of the share of the question's
# terms the sentence (with its section) holds: a sentence that names what was asked is read first.
TERM_PRIOR = 0.5
ORGANISATION_SENTENCES = 2  # sentences quoted for each organisation
MAX_ORGANISATIONS = 3
RECENT_CHOICES = 32  # choices of sentences kept per answerer: the gate's and the answer's are one


@dataclass(frozen=True)
class Choice:
    passages: list[Passage]  # read: at or above the floor, at most max_passages of each organisation
    sentences: list[CandidateSentence]
    probabilities: np.ndarray  # the judge's, one per sentence (NaN: not read)
    picks: list[CandidateSentence]  # the ones to quote, empty when the judge finds no answer
    answerable: float
    threshold: float
    reason: str
    multilingual: bool
    scope_floor: float = 0.5  # a passage with a sentence read at least this likely to answer is "answering"

    @property
    def ok(self) -> bool:
        return bool(self.picks)

    def trace(self) -> dict[str, Any]:
        read = [(i, float(p)) for i, p in enumerate(self.probabilities) if not np.isnan(p)]
        read.sort(key=lambda x: -x[1])
        best: dict[str, float] = {}
        for i, p in read:
            chunk = self.passages[self.sentences[i].passage].chunk_id
            best[chunk] = max(best.get(chunk, 0.0), p)
        answering = [c for c, p in best.items() if p >= self.scope_floor]
        return {"answerable": round(self.answerable, 4), "threshold": self.threshold, "reason": self.reason,
                "read": len(read), "of": len(self.sentences), "answering": answering,
                "top": [{"chunk_id": self.passages[self.sentences[i].passage].chunk_id,
                         "index": self.sentences[i].index, "p": round(p, 4),
                         "sentence": self.sentences[i].scored_text[:160]} for i, p in read[:5]]}


class ExtractiveAnswerer:
    name = "extractive"
    model: str | None = None
    prompt_version: str | None = "extractive-judge-v1"
    fallback: Answerer | None = None

    def __init__(self, *, embedder: Any, judge: Judge, stored_vectors: StoredVectors | None = None,
                 prepared_vectors: StoredVectors | None = None, max_passages: int = MAX_PASSAGES,
                 max_sentences: int = MAX_SENTENCES, reads: int = READS) -> None:
        self.embedder = embedder
        self.judge = judge
        self.stored_vectors = stored_vectors
        self.prepared_vectors = prepared_vectors
        self.max_passages = max_passages
        self.max_sentences = max_sentences
        self.reads = reads
        self._chosen: OrderedDict[tuple[object, ...], Choice] = OrderedDict()

    async def respond(self, request: AnswerRequest) -> Draft:
        choice = await self.choose(request.question, request.language, request.passages, request.min_score)
        if not choice.ok:
            return Draft(draft_message("", answerer=self.name, error=choice.reason),
                         {"error": choice.reason, "judge": choice.trace()})
        passages = choice.passages
        quoted = [(passages[s.passage], _HTML_BREAK.sub("; ", s.text)) for s in choice.picks]
        lines = [_line(passage, text, request.language) for passage, text in quoted]
        allowed = [p.chunk_id for p in passages]
        if not validate_answer("\n".join(lines), allowed).ok:
            # A title or section name that reads as a sentence of its own: drop the connective.
            lines = [f"“{text}” [{passage.chunk_id}]" for passage, text in quoted]
        if len({passage.organisation for passage, _ in quoted}) > 1:
            lines = [f"{passage.organisation}: {line}" if passage.organisation else line
                     for (passage, _), line in zip(quoted, lines, strict=True)]
        info = {"encoder": "multilingual" if choice.multilingual else "minilm", "judge": choice.trace(),
                "sentences": [{"chunk_id": passages[s.passage].chunk_id, "index": s.index,
                               "score": round(float(choice.probabilities[choice.sentences.index(s)]), 4)}
                              for s in choice.picks]}
        return Draft(draft_message("\n".join(lines), answerer=self.name), info)

    async def choose(self, question: str, language: str, candidates: Sequence[Passage],
                     min_score: float | None) -> Choice:
        """The passages read, their candidate sentences, the judge's reading and the ones to quote
        (kept for the last few turns: the gate asks first, then the answer quotes the same)."""
        key = (question, language, min_score, *candidates)
        if key in self._chosen:
            self._chosen.move_to_end(key)
            return self._chosen[key]
        choice = self._chosen[key] = await self._choose(question, language, candidates, min_score)
        while len(self._chosen) > RECENT_CHOICES:
            self._chosen.popitem(last=False)
        return choice

    async def judge_passages(self, question: str, passages: Sequence[Passage],
                             min_score: float | None) -> dict[str, Any]:
        """The gate's question (graph/nodes/tools.py): does any sentence of these passages answer?
        The judge's reading, as the trace keeps it, with `ok`."""
        choice = await self.choose(question, detect_language(question), passages, min_score)
        return {"ok": choice.ok, **choice.trace()}

    async def closest_sentence(self, question: str, passages: Sequence[Passage]) -> str | None:
        """The sentence the judge reads as the best answer, or None (what a question in another
        language than the passages is checked for conflicts against: graph/nodes/tools.py)."""
        choice = await self.choose(question, detect_language(question), passages, None)
        read = choice.probabilities
        if not len(read) or np.all(np.isnan(read)):
            return None
        return choice.sentences[int(np.nanargmax(read))].scored_text

    async def _choose(self, question: str, language: str, candidates: Sequence[Passage],
                      min_score: float | None) -> Choice:
        floor = min_score if min_score is not None else float("-inf")
        groups = [group[: self.max_passages] for group in by_organisation(p for p in candidates if p.score >= floor)]
        passages = [p for group in groups for p in group]
        sentences = [s for i, p in enumerate(passages) for s in passage_candidates(i, p)]
        multilingual = language != "en" or any(p.lang != "en" for p in passages)
        if not sentences:
            return Choice(passages, sentences, np.zeros(0), [], 0.0, self.judge.answerable_at,
                          "no sentence to judge", multilingual, self.judge.scope_floor)
        judged = await self._candidates(question, language, sentences, passages)
        q_ml = np.asarray(self.embedder.encode_multilingual([question]), dtype=np.float32)[0] \
            if multilingual else None
        verdicts: list[tuple[Verdict, list[int]]] = []
        for mine in _by_organisation(sentences, passages):
            verdict = await asyncio.to_thread(self.judge.verdict, question, [judged[i] for i in mine],
                                              budget=self.reads, question_vector=q_ml,
                                              max_quoted=self.max_sentences)
            verdicts.append((verdict, mine))
        probabilities = np.full(len(sentences), np.nan)
        for verdict, mine in verdicts:
            probabilities[mine] = verdict.probabilities
        best, _ = max(verdicts, key=lambda v: v[0].answerable)
        answering = sorted((v for v in verdicts if v[0].ok), key=lambda v: -v[0].answerable)[:MAX_ORGANISATIONS]
        each = self.max_sentences if len(answering) == 1 else ORGANISATION_SENTENCES
        picks = [sentences[mine[i]] for verdict, mine in answering
                 for i in sorted(verdict.quoted[:each], key=lambda i: (judged[mine[i]].passage, mine[i]))]
        return Choice(passages, sentences, probabilities, picks, best.answerable, best.threshold, best.reason,
                      multilingual, self.judge.scope_floor)

    async def _candidates(self, question: str, language: str, sentences: Sequence[CandidateSentence],
                          passages: Sequence[Passage]) -> list[Candidate]:
        """The sentences as the judge takes them: section, text, which reader, and the prior that
        orders the English reader's shortlist (or the multilingual vector the other reader needs)."""
        english = [language == "en" and passages[s.passage].lang == "en" for s in sentences]
        priors = np.array([p.score for p in passages])[[s.passage for s in sentences]] - 1.0
        if any(english):
            vecs = {**await self._stored(passages, DENSE_SIZES[DENSE]), **await self._prepared(passages)}
            q = np.asarray(self.embedder.encode_sentences([question]), dtype=np.float32)[0]  # cached by the search
            asked = self.embedder.terms(question)
            for i, s in enumerate(sentences):
                if not english[i]:
                    continue
                if s.scored_text in vecs:
                    priors[i] = float(vecs[s.scored_text] @ q)
                if asked:  # the share of the question's BM25 terms (stemmed, stopwords out) the sentence holds
                    held = self.embedder.terms(f"{passages[s.passage].heading} {s.scored_text}")
                    priors[i] += TERM_PRIOR * len(asked & held) / len(asked)
        ml: dict[str, np.ndarray] = {}
        if not all(english):
            ml = {**await self._stored(passages, DENSE_SIZES[DENSE_ML]),
                  **await self._prepared(passages, multilingual=True)}
            missing = list(dict.fromkeys(s.scored_text for s, en in zip(sentences, english, strict=True)
                                         if not en and s.scored_text not in ml))
            if missing:
                fresh = await asyncio.to_thread(self.embedder.encode_multilingual, missing)
                ml.update(zip(missing, np.asarray(fresh, dtype=np.float32), strict=True))
        return [Candidate(passage=s.passage, heading=passages[s.passage].heading, text=s.scored_text,
                          english=english[i], vector=None if english[i] else ml.get(s.scored_text),
                          prior=float(priors[i]))
                for i, s in enumerate(sentences)]

    async def _stored(self, passages: Sequence[Passage], dim: int) -> dict[str, np.ndarray]:
        """Sentence vectors stored at ingestion, keyed by sentence text, if in the space of `dim`
        (multilingual: USE; English: MiniLM pooled inside the chunk)."""
        return await vectors_by_text(self.stored_vectors, passages, texts="sentences", vecs="sentence_vecs",
                                     dim="sent_dim", want=dim)

    async def _prepared(self, passages: Sequence[Passage], *, multilingual: bool = False) -> dict[str, np.ndarray]:
        """Standalone vectors of these passages' candidate sentences, where the server prepared them."""
        if multilingual:
            return await vectors_by_text(self.prepared_vectors, passages, texts="texts", vecs="ml_vecs",
                                         dim="ml_dim", want=DENSE_SIZES[DENSE_ML])
        return await vectors_by_text(self.prepared_vectors, passages, texts="texts", vecs="vecs", dim="dim",
                                     want=DENSE_SIZES[DENSE])


def _by_organisation(sentences: Sequence[CandidateSentence], passages: Sequence[Passage]) -> list[list[int]]:
    """The indices of each organisation's sentences, in the order its passages come (one group where
    the tenant has no organisations)."""
    groups: dict[str | None, list[int]] = {}
    for i, s in enumerate(sentences):
        groups.setdefault(passages[s.passage].organisation, []).append(i)
    return list(groups.values())


# A line break written as HTML inside a table cell ("66.67% (STD)<br>After 12 weeks: …") is shown as
# a separator, not as markup.
_HTML_BREAK = re.compile(r"\s*<br\s*/?>\s*", re.IGNORECASE)


def _line(passage: Passage, sentence: str, language: str) -> str:
    section = passage.heading
    if section.startswith(passage.title + " > "):
        section = section[len(passage.title) + 3:]
    where = f" ({section})" if section and section != passage.title else ""
    if language == "ar":
        return f"وفقًا لـ«{passage.title}»{where}: «{sentence}» [{passage.chunk_id}]"
    return f"According to {passage.title}{where}: “{sentence}” [{passage.chunk_id}]"
