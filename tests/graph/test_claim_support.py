"""The support check: a factual sentence must be supported by a sentence of a chunk it cites.

The validator is model-free (the check is injected); the judge's reading of claims is tested with the
shipped weights, on passages written here.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from graph.answerers.judging import ClaimSupport, shortlist
from graph.validate import validate_answer
from models.judge import Judge, shared_judge
from retrieval.search import Passage

HOTELS = "larkspur:finance/travel:v1:0002"
LEAVE = "larkspur:hr/leave:v1:0001"
SENT = [HOTELS, LEAVE]


def passage(chunk_id: str, heading: str, body: str) -> Passage:
    return Passage(chunk_id=chunk_id, doc_id=chunk_id.split(":")[1], version="v1", title=heading.split(" > ")[0],
                   source_path=f"{chunk_id.split(':')[1]}.md", page=None, heading=heading, text=f"{heading}\n{body}",
                   score=0.7, rrf=0.03, owner=None, policy_id=None, lang="en")


PASSAGES = [
    passage(HOTELS, "Travel and Expenses Policy > Hotels",
            "Book hotels through the travel portal. The nightly hotel limit in London is GBP 210, including taxes. "
            "Breakfast is included where the hotel offers it; minibar and spa charges are personal."),
    passage(LEAVE, "Leave Policy > Annual Leave",
            "Full-time employees receive 25 days of paid annual leave per calendar year. Up to 5 unused days may "
            "be carried over to the next year and must be taken by 31 March."),
]
TEXTS = {p.chunk_id: p.text for p in PASSAGES}


class Recorded:
    """A support check that says no to sentences holding `refuse`, and records what it was asked."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse
        self.asked: list[tuple[str, list[str]]] = []

    def __call__(self, sentence: str, chunk_ids: Sequence[str]) -> tuple[bool, float]:
        self.asked.append((sentence, list(chunk_ids)))
        return (self.refuse not in sentence, 0.01 if self.refuse in sentence else 0.9)


def test_an_unsupported_sentence_fails_by_its_position_and_never_its_text() -> None:
    check = Recorded(refuse="spa")
    draft = (f"Hi! The nightly hotel limit in London is GBP 210 [{HOTELS}]. "
             f"Employees may book a spa treatment on any trip [{HOTELS}].")
    verdict = validate_answer(draft, SENT, texts=TEXTS, support=check)
    assert (verdict.ok, verdict.reason) == (False, "answer_validation_failed")
    assert verdict.problems == [{"kind": "unsupported_sentence", "sentence": 2, "support": 0.01}]
    assert "spa" not in str(verdict.as_dict())
    # each factual, cited sentence is read once, without its citation; a greeting is not read
    assert check.asked == [("The nightly hotel limit in London is GBP 210.", [HOTELS]),
                           ("Employees may book a spa treatment on any trip.", [HOTELS])]


def test_a_sentence_whose_figure_fails_is_not_read_for_support_and_uncited_ones_are_not_read() -> None:
    check = Recorded(refuse="nothing")
    verdict = validate_answer(f"The limit in London is GBP 999 [{HOTELS}]. Spa visits are reimbursed.", SENT,
                              texts=TEXTS, support=check)
    assert [p["kind"] for p in verdict.problems] == ["unsupported_number", "uncited_sentence"]
    assert check.asked == []


def test_without_a_support_check_the_validator_is_as_before() -> None:
    draft = f"Employees may book a spa treatment on any trip [{HOTELS}]."
    assert validate_answer(draft, SENT, texts=TEXTS).ok


@pytest.fixture(scope="module")
def judge() -> Judge:
    return shared_judge()


@pytest.mark.slow
@pytest.mark.parametrize("sentence", [
    "The nightly hotel limit in London is GBP 210, including taxes.",  # a quote
    "According to the travel policy, hotels in London are capped at GBP 210 a night including taxes.",
    "Minibar and spa charges are personal.",
])
def test_a_faithful_sentence_is_supported_by_the_chunk_it_cites(judge: Judge, sentence: str) -> None:
    support = ClaimSupport(judge, None, PASSAGES)
    verdict = validate_answer(f"{sentence} [{HOTELS}]", SENT, texts=TEXTS, support=support)
    assert verdict.ok, (verdict.problems, support(sentence, [HOTELS]))


@pytest.mark.slow
@pytest.mark.parametrize("sentence", [
    "Employees may fly business class on long flights.",
    "Unused sick days are paid out when an employee leaves the company.",
])
def test_a_sentence_the_cited_chunk_does_not_say_fails(judge: Judge, sentence: str) -> None:
    support = ClaimSupport(judge, None, PASSAGES)
    verdict = validate_answer(f"{sentence} [{HOTELS}]", SENT, texts=TEXTS, support=support)
    assert [p["kind"] for p in verdict.problems] == ["unsupported_sentence"], support(sentence, [HOTELS])
    assert verdict.problems[0]["support"] < judge.support_at


@pytest.mark.slow
def test_the_support_check_reads_a_shortlist_of_the_cited_chunks_only(judge: Judge) -> None:
    long = passage("larkspur:finance/long:v1:0001", "Travel > Everything",
                   " ".join(f"Rule {i} covers the handling of item {i} on a trip." for i in range(20))
                   + " The nightly hotel limit in London is GBP 210.")
    picked = shortlist("The hotel limit in London is GBP 210 a night.", [long],
                       [[f"Rule {i} covers the handling of item {i} on a trip." for i in range(20)]
                        + ["The nightly hotel limit in London is GBP 210."]], 4)
    assert len(picked) == 4 and picked[0][1] == "The nightly hotel limit in London is GBP 210."
    supported, best = ClaimSupport(judge, None, [long, *PASSAGES])("The hotel limit in London is GBP 210 a night.",
                                                                   [long.chunk_id])
    assert supported and best >= judge.support_at
    # a chunk that was not cited supports nothing, however well it would read
    supported, best = ClaimSupport(judge, None, PASSAGES)("The nightly hotel limit in London is GBP 210.", [LEAVE])
    assert not supported and best < judge.support_at
