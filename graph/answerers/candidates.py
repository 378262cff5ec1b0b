"""A chunk read as the sentences an answer may quote, and their vectors prepared ahead of questions.

Structure, not wording: a lead-in ending with a colon and a short heading line are quoted with
(and give context to) the list items or rows they introduce; a table row is shown with its column
names ("City: Boston; Nightly limit: USD 250"); a question (an FAQ's) is never a candidate, and the
first sentence under it is read with it ("Does the company match my 401k? Not at this time.").
Document text addressed to an AI is never quoted (it is not obeyed either way).

`prepare_answer_vectors`: the standalone MiniLM (and multilingual) vectors of every candidate of
published chunks, stored by the server in the background so that a turn encodes only its question;
they order the judge's shortlist (graph/answerers/extractive.py) and feed its multilingual reader.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval.embed import DENSE, DENSE_ML, DENSE_SIZES
from retrieval.rerank import unpack_vectors
from retrieval.search import Passage
from retrieval.sentences import body_of, split_sentences

MIN_SENTENCE_CHARS = 12
SHORT_ITEM = 50  # a list item this short is shown after the section it is under
FAQ_SHORT_ANSWER = 60  # an FAQ answer this short is shown after its question ("Not at this time.")
# How `read_candidates` reads a chunk into sentences; raised whenever that changes, so that the sentence
# vectors prepared for the old reading are prepared again (store.catalog: answer_vectors.scheme).
# 1: a section path line ("4.1 NON-TRAVEL RELATED EXPENSES > Books") is not quoted; its last section is the
#    lead-in of the lines under it.
CANDIDATE_SCHEME = 1

# Document text addressed to an AI is never quoted as an answer (it is not obeyed either way).
_INSTRUCTION_TO_AI = re.compile(
    r"\b(?:ignore|disregard|forget)\b.{0,40}\b(?:instructions?|rules|prompt)\b|\b(?:note|message) to (?:ai|the ai|"
    r"assistants?|chatbots?|llms?)\b|\bsystem prompt\b|تجاهل.{0,30}التعليمات", re.IGNORECASE)
_ITEM = re.compile(r"^(?:[-•*]|\d{1,2}[.)])\s+")

# chunk ids → their stored vector rows (store.catalog.Catalog.load_vectors / load_answer_vectors)
StoredVectors = Callable[[Sequence[str]], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class CandidateSentence:
    passage: int
    index: int
    text: str  # as quoted
    scored_text: str  # what is judged against the question (a table row with its header)
    answers_faq: bool = False  # the first sentence under an FAQ's question
    faq: bool = False  # …a short one, shown with the question ("… 401k? Not at this time.")


def passage_candidates(passage_no: int, passage: Passage) -> list[CandidateSentence]:
    return read_candidates(passage.text, passage_no)


def answer_candidates(text: str) -> list[str]:
    """The distinct sentences of a chunk as they are judged (`read_candidates`' `scored_text`)."""
    return list(dict.fromkeys(s.scored_text for s in read_candidates(text)))


def read_candidates(text: str, passage_no: int = 0) -> list[CandidateSentence]:
    """Candidate sentences. A lead-in ending with a colon and a short heading line are not answers on
    their own: they are quoted together with (and give context to) the list items or rows they
    introduce. A table row is shown with its column names."""
    out: list[CandidateSentence] = []
    header: list[str] | None = None
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
                # An FAQ's question opens its line, or follows its mark ("Q." "Does …?"); one inside
                # a paragraph is the text's own ("… is a round trip shorter than 2000 km?").
                opens = at == 0 or bool(_FAQ_MARK.match(sentence.lstrip("-•*# ").strip(" *_"))) \
                    or (at == 1 and bool(_FAQ_MARK.fullmatch(pieces[0].strip(" -•*#_") + " ")))
                if opens:
                    asked = "" if _INSTRUCTION_TO_AI.search(sentence) else _faq_question(sentence)
                    first = bool(asked)
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
            elif is_item and lead_in and cells is None and len(shown) <= SHORT_ITEM:
                shown = f"{lead_in.rstrip()}: {shown}"  # "Eligibility: All full-time team members (30+ hours per week)"
            answers_faq, faq = first, False
            if first:  # the answer's first sentence, which says yes, no or how much
                scored = f"{asked} {scored}"
                if len(shown) <= FAQ_SHORT_ANSWER:
                    shown, faq = f"{asked} {shown}", True  # a short answer is shown with the question it answers
                first = False
            out.append(CandidateSentence(passage_no, len(out), shown, scored, answers_faq, faq))
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
    # A question that follows a lead-in ("… consider this instance: is there …?") is the text's own.
    return question if len(question.split()) >= 3 and ":" not in question else ""


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


async def vectors_by_text(load: StoredVectors | None, passages: Sequence[Passage], *, texts: str, vecs: str, dim: str,
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
    texts = [list(dict.fromkeys(s.scored_text for s in read_candidates(text))) for _, text in pending]
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
