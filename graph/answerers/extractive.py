"""The offline answerer: quotes the policy sentences that answer the question, each cited.

From the passages at or above the score floor (at most 3 of each organisation), every sentence is
scored against the question: cosine similarity (MiniLM for English, the multilingual encoder when
the question or a passage is not English) plus what graph/answerers/features.py reads off the sentence (the
question's words weighted by rarity, a superseded value) plus a little of the
passage's rerank score. A question sentence (an FAQ's) is never a candidate; the
first sentence under an FAQ's question is read with it, and a short one is shown with it ("Does
Sourcegraph match my 401k? Not at this time."). The best
sentence is kept with the neighbours that name the place or team asked about, or the figure the
best one lacks; other sentences close to the best one fill up to 3; an old value never does. The
answer judge (models/judge) adds the neighbours it reads as answering too (the exception, the
population, the local amount: "… USD 250." + "During trade-show weeks …"), and whether the
sentences quoted answer at all is its reading, not this scoring's: a pointer to another section
("Visit our … section for more information") is read as answering nothing.
A question about one place is answered from the passages about it: a passage whose title or
section names only other places is set aside when another one names the place asked about.

Cosines come from standalone MiniLM vectors (~4 ms a sentence to encode here). `cairn serve`
prepares them for every published English chunk in the background (`prepare_answer_vectors`),
so a turn on prepared chunks encodes only the question, which the search already did. Otherwise
only a shortlist is encoded: the best SHORTLIST by the sentence vectors pooled at ingestion and
the cheap features, the sentences with no pooled vector and a number's neighbours (on SQuAD the
quoted answer contains the gold span as often as when every sentence is encoded: 0.861 of 180
answered). Each becomes one line:

    According to <title> (<section>): “<sentence>” [chunk_id]

Where the passages are several organisations' (a tenant holding several companies' handbooks, and a
question that names none of them: graph/tenant_names.py), each organisation close to the best gets
its own best sentences, each line led by the organisation's name ("GitLab: According to …"): the
asker's company may be any of them, and one company's rule is no answer for another's staff.

Only the connective phrase is Cairn's; the quoted text is the document's (a table row is shown with
its column names, "City: Boston; Nightly limit: USD 250"). An Arabic question gets an Arabic
connective, with the sentence quoted in the passage's own language. Every line carries a citation,
so the draft passes validation by construction (it is still validated).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np

from graph.answerers import Answerer, AnswerRequest, Draft, draft_message, features
from graph.answerers.judging import read_sentences
from graph.tenant_names import by_organisation
from graph.validate import validate_answer
from models.judge import Judge
from retrieval.embed import DENSE, DENSE_ML, DENSE_SIZES
from retrieval.language import detect_language
from retrieval.rerank import unpack_vectors
from retrieval.search import Passage
from retrieval.sentences import body_of, split_sentences

MAX_PASSAGES = 3
MAX_SENTENCES = 3
LEXICAL_WEIGHT = 0.45
PASSAGE_WEIGHT = 0.10
CLOSE_TO_BEST = 0.14  # tuned on the answers bench tune split: 0.08 → 0.14 lifts SQuAD 0.798 → 0.832, handbooks 0.569 → 0.588
ADJACENT_MARGIN = 0.10
NAME_PENALTY = 0.15  # the question names London: a sentence about Boston is a worse answer
MIN_SENTENCE_CHARS = 12
# A question that names no organisation, over several organisations' passages (see `_picks`):
# how much worse an organisation's best sentence may score than the best one (handbooks tune half:
# 0.08 → 0.15 one more right answer; 0.15–0.35 the same answers, only longer)
ORGANISATION_MARGIN = 0.15
ORGANISATION_SENTENCES = 2  # sentences quoted for each organisation
MAX_ORGANISATIONS = 3
SHORT_ITEM = 50  # a list item this short is shown after the section it is under
FAQ_SHORT_ANSWER = 60  # an FAQ answer this short is shown after its question ("Not at this time.")
SHORTLIST = 4  # sentences encoded on their own per turn, besides unstored ones and a number's neighbours
RECENT_SCORINGS = 32  # scorings, and choices of sentences, kept per answerer (`_kept`)
# Sentences the answer judge (models/judge) reads per turn: the ones an answer would quote, then the
# best others by this answerer's score.
JUDGE_READS = 8
TRACE_CHARS = 300  # of each sentence the judge read, in the turn's trace
# A question that picks no row of a table the judge reads as answering it ("What is the hotel limit
# per night?" over nightly limits by city): when at least TABLE_ROWS rows of one table are read at or
# above the threshold and within TABLE_MARGIN of the best sentence read, the answer is the table (its
# rows in document order; of a longer one than MAX_TABLE_ROWS, the rows read so), not one row or a
# sentence beside it. The judge's reading, not the question's wording, says that no row is singled out.
TABLE_ROWS = 3
TABLE_MARGIN = 0.1
MAX_TABLE_ROWS = 8
# How `_candidates` reads a chunk into sentences; raised whenever that changes, so that the sentence
# vectors prepared for the old reading are prepared again (store.catalog: answer_vectors.scheme).
# 1: a section path line ("4.1 NON-TRAVEL RELATED EXPENSES > Books") is not quoted; its last section is the
#    lead-in of the lines under it.
# 2: an FAQ's question is a line of its own (or one that follows its mark, "Q."), whatever its first word.
CANDIDATE_SCHEME = 2

# Document text addressed to an AI is never quoted as an answer (it is not obeyed either way).
_INSTRUCTION_TO_AI = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|rules|prompt)\b|\b(?:note|message) to (?:ai|the ai|"
    r"assistants?|chatbots?|llms?)\b|\bsystem prompt\b|تجاهل.{0,30}التعليمات", re.IGNORECASE)
_ITEM = re.compile(r"^(?:[-•*]|\d{1,2}[.)])\s+")
# A row or rule for every place not listed ("Any other city | USD 180") answers for any place
_ANY_PLACE = re.compile(r"\b(?:any other|all other|every other|elsewhere|other cities|other countries|"
                        r"other locations|all (?:other )?(?:offices|countries|locations|cities))\b", re.IGNORECASE)
# A figure: "4", "$3,000", "12-week", "1st", "15%"; not the digits of a name ("37signals", "B2B").
_FIGURE = re.compile(r"(?<!\w)\d[\d.,]*(?:st|nd|rd|th|k)?(?!\w)")


# chunk ids → their stored vector rows (store.catalog.Catalog.load_vectors)
StoredVectors = Callable[[Sequence[str]], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class _Sentence:
    passage: int
    index: int
    text: str  # as quoted
    scored_text: str  # what is compared with the question (a table row with its header)
    answers_faq: bool = False  # the first sentence under an FAQ's question
    faq: bool = False  # …a short one, shown with the question ("… 401k? Not at this time.")
    table: int = -1  # a row of the chunk's table number `table` (a table whose first row names its columns)
    lead: str = ""  # the lead-in `text` opens with ("… the following nightly limits:"), where it does


_V = TypeVar("_V")


class JudgeReading(NamedTuple):
    """What the answer judge made of the sentences an answer would quote (`ExtractiveAnswerer.judged`)."""

    answerable: float  # calibrated probability that a quoted sentence answers (the best of them)
    best: float  # …that any sentence read does
    threshold: float  # the judge's one threshold: under it, the question escalates
    sentences: list[dict[str, Any]]  # per sentence read: chunk_id, index, probability, quoted

    @property
    def ok(self) -> bool:
        return self.answerable >= self.threshold

    def trace(self) -> dict[str, Any]:
        return {"answerable": round(self.answerable, 4), "best": round(self.best, 4),
                "threshold": self.threshold, "sentences": self.sentences}


class _Choice(NamedTuple):
    passages: list[Passage]  # read: at or above the floor, at most max_passages of each organisation
    sentences: list[_Sentence]
    scores: np.ndarray  # one per sentence
    picks: list[_Sentence]  # the ones to quote
    multilingual: bool  # compared in the multilingual space
    reading: JudgeReading | None = None  # the answer judge's, where there is one


class ExtractiveAnswerer:
    name = "extractive"
    model: str | None = None
    prompt_version: str | None = "extractive-v1"
    fallback: Answerer | None = None

    def __init__(self, *, embedder: Any, stored_vectors: StoredVectors | None = None,
                 prepared_vectors: StoredVectors | None = None, max_passages: int = MAX_PASSAGES,
                 max_sentences: int = MAX_SENTENCES, judge: Judge | None = None) -> None:
        self.embedder = embedder
        self.judge = judge
        self.stored_vectors = stored_vectors
        self.prepared_vectors = prepared_vectors
        self.max_passages = max_passages
        self.max_sentences = max_sentences
        # The tools node asks for the closest sentence of a cross-language or chatty question, and
        # the answer then scores the same sentences again: the last few scorings are kept. So are the
        # last few choices: the gate reads the sentences an answer would quote, then the answer quotes them.
        self._recent: OrderedDict[tuple[object, ...], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._chosen: OrderedDict[tuple[object, ...], _Choice] = OrderedDict()

    async def respond(self, request: AnswerRequest) -> Draft:
        passages, sentences, scores, picks, multilingual, _ = await self._choose(
            request.question, request.language, request.passages, request.min_score)
        if not picks:
            return Draft(draft_message("", answerer=self.name, error="no sentence above the floor"),
                         {"error": "no sentence above the floor"})
        quoted = [(passages[s.passage], _HTML_BREAK.sub("; ", s.text)) for s in picks]
        lines = [_line(passage, text, request.language) for passage, text in quoted]
        if len(picks) >= TABLE_ROWS and picks[0].table >= 0 \
                and all((s.passage, s.table) == (picks[0].passage, picks[0].table) for s in picks):
            lines = _table_lines(passages[picks[0].passage], picks, request.language)
        allowed = [p.chunk_id for p in passages]
        if not validate_answer("\n".join(lines), allowed).ok:
            # A title or section name that reads as a sentence of its own: drop the connective.
            lines = [f"“{text}” [{passage.chunk_id}]" for passage, text in quoted]
        if len({passage.organisation for passage, _ in quoted}) > 1:
            lines = [f"{passage.organisation}: {line}" if passage.organisation else line
                     for (passage, _), line in zip(quoted, lines, strict=True)]
        info = {"encoder": "multilingual" if multilingual else "minilm",
                "sentences": [{"chunk_id": passages[s.passage].chunk_id, "index": s.index,
                               "score": round(float(scores[sentences.index(s)]), 4)} for s in picks]}
        return Draft(draft_message("\n".join(lines), answerer=self.name), info)

    async def judged(self, question: str, passages: Sequence[Passage], min_score: float | None) -> JudgeReading | None:
        """The judge's reading of the sentences an answer would quote (and of the best others read),
        or None without a judge or a sentence to quote."""
        choice = await self._choose(question, detect_language(question), passages, min_score)
        return choice.reading

    async def _read(self, question: str, language: str, passages: Sequence[Passage], sentences: Sequence[_Sentence],
                    read: Sequence[int]) -> np.ndarray:
        """The judge's probabilities for `sentences[read]`: English pairs go to its cross-encoder, any
        other to its multilingual head, with the sentences' multilingual vectors."""
        assert self.judge is not None
        return await asyncio.to_thread(read_sentences, self.judge, self.embedder, question, language, passages,
                                       [(sentences[i].passage, sentences[i].scored_text) for i in read])

    async def _reading(self, question: str, language: str, passages: Sequence[Passage],
                       sentences: Sequence[_Sentence], scores: np.ndarray, picks: list[_Sentence]
                       ) -> tuple[JudgeReading | None, list[_Sentence]]:
        """The judge reads the sentences picked and the best others (JUDGE_READS in all); the turn's
        answerable probability is the best of the picked ones'. (Quoting the judge's best sentence
        instead, where it reads another higher, showed more wrong answers on the tune split at every
        margin tried, and where it reads none of the picks as answering, too: the judge decides whether
        to answer, the picker what to quote.) Second: the sentences to quote instead of the picks: a
        table's rows, where the question singles out none (TABLE_ROWS), or the picks with the
        neighbours the judge reads as their scope."""
        if self.judge is None or not picks:
            return None, []
        quoted = [sentences.index(s) for s in picks]
        best = sentences[max(quoted, key=lambda i: scores[i])]
        asked_places = features.places(question, widen=True)
        beside = [i for i, s in enumerate(sentences) if s.passage == best.passage and abs(s.index - best.index) == 1
                  and i not in quoted and not features.is_history(s.text) and not _elsewhere(s, asked_places)
                  and not (best.table >= 0 and s.table == best.table)]  # another row is another case, not scope
        others = [int(i) for i in np.argsort(-scores) if np.isfinite(scores[i]) and int(i) not in quoted + beside]
        read = [*quoted, *beside, *others][: max(JUDGE_READS, len(quoted) + len(beside))]
        p = await self._read(question, language, passages, sentences, read)
        threshold = self.judge.answerable_at
        rows = _general_table(sentences, read, p, threshold)
        # The best sentence's neighbours the judge reads as answering too (its scope, or the answer the
        # best one only leads up to: at its scope floor, and within its scope margin of the picks' best)
        # are quoted with it.
        floor = max(self.judge.scope_floor, float(np.max(p[: len(quoted)])) - self.judge.scope_margin)
        scope = [sentences[i] for k, i in enumerate(read) if i in beside and p[k] >= floor]
        if scope and not rows:
            rows = sorted([*picks, *scope], key=lambda s: (s.passage, s.index))
        answering = [k for k, i in enumerate(read) if sentences[i] in rows] if rows else list(range(len(quoted)))
        trace = [{"chunk_id": passages[sentences[i].passage].chunk_id, "index": sentences[i].index,
                  "text": sentences[i].scored_text[:TRACE_CHARS], "probability": round(float(p[k]), 4),
                  "quoted": k in answering} for k, i in enumerate(read)]
        return JudgeReading(float(np.max(p[answering])), float(np.max(p)), threshold, trace), rows

    async def _choose(self, question: str, language: str, candidates: Sequence[Passage],
                      min_score: float | None) -> _Choice:
        """The passages read, their candidate sentences, the sentences' scores and the ones to quote."""
        return await _kept(self._chosen, (question, language, min_score, *candidates),
                           lambda: self._chosen_anew(question, language, candidates, min_score))

    async def _chosen_anew(self, question: str, language: str, candidates: Sequence[Passage],
                           min_score: float | None) -> _Choice:
        floor = min_score if min_score is not None else float("-inf")
        groups = [_about_the_place_asked(question, group[: self.max_passages])
                  for group in by_organisation(p for p in candidates if p.score >= floor)]
        passages = [p for group in groups for p in group]
        sentences = [s for i, p in enumerate(passages) for s in _sentences(i, p)]
        multilingual = language != "en" or any(p.lang != "en" for p in passages)
        if not sentences:
            return _Choice(passages, sentences, np.zeros(0, dtype=np.float32), [], multilingual)
        scores, cosine = await self._scores(question, sentences, passages, multilingual)
        picks = self._picks(question, sentences, scores, cosine, passages)
        reading, table = await self._reading(question, language, passages, sentences, scores, picks)
        return _Choice(passages, sentences, scores, table or picks, multilingual, reading)

    def _picks(self, question: str, sentences: Sequence[_Sentence], scores: np.ndarray, cosine: np.ndarray,
               passages: Sequence[Passage]) -> list[_Sentence]:
        """The sentences to quote. Where the passages are several organisations' (a question that
        names none, in a tenant that holds several companies' handbooks), each organisation whose
        best sentence is within ORGANISATION_MARGIN of the best one gets its own, best first: the
        asker's company may be any of them, and one company's rule is no answer for another's staff."""
        groups = _sentences_by_organisation(sentences, passages)
        if len(groups) < 2:
            return _pick(sentences, scores, cosine, question=question, max_sentences=self.max_sentences)
        top = float(np.max(scores))
        close: list[tuple[float, list[int]]] = []
        for mine in groups:
            best = max(float(scores[i]) for i in mine)
            if np.isfinite(best) and best >= top - ORGANISATION_MARGIN:
                close.append((best, mine))
        close.sort(key=lambda c: -c[0])
        each = self.max_sentences if len(close) == 1 else ORGANISATION_SENTENCES
        return [s for _, mine in close[:MAX_ORGANISATIONS]
                for s in _pick([sentences[i] for i in mine], scores[mine], cosine[mine], question=question,
                               max_sentences=each)]

    async def closest_sentence(self, question: str, passages: Sequence[Passage]) -> str | None:
        """The sentence this answerer would quote first, or None (see graph/nodes/tools.py: what a
        question in another language, or a long chatty one, is checked for conflicts against)."""
        passages = _about_the_place_asked(question, list(passages)[: self.max_passages])
        sentences = [s for i, p in enumerate(passages) for s in _sentences(i, p)]
        if not sentences:
            return None
        multilingual = detect_language(question) != "en" or any(p.lang != "en" for p in passages)
        scores, _ = await self._scores(question, sentences, passages, multilingual)
        return sentences[int(np.argmax(scores))].scored_text

    async def _scores(self, question: str, sentences: Sequence[_Sentence], passages: Sequence[Passage],
                      multilingual: bool) -> tuple[np.ndarray, np.ndarray]:
        return await _kept(self._recent,
                           (question, multilingual, *((p.chunk_id, p.score, p.heading, p.text) for p in passages)),
                           lambda: self._score_all(question, sentences, passages, multilingual))

    async def _score_all(self, question: str, sentences: Sequence[_Sentence], passages: Sequence[Passage],
                         multilingual: bool) -> tuple[np.ndarray, np.ndarray]:
        if multilingual:  # the multilingual sentence vectors stored at ingestion are encode_multilingual's
            exact = {**await self._prepared(passages, multilingual=True),
                     **await self._stored(passages, DENSE_SIZES[DENSE_ML])}
            approx: dict[str, np.ndarray] = {}
        else:
            exact = await self._prepared(passages)
            approx = {} if all(s.scored_text in exact for s in sentences) else \
                await self._stored(passages, DENSE_SIZES[DENSE])
        return await asyncio.to_thread(self._score, question, sentences, passages, multilingual, exact, approx)

    async def _stored(self, passages: Sequence[Passage], dim: int) -> dict[str, np.ndarray]:
        """Sentence vectors stored at ingestion for these passages, keyed by sentence text, if they are
        in the space of `dim` (multilingual: USE, as `encode_multilingual` gives; English: MiniLM
        pooled inside the chunk, close to but not the standalone vectors the scoring uses)."""
        return await _by_text(self.stored_vectors, passages, texts="sentences", vecs="sentence_vecs",
                              dim="sent_dim", want=dim)

    async def _prepared(self, passages: Sequence[Passage], *, multilingual: bool = False) -> dict[str, np.ndarray]:
        """Standalone MiniLM (or multilingual) vectors of these passages' candidate sentences, where
        the background preparation (`prepare_answer_vectors`) has already stored them."""
        if multilingual:
            return await _by_text(self.prepared_vectors, passages, texts="texts", vecs="ml_vecs", dim="ml_dim",
                                  want=DENSE_SIZES[DENSE_ML])
        return await _by_text(self.prepared_vectors, passages, texts="texts", vecs="vecs", dim="dim",
                              want=DENSE_SIZES[DENSE])

    def _score(self, question: str, sentences: Sequence[_Sentence], passages: Sequence[Passage],
               multilingual: bool, exact: Mapping[str, np.ndarray],
               approx: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Total score and cosine per sentence. `exact` vectors are used as they are; English
        sentences without one are shortlisted with the `approx` ones, and a sentence left off the
        shortlist scores -inf."""
        rest = _features(question, sentences, passages)
        encode = self.embedder.encode_multilingual if multilingual else self.embedder.encode_sentences
        q = np.asarray(encode([question]), dtype=np.float32)[0]  # cached: the search embedded it
        cosine = np.full(len(sentences), -1.0, dtype=np.float32)
        total = np.full(len(sentences), -np.inf, dtype=np.float32)

        def score(indices: Sequence[int]) -> None:
            fresh = list(dict.fromkeys(sentences[i].scored_text for i in indices
                                       if sentences[i].scored_text not in exact))
            vecs = dict(zip(fresh, np.asarray(encode(fresh), dtype=np.float32), strict=True)) if fresh else {}
            for i in indices:
                cosine[i] = float(exact.get(sentences[i].scored_text, vecs.get(sentences[i].scored_text)) @ q)
                total[i] = cosine[i] + rest[i]

        ready = {i for i, s in enumerate(sentences) if s.scored_text in exact}
        score(sorted(ready))
        if len(ready) < len(sentences):
            score([i for i in range(len(sentences)) if i not in ready] if multilingual
                  else _shortlist(sentences, approx, q, rest, skip=ready))
        # _pick weighs the best sentence's neighbours (its exception, its scope): score them too, for
        # the best of each organisation's sentences (see `_picks`).
        for mine in _sentences_by_organisation(sentences, passages):
            best = sentences[max(mine, key=lambda i: total[i])]
            score([i for i, s in enumerate(sentences) if s.passage == best.passage
                   and abs(s.index - best.index) == 1 and total[i] == -np.inf])
        return total, cosine


async def _kept(recent: OrderedDict[tuple[object, ...], _V], key: tuple[object, ...],
                make: Callable[[], Awaitable[_V]]) -> _V:
    """The value kept for `key`, or made and kept: the last RECENT_SCORINGS of them, the latest used last."""
    if key in recent:
        recent.move_to_end(key)
        return recent[key]
    value = recent[key] = await make()
    while len(recent) > RECENT_SCORINGS:
        recent.popitem(last=False)
    return value


def _sentences_by_organisation(sentences: Sequence[_Sentence], passages: Sequence[Passage]) -> list[list[int]]:
    """The indices of each organisation's sentences, in the order its passages come (one group where
    the tenant has no organisations)."""
    groups: dict[str | None, list[int]] = {}
    for i, s in enumerate(sentences):
        groups.setdefault(passages[s.passage].organisation, []).append(i)
    return list(groups.values())


def _about_the_place_asked(question: str, passages: list[Passage]) -> list[Passage]:
    """Without the passages whose title or section names only other places than the one asked
    about, when another passage's names it: "does the company match retirement savings for Canadian
    team members?" is answered from the Canada benefits page, not the Ireland one beside it. A page
    whose title names no place may name it in its text ("… to complement Australia's Medicare"): then
    it is the one about that place, and the UK benefits page beside it is set aside."""
    asked = features.places(question, widen=True)
    if not asked:
        return passages
    where = [features.places(f"{p.title}\n{p.heading}") for p in passages]
    about = [bool(w & asked) or (not w and bool(features.places(p.text) & asked))
             for p, w in zip(passages, where, strict=True)]
    if not any(about):
        return passages
    return [p for p, w, a in zip(passages, where, about, strict=True)
            if not w or a or _for_any_place(p.heading)]


def _features(question: str, sentences: Sequence[_Sentence], passages: Sequence[Passage]) -> np.ndarray:
    """Everything but the cosine, per sentence (see graph/answerers/features.py)."""
    q_terms = features.with_places(features.question_terms(question), question, widen=True)
    sent_terms = [features.with_places(features.tokens(s.scored_text), s.scored_text) for s in sentences]
    heading_terms = [features.tokens(p.heading) for p in passages]
    weights = features.term_weights(q_terms, sent_terms)
    lexical = np.array([features.coverage(weights, t, heading_terms[s.passage])
                        for s, t in zip(sentences, sent_terms, strict=True)], dtype=np.float32)
    rerank = np.array([passages[s.passage].score for s in sentences], dtype=np.float32)
    history = np.array([features.is_history(s.text) for s in sentences], dtype=np.float32)
    named = features.names(question) | features.places(question, widen=True)
    # what a passage is about: its title, section and text ("AUSTPAC" named once, at its start)
    about = [features.with_places(features.tokens(f"{p.title}\n{p.text}"), f"{p.title}\n{p.text}") if named else set()
             for p in passages]
    off_topic = np.array([bool(named) and not named & (t | heading_terms[s.passage] | about[s.passage])
                          and not _for_any_place(s.text)
                          for s, t in zip(sentences, sent_terms, strict=True)], dtype=np.float32)
    return (LEXICAL_WEIGHT * lexical + PASSAGE_WEIGHT * rerank - features.HISTORY_PENALTY * history
            - NAME_PENALTY * off_topic)


async def _by_text(load: StoredVectors | None, passages: Sequence[Passage], *, texts: str, vecs: str, dim: str,
                   want: int) -> dict[str, np.ndarray]:
    """Vectors of the passages' stored rows (columns `texts`, `vecs`, `dim`) keyed by text, when the
    row's vectors have `want` dimensions."""
    if load is None:
        return {}
    out: dict[str, np.ndarray] = {}
    for row in (await load([p.chunk_id for p in passages])).values():
        matrix = unpack_vectors(row[vecs], row[dim]) if row[dim] == want and row[vecs] else None
        keys = json.loads(row[texts])
        if matrix is not None and len(matrix) == len(keys):
            out.update(zip(keys, matrix, strict=True))
    return out


