"""The offline answerer: quotes the policy sentences that answer the question, each cited.

From the passages at or above the score floor (at most 3), every body sentence is scored against the
question: cosine similarity (MiniLM for English, the multilingual encoder when the question or a
passage is not English) plus a lexical-overlap bonus plus a little of the passage's rerank score.
The best sentence is kept; a sentence with a number keeps its adjacent exception sentence from the
same passage ("… USD 250." + "During trade-show weeks …"); other sentences close to the best one
fill up to 3. Each becomes one line:

    According to <title> (<section>): “<sentence>” [chunk_id]

Only the connective phrase is Cairn's; the quoted text is the document's (a table row is shown with
its column names, "City: Boston; Nightly limit: USD 250"). An Arabic question gets an Arabic
connective, with the sentence quoted in the passage's own language. Every line carries a citation,
so the draft passes validation by construction (it is still validated).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from graph.answerers import Answerer, AnswerRequest, Draft, draft_message
from graph.validate import validate_answer
from retrieval.search import Passage
from retrieval.sentences import body_of, split_sentences

MAX_PASSAGES = 3
MAX_SENTENCES = 3
LEXICAL_WEIGHT = 0.35
PASSAGE_WEIGHT = 0.10
CLOSE_TO_BEST = 0.08
ADJACENT_MARGIN = 0.10
NUMBER_BONUS = 0.10
NAME_PENALTY = 0.15  # the question names London: a sentence about Boston is a worse answer
MIN_SENTENCE_CHARS = 12

_EXCEPTION_START = re.compile(
    r"^(?:[-•*]\s*)?(?:except|unless|however|but|exceptions?|during|with (?:written|prior)|if|when|only|"
    r"this does not|note|after|before|above|over|under|for (?:trips|flights|stays))\b|"
    r"^(?:[-•*]\s*)?(?:إلا|باستثناء|ولكن|لكن|إذا|اذا|ما لم|خلال|بعد|قبل)", re.IGNORECASE)
_TOKEN = re.compile(r"\w+")
# Document text addressed to an AI is never quoted as an answer (it is not obeyed either way).
_INSTRUCTION_TO_AI = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|rules|prompt)\b|\b(?:note|message) to (?:ai|the ai|"
    r"assistants?|chatbots?|llms?)\b|\bsystem prompt\b|تجاهل.{0,30}التعليمات", re.IGNORECASE)
_QUANTITY_CUE = re.compile(
    r"\b(?:how (?:many|much|long|far|soon|often)|when|until|what time|which day|hours?|limit|rate|minimum|"
    r"maximum|deadline|amount|cost|price|allowance|per (?:day|night|month|year))\b|كم|متى|حتى|ساعات|حد", re.IGNORECASE)
_ITEM = re.compile(r"^(?:[-•*]|\d{1,2}[.)])\s+")
_ARABIC_DIACRITICS = re.compile(r"[\u064B-\u0652\u0670\u0640]")
_STOP = frozenset(
    "the a an of to in on for and or is are be what which who how many much do does did i my me we our "
    "you your can could may should will would with at by from this that it as if there when where per "
    "any some get have has".split()) | frozenset("في من على إلى الى عن ما هل كم هو هي أن ان التي الذي مع".split())


@dataclass(frozen=True)
class _Sentence:
    passage: int
    index: int
    text: str  # as quoted
    scored_text: str  # what is compared with the question (a table row with its header)


class ExtractiveAnswerer:
    name = "extractive"
    model: str | None = None
    prompt_version: str | None = "extractive-v1"
    fallback: Answerer | None = None

    def __init__(self, *, embedder: Any, max_passages: int = MAX_PASSAGES,
                 max_sentences: int = MAX_SENTENCES) -> None:
        self.embedder = embedder
        self.max_passages = max_passages
        self.max_sentences = max_sentences

    async def respond(self, request: AnswerRequest) -> Draft:
        floor = request.min_score if request.min_score is not None else float("-inf")
        passages = [p for p in request.passages if p.score >= floor][: self.max_passages]
        sentences = [s for i, p in enumerate(passages) for s in _sentences(i, p)]
        if not sentences:
            return Draft(draft_message("", answerer=self.name, error="no sentence above the floor"),
                         {"error": "no sentence above the floor"})
        multilingual = request.language != "en" or any(p.lang != "en" for p in passages)
        scores, cosine = await asyncio.to_thread(self._score, request.question, sentences, passages, multilingual)
        picks = _pick(sentences, scores, cosine, max_sentences=self.max_sentences)
        lines = [_line(passages[s.passage], s.text, request.language) for s in picks]
        allowed = [p.chunk_id for p in passages]
        if not validate_answer("\n".join(lines), allowed).ok:
            # A title or section name that reads as a sentence of its own: drop the connective.
            lines = [f"“{s.text}” [{passages[s.passage].chunk_id}]" for s in picks]
        info = {"encoder": "multilingual" if multilingual else "minilm",
                "sentences": [{"chunk_id": passages[s.passage].chunk_id, "index": s.index,
                               "score": round(float(scores[sentences.index(s)]), 4)} for s in picks]}
        return Draft(draft_message("\n".join(lines), answerer=self.name), info)

    def _score(self, question: str, sentences: Sequence[_Sentence], passages: Sequence[Passage],
               multilingual: bool) -> tuple[np.ndarray, np.ndarray]:
        texts = [question, *(s.scored_text for s in sentences)]
        encode = self.embedder.encode_multilingual if multilingual else self.embedder.encode_sentences
        vecs = np.asarray(encode(texts), dtype=np.float32)
        cosine = vecs[1:] @ vecs[0]
        q_tokens = _tokens(question)
        lexical = np.array([len(q_tokens & _tokens(s.scored_text)) / max(len(q_tokens), 1) for s in sentences],
                           dtype=np.float32)
        rerank = np.array([passages[s.passage].score for s in sentences], dtype=np.float32)
        wants_number = bool(_QUANTITY_CUE.search(question))
        numeric = np.array([wants_number and bool(re.search(r"\d", s.text)) for s in sentences], dtype=np.float32)
        names = _names(question)
        off_topic = np.array([bool(names) and not names & _tokens(s.scored_text) for s in sentences],
                             dtype=np.float32)
        total = (cosine + LEXICAL_WEIGHT * lexical + PASSAGE_WEIGHT * rerank + NUMBER_BONUS * numeric
                 - NAME_PENALTY * off_topic)
        return total, cosine


def _sentences(passage_no: int, passage: Passage) -> list[_Sentence]:
    """Candidate sentences. A lead-in ending with a colon and a short heading line are not answers on
    their own: they are quoted together with (and give context to) the list items or rows they
    introduce. A table row is shown with its column names."""
    out: list[_Sentence] = []
    header: list[str] | None = None
    lead_in = ""
    for line in body_of(passage.text).splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")] if " | " in stripped else None
        if cells is None:
            header = None
        elif header is None:
            header = cells  # the first row of a table names its columns
            continue
        is_item = cells is not None or bool(_ITEM.match(stripped))
        if not is_item:
            lead_in = ""
        if _is_heading_line(stripped) and cells is None:
            lead_in = stripped
            continue
        for sentence in split_sentences(stripped):
            if sentence.endswith(":") and not re.search(r"\d", sentence):
                lead_in = sentence
                continue
            if (len(sentence) < MIN_SENTENCE_CHARS and not re.search(r"\d", sentence)) \
                    or _INSTRUCTION_TO_AI.search(sentence):
                continue
            shown = sentence.lstrip("-•* ").strip()
            if cells is not None and header is not None and len(header) == len(cells):
                shown = "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=True))
            scored = f"{lead_in} {shown}" if is_item and lead_in else shown
            if is_item and lead_in.endswith(":"):
                shown = scored  # the lead-in is part of the sentence the item completes
            out.append(_Sentence(passage_no, len(out), shown, scored))
    return out


def _is_heading_line(line: str) -> bool:
    return (not _ITEM.match(line) and not re.search(r"[.!?؟:;،,\d]$", line) and len(line.split()) <= 6
            and not re.search(r"\d", line))


def _pick(sentences: Sequence[_Sentence], scores: np.ndarray, cosine: np.ndarray, *,
          max_sentences: int) -> list[_Sentence]:
    order = [int(i) for i in np.argsort(-scores, kind="stable")]
    top = scores[order[0]]
    best = sentences[order[0]]
    picks = [best]

    def neighbour(offset: int) -> _Sentence | None:
        return next((s for s in sentences if s.passage == best.passage and s.index == best.index + offset), None)

    if re.search(r"\d", best.text):
        # A number travels with its exception or its continuation in the same passage.
        for found in (neighbour(1), neighbour(-1)):
            if found is None or len(picks) >= max_sentences:
                continue
            similar = cosine[sentences.index(found)] >= cosine[order[0]] - ADJACENT_MARGIN
            if _EXCEPTION_START.search(found.text) or (found.index > best.index and similar):
                picks.append(found)
    for i in order[1:]:
        if len(picks) >= max_sentences or scores[i] < top - CLOSE_TO_BEST:
            break
        if sentences[i] not in picks:
            picks.append(sentences[i])
    return sorted(picks, key=lambda s: (s.passage, s.index))


def _line(passage: Passage, sentence: str, language: str) -> str:
    section = passage.heading
    if section.startswith(passage.title + " > "):
        section = section[len(passage.title) + 3:]
    where = f" ({section})" if section and section != passage.title else ""
    if language == "ar":
        return f"وفقًا لـ«{passage.title}»{where}: «{sentence}» [{passage.chunk_id}]"
    return f"According to {passage.title}{where}: “{sentence}” [{passage.chunk_id}]"


def _tokens(text: str) -> set[str]:
    out = set()
    for token in _TOKEN.findall(_ARABIC_DIACRITICS.sub("", text.lower())):
        if token.startswith("ال") and len(token) > 4:
            token = token[2:]
        token = _stem(token)
        if token not in _STOP and (len(token) > 2 or token.isdigit()):
            out.add(token)
    return out


def _names(question: str) -> set[str]:
    """Capitalised words inside the question (places, teams, products), as overlap tokens."""
    words = re.findall(r"(?<=[\w,] )[A-Z][\w-]+", question)
    return {t for w in words for t in _tokens(w)}


def _stem(token: str) -> str:
    """Just enough English stemming for overlap: units/unit, days/day, booking/book."""
    for suffix in ("'s", "ies", "es", "s", "ing", "ed"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3 and token.isascii():
            return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token
