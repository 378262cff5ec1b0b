"""The extractive answerer: the judge picks what is quoted, every line is cited, and the judge's reading
is kept once per turn and traced."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.services import Services
from graph.answerers import AnswerRequest
from graph.answerers.candidates import CANDIDATE_SCHEME, prepare_answer_vectors
from graph.answerers.extractive import ExtractiveAnswerer
from models.judge import Judge, shared_judge
from retrieval.embed import Embedder
from retrieval.search import Passage

pytestmark = pytest.mark.slow

FILLER = [f"Room {n} on the {n}th floor is booked through the facilities desk each {day}." for n, day in
          zip(range(2, 14), ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"] * 2, strict=True)]
TEXT = ("# Parking\n\n" + " ".join(FILLER[:6]) + " Staff parking costs USD 40 per month at the north garage."
        " Visitors park free for the first two hours. " + " ".join(FILLER[6:]) + "\n")


class CountingEmbedder:
    """The real embedder, counting what each call had to encode."""

    def __init__(self, real: Embedder) -> None:
        self.real, self.encoded = real, []

    def encode_sentences(self, texts):
        self.encoded.append(list(texts))
        return self.real.encode_sentences(texts)

    def encode_multilingual(self, texts):
        self.encoded.append(list(texts))
        return self.real.encode_multilingual(texts)


def _passage(doc: str, title: str, text: str, *, heading: str | None = None, score: float = 0.6,
             organisation: str | None = None) -> Passage:
    return Passage(chunk_id=f"t:{doc}:v1:0000", doc_id=doc, version="v1", title=title, source_path=f"{doc}.md",
                   page=None, heading=heading or title, text=text, score=score, rrf=0.03, owner=None, policy_id=None,
                   lang="en", organisation=organisation)


def _answerer(embedder: object, **kw: object) -> ExtractiveAnswerer:
    return ExtractiveAnswerer(embedder=embedder, judge=shared_judge(), **kw)  # type: ignore[arg-type]


async def _shown(embedder: Embedder, question: str, *passages: Passage) -> str:
    request = AnswerRequest(question=question, language="en", passages=list(passages), min_score=0.1, messages=[])
    return str((await _answerer(embedder).respond(request)).message.content)


async def test_the_sentence_that_answers_is_quoted_with_its_citation(embedder: Embedder) -> None:
    passage = _passage("facilities/parking", "Parking", TEXT, score=0.8)
    shown = await _shown(embedder, "How much does staff parking cost per month?", passage)
    assert shown.startswith("According to Parking: “Staff parking costs USD 40 per month")
    assert shown.rstrip().endswith(f"[{passage.chunk_id}]")
    assert "Room 2" not in shown


async def test_passages_that_do_not_answer_give_no_draft_and_the_judge_s_reason(embedder: Embedder) -> None:
    request = AnswerRequest(question="How many weeks of parental leave do fathers get?", language="en",
                            passages=[_passage("facilities/parking", "Parking", TEXT, score=0.8)], min_score=0.1,
                            messages=[])
    draft = await _answerer(embedder).respond(request)
    assert draft.message.content == ""
    assert "no sentence reads as an answer" in draft.info["error"]
    assert draft.info["judge"]["top"]  # what it read, with the probabilities, for the trace


async def test_a_line_break_written_as_html_in_a_table_cell_is_shown_as_a_separator(embedder: Embedder) -> None:
    text = ("Leave > Pay\nLeave | Pay while away\nMedical leave | 100% for 4 weeks<br>Then 60% for 8 weeks<br/>"
            "After 12 weeks: unpaid\n")
    judge = Judge()
    judge.answerable_at = 0.0  # whatever the judge makes of it: this is about how a quoted row is shown
    request = AnswerRequest(question="How am I paid during medical leave?", language="en",
                            passages=[_passage("hr/leave-pay", "Leave", text, heading="Leave > Pay")], min_score=0.1,
                            messages=[])
    shown = str((await ExtractiveAnswerer(embedder=embedder, judge=judge).respond(request)).message.content)
    assert "100% for 4 weeks; Then 60% for 8 weeks; After 12 weeks: unpaid" in shown and "<br" not in shown, shown


async def test_a_question_naming_no_organisation_gets_each_organisation_s_rule_under_its_name(
        embedder: Embedder) -> None:
    acme = _passage("acme/security/passwords", "Password Standard",
                    "# Password Standard\n\nPasswords must be at least 12 characters long. "
                    "Passwords are stored in the company password manager.\n", score=0.7, organisation="Acme")
    globex = _passage("globex/it/passwords", "Passwords", "# Passwords\n\nEvery password must be at least 15 "
                      "characters long. Screens lock after five minutes.\n", score=0.6, organisation="Globex")
    question = "How many characters must a password have?"
    lines = (await _shown(embedder, question, acme, globex)).splitlines()
    assert any(line.startswith("Acme: According to Password Standard") and "12 characters" in line for line in lines)
    assert any(line.startswith("Globex: According to Passwords") and "15 characters" in line for line in lines)
    # One organisation's passages: no names.
    assert (await _shown(embedder, question, acme)).startswith("According to Password Standard")
    # An organisation none of whose sentences answers is left out.
    printers = replace(globex, text="# Printers\n\nThe printers on each floor are serviced every Tuesday.\n")
    shown = await _shown(embedder, question, acme, printers)
    assert not any(line.startswith("Globex") for line in shown.splitlines()) and "12 characters" in shown


async def test_the_gate_s_reading_and_the_answer_choose_once(embedder: Embedder) -> None:
    chosen: list[str] = []

    class Counting(ExtractiveAnswerer):
        async def _choose(self, question, language, candidates, min_score):  # type: ignore[no-untyped-def]
            chosen.append(question)
            return await super()._choose(question, language, candidates, min_score)

    answerer = Counting(embedder=embedder, judge=shared_judge())
    question = "How much does staff parking cost per month?"
    passage = _passage("facilities/parking", "Parking", TEXT, score=0.8)
    reading = await answerer.judge_passages(question, [passage], 0.1)
    assert reading["ok"] and reading["answering"] == [passage.chunk_id]
    request = AnswerRequest(question=question, language="en", passages=[passage], min_score=0.1, messages=[])
    shown = (await answerer.respond(request)).message.content
    assert "USD 40" in str(shown) and chosen == [question]
    await answerer.judge_passages(question, [replace(passage, score=0.7)], 0.1)  # other passages: chosen anew
    assert len(chosen) == 2


async def test_prepared_answer_vectors_leave_only_the_question_to_encode(handbook: Services) -> None:
    catalog, embedder = handbook.catalog, handbook.embedder
    pending = await catalog.chunks_without_answer_vectors(limit=10_000, scheme=CANDIDATE_SCHEME)
    assert pending
    prepared = 0
    while (batch := await prepare_answer_vectors(catalog, embedder, limit=40)):
        prepared += batch
    assert prepared == len(pending)
    assert await catalog.chunks_without_answer_vectors(limit=10, scheme=CANDIDATE_SCHEME) == []
    # vectors prepared for an older reading of the sentences are prepared again
    assert len(await catalog.chunks_without_answer_vectors(limit=10_000, scheme=CANDIDATE_SCHEME + 1)) == prepared

    question = "What is the nightly hotel limit in London?"
    result = await handbook.searcher.search(question, handbook.access.resolve_cli(None))
    request = AnswerRequest(question=question, language="en", passages=result.passages,
                            min_score=result.min_score, messages=[])
    counting = CountingEmbedder(embedder)
    fast = _answerer(counting, prepared_vectors=lambda ids: catalog.load_answer_vectors(chunk_ids=ids),
                     stored_vectors=lambda ids: catalog.load_vectors(chunk_ids=ids))
    got = str((await fast.respond(request)).message.content)
    assert "GBP 210" in got, got
    assert [len(batch) for batch in counting.encoded if batch] == [1]  # the question, nothing else


async def test_removed_versions_take_their_prepared_vectors_with_them(handbook: Services) -> None:
    catalog = handbook.catalog
    while await prepare_answer_vectors(catalog, handbook.embedder, limit=64):
        pass
    travel = [c for c in await catalog.version_chunks(tenant_id="larkspur", doc_id="finance/travel", version="v1")]
    assert await catalog.load_answer_vectors(chunk_ids=[c.chunk_id for c in travel])
    assert await handbook.ingestor.withdraw(tenant_id="larkspur", doc_id="finance/travel")
    assert await catalog.load_answer_vectors(chunk_ids=[c.chunk_id for c in travel]) == {}