def _shortlist(sentences: Sequence[_Sentence], approx: Mapping[str, np.ndarray], q: np.ndarray,
               rest: np.ndarray, *, skip: set[int]) -> list[int]:
    """The sentences worth encoding on their own: the best SHORTLIST by the stored (pooled) vectors
    and the cheap features, and any sentence with no stored vector (a table row with its header, a
    list item with its lead-in). Encoding every candidate standalone costs ~4 ms a sentence here,
    the bulk of a turn."""
    rough = np.array([float(approx[s.scored_text] @ q) if s.scored_text in approx and i not in skip else -np.inf
                      for i, s in enumerate(sentences)], dtype=np.float32) + rest
    best = {int(i) for i in np.argsort(-rough, kind="stable")[:SHORTLIST] if np.isfinite(rough[i])}
    return sorted(best | {i for i, s in enumerate(sentences) if s.scored_text not in approx and i not in skip})


async def prepare_answer_vectors(catalog: Any, embedder: Any, *, limit: int = 64,
                                 chunk_ids: Sequence[str] | None = None) -> int:
    """Store standalone vectors of the candidate sentences of up to `limit` English chunks that have
    none yet (store.catalog.Catalog.chunks_without_answer_vectors); returns how many chunks.

    Ingestion stores sentence vectors pooled from each chunk's single pass (cheap, good for
    ranking); the answerer's choice of sentence needs standalone ones, which cost ~4 ms a
    sentence. The server prepares them after publication, a batch at a time, so turns on
    prepared chunks encode nothing but the question."""
    multilingual = bool(getattr(embedder, "multilingual", False))
    pending = await catalog.chunks_without_answer_vectors(limit=limit, chunk_ids=chunk_ids,
                                                          multilingual=multilingual, scheme=CANDIDATE_SCHEME)
    if not pending:
        return 0
    texts = [list(dict.fromkeys(s.scored_text for s in _candidates(text))) for _, text in pending]
    flat = [t for group in texts for t in group]
    vecs = await asyncio.to_thread(embedder.encode_standalone, flat) if flat else np.zeros((0, DENSE_SIZES[DENSE]))
    # An Arabic question about an English chunk compares in the multilingual space: without these it
    # encodes every candidate sentence with USE at question time (most of an Arabic turn).
    ml = None
    if multilingual:
        ml = await asyncio.to_thread(embedder.encode_multilingual, flat) if flat else \
            np.zeros((0, DENSE_SIZES[DENSE_ML]))
    rows, at = [], 0
    for (chunk_id, _), group in zip(pending, texts, strict=True):
        block = np.asarray(vecs[at:at + len(group)], dtype=np.float16)
        row: dict[str, object] = {"chunk_id": chunk_id, "texts": json.dumps(group, ensure_ascii=False),
                                  "dim": DENSE_SIZES[DENSE], "vecs": block.tobytes(), "scheme": CANDIDATE_SCHEME}
        if ml is not None:
            row |= {"ml_dim": DENSE_SIZES[DENSE_ML],
                    "ml_vecs": np.asarray(ml[at:at + len(group)], dtype=np.float16).tobytes()}
        at += len(group)
        rows.append(row)
    await catalog.store_answer_vectors(rows=rows)
    return len(rows)


def _sentences(passage_no: int, passage: Passage) -> list[_Sentence]:
    return _candidates(passage.text, passage_no)


def answer_candidates(text: str) -> list[str]:
    """The distinct sentences of a chunk as they are scored (`_candidates`' `scored_text`)."""
    return list(dict.fromkeys(s.scored_text for s in _candidates(text)))


def _candidates(text: str, passage_no: int = 0) -> list[_Sentence]:
    """Candidate sentences. A lead-in ending with a colon and a short heading line are not answers on
    their own: they are quoted together with (and give context to) the list items or rows they
    introduce. A table row is shown with its column names."""
    out: list[_Sentence] = []
    header: list[str] | None = None
    tables = 0
    lead_in = ""
    head, _, rest = text.partition("\n")
    # an FAQ's question (the chunk's own heading, or a line of it), for the answer under it
    asked = _faq_question(head) if rest.strip() else ""
    first = bool(asked)
    for line in body_of(text).splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")] if " | " in stripped else None
        if cells is None:
            header = None
        elif header is None:
            # The first row of a table names its columns, when it reads as names: a table written
            # in HTML may start with a row of data ("#announce-company | Critical information …").
            header = cells if _names_columns(cells) else []
            if header:
                tables += 1
                continue
        is_item = cells is not None or bool(_ITEM.match(stripped))
        if not is_item:
            lead_in = ""
        if _is_heading_line(stripped) and cells is None:
            # of a section path, the section itself ("Eligibility" under "… Savings Plan (RRSP) > Eligibility")
            lead_in, first = stripped.rsplit(" > ", 1)[-1], False
            continue
        pieces = split_sentences(stripped)
        for at, sentence in enumerate(pieces):
            if sentence.endswith(":") and not re.search(r"\d", sentence):
                lead_in = sentence
                continue
            if sentence.rstrip(" *_”\"'").endswith(("?", "؟")):
                # A question (an FAQ's) restates what was asked; it never answers it. The first
                # sentence under it is compared with the question together with it: "Not at this
                # time." says nothing alone, under "Does the company match my 401k?" it is the answer.
                # An FAQ's question is a line of its own, or follows its mark ("Q." "Does …?"); one
                # inside a paragraph is the text's own ("… is a round trip shorter than 2000 km?").
                opens = (at == 0 and len(pieces) == 1) or bool(_FAQ_MARK.match(sentence.lstrip("-•*# ").strip(" *_"))) \
                    or (at == 1 and bool(_FAQ_MARK.fullmatch(pieces[0].strip(" -•*#_") + " ")))
                if opens:
                    asked = "" if _INSTRUCTION_TO_AI.search(sentence) else _faq_question(sentence)
                    first = bool(asked)
                continue
            if (len(sentence) < MIN_SENTENCE_CHARS and not re.search(r"\d", sentence)) \
                    or _INSTRUCTION_TO_AI.search(sentence):
                continue
            shown = sentence.lstrip("-•* ").strip()
            table = -1
            if cells is not None and header is not None and len(header) == len(cells):
                shown = "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=True))
                table = tables
            scored = f"{lead_in} {shown}" if is_item and lead_in else shown
            lead = ""
            if is_item and lead_in.endswith(":"):
                shown, lead = scored, lead_in  # the lead-in is part of the sentence the item completes
            elif is_item and lead_in and cells is None and len(shown) <= SHORT_ITEM:
                shown = f"{lead_in.rstrip()}: {shown}"  # "Eligibility: All full-time team members (30+ hours per week)"
            answers_faq, faq = first, False
            if first:  # the answer's first sentence, which says yes, no or how much
                scored = f"{asked} {scored}"
                if len(shown) <= FAQ_SHORT_ANSWER:
                    shown, faq = f"{asked} {shown}", True  # a short answer is shown with the question it answers
                first = False
            out.append(_Sentence(passage_no, len(out), shown, scored, answers_faq, faq, table,
                                 lead if shown.startswith(lead) else ""))
    return out


_FAQ_MARK = re.compile(r"^(?:Q(?:uestion)?\s*[:.)]\s*|\*\*Q[:.]\s*)", re.IGNORECASE)


def _faq_question(line: str) -> str:
    """The question a line asks ("Q. Does Sourcegraph match my 401k?" → "Does Sourcegraph match my
    401k?"; the last part of a heading path), or "" for none, or one too short to say what it asks
    about ("Questions?")."""
    last = line.split(" > ")[-1].strip().lstrip("-•*# ").strip(" *_")
    if not last.rstrip("”\"'").endswith(("?", "؟")):
        return ""
    question = _FAQ_MARK.sub("", last).strip(" *_")
    return question if len(question.split()) >= 3 else ""


def _names_columns(cells: Sequence[str]) -> bool:
    return all(len(c.split()) <= 5 and not c.endswith((".", "!", "?", "؟")) for c in cells)


def _is_heading_line(line: str) -> bool:
    if _ITEM.match(line) or re.search(r"[.!?؟:;،,]$", line):
        return False
    # A section's path, as the chunker writes a sub-heading ("4.1 NON-TRAVEL RELATED EXPENSES > Books"): the
    # lead-in of the lines under it, whatever its length or numbering.
    if " > " in line:
        return True
    return not re.search(r"\d", line) and len(line.split()) <= 6


def _pick(sentences: Sequence[_Sentence], scores: np.ndarray, cosine: np.ndarray, *, question: str,
          max_sentences: int) -> list[_Sentence]:
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    top = scores[order[0]]
    best = sentences[order[0]]
    picks = [best]

    def neighbour(offset: int) -> _Sentence | None:
        return next((s for s in sentences if s.passage == best.passage and s.index == best.index + offset), None)

    named = features.names(question) | features.places(question, widen=True)
    asked_places = features.places(question, widen=True)
    asked = features.question_terms(question)

    def elsewhere(s: _Sentence) -> bool:
        return _elsewhere(s, asked_places)

    def said(s: _Sentence) -> bool:
        """Already in the answer, perhaps from the overlap of two chunks of one page."""
        return " ".join(s.text.split()).casefold() in {" ".join(p.text.split()).casefold() for p in picks}

    def may_join(s: _Sentence) -> bool:
        """Not yet said, not an old value (never quoted beside the current one), not another place's."""
        return not said(s) and not features.is_history(s.text) and not elsewhere(s)

    for found in (neighbour(1), neighbour(-1)):
        if found is None or len(picks) >= max_sentences or not np.isfinite(scores[sentences.index(found)]) \
                or not may_join(found):
            continue
        if _gives_scope(best, found, cosine[sentences.index(found)] >= cosine[order[0]] - ADJACENT_MARGIN, named,
                        asked):
            picks.append(found)
    for i in order[1:]:
        if len(picks) >= max_sentences or scores[i] < top - CLOSE_TO_BEST:
            break
        if may_join(sentences[i]):
            picks.append(sentences[i])
    for short in [s for s in picks if s.faq and s is not best]:
        # a short FAQ answer quoted comes with the rest of it ("Not at this time. The maximum is …"), as the
        # best one does through `_gives_scope`
        rest = next((s for s in sentences if s.passage == short.passage and s.index == short.index + 1
                     and not s.answers_faq), None)
        if rest is not None and may_join(rest):
            picks.append(rest)
    return sorted(picks, key=lambda s: (s.passage, s.index))


def _gives_scope(best: _Sentence, other: _Sentence, similar: bool, named: set[str],
                 asked: AbstractSet[str] = frozenset()) -> bool:
    """Whether a sentence next to the best one belongs in the answer: the rest of a short FAQ answer,
    the place or team asked about where the best one does not name it, the continuation of a number,
    or the answer itself when the best one introduces it ("… Group RRSP through Canada Life." then
    "Employer matching up to 3% …" for "do they match retirement savings?": the figure, and a word of
    the question the best lacks). Exceptions and other scope are the judge's reading (`_reading`)."""
    after = other.index > best.index
    if after and best.faq and not other.answers_faq:
        return True  # the rest of a short FAQ answer ("A: Unfortunately, not at this time. The maximum is …")
    if named and named & features.with_places(features.tokens(other.text), other.text) \
            and not named & features.with_places(features.tokens(best.text), best.text):
        return True  # the question's place or team is named in the neighbour, not in the best
    if after and _FIGURE.search(other.text) and not _FIGURE.search(best.text) \
            and (asked & features.tokens(other.text)) - features.tokens(best.text):
        return True
    return after and similar and bool(_FIGURE.search(best.text))


def _elsewhere(s: _Sentence, asked_places: AbstractSet[str]) -> bool:
    """A sentence about another place than the one asked about (the Riyadh row under the Dubai one)."""
    places = features.places(s.scored_text)
    return bool(asked_places and places) and not places & asked_places and not _for_any_place(s.text)


def _for_any_place(sentence: str) -> bool:
    return bool(_ANY_PLACE.search(sentence))


# A line break written as HTML inside a table cell ("66.67% (STD)<br>After 12 weeks: …") is shown as
# a separator, not as markup.
_HTML_BREAK = re.compile(r"\s*<br\s*/?>\s*", re.IGNORECASE)


def _line(passage: Passage, sentence: str, language: str) -> str:
    return f"{_source(passage, language)}: {_quoted(passage, sentence, language)}"


def _table_lines(passage: Passage, rows: Sequence[_Sentence], language: str) -> list[str]:
    """A table's rows under one line naming where they come from (with the rows' lead-in, where they
    share one, quoted there once), each row cited."""
    lead = rows[0].lead if all(r.lead == rows[0].lead for r in rows) else ""
    texts = [_HTML_BREAK.sub("; ", r.text[len(lead):].strip() if lead else r.text) for r in rows]
    first = _line(passage, lead, language) if lead else f"{_source(passage, language)}:"
    return [first, *(_quoted(passage, text, language) for text in texts)]


def _quoted(passage: Passage, text: str, language: str) -> str:
    """The document's words in the answer's quotation marks, with the chunk's citation."""
    return f"«{text}» [{passage.chunk_id}]" if language == "ar" else f"“{text}” [{passage.chunk_id}]"


def _source(passage: Passage, language: str) -> str:
    section = passage.heading
    if section.startswith(passage.title + " > "):
        section = section[len(passage.title) + 3:]
    where = f" ({section})" if section and section != passage.title else ""
    if language == "ar":
        return f"وفقًا لـ«{passage.title}»{where}"
    return f"According to {passage.title}{where}"


def _general_table(sentences: Sequence[_Sentence], read: Sequence[int], p: np.ndarray,
                   threshold: float) -> list[_Sentence]:
    """The rows of the table to quote whole (see TABLE_ROWS), or none."""
    near = float(np.max(p)) - TABLE_MARGIN if len(p) else 1.0
    groups: dict[tuple[int, int], list[int]] = {}
    for k, i in enumerate(read):
        if sentences[i].table >= 0 and p[k] >= max(threshold, near):
            groups.setdefault((sentences[i].passage, sentences[i].table), []).append(i)
    best = max(groups.values(), key=len, default=[])
    if len(best) < TABLE_ROWS:
        return []
    key = (sentences[best[0]].passage, sentences[best[0]].table)
    rows = [s for s in sentences if (s.passage, s.table) == key]
    return rows if len(rows) <= MAX_TABLE_ROWS else [sentences[i] for i in sorted(best)][:MAX_TABLE_ROWS]
