"""The gate on what was asked, for "will you pay for …?" questions (graph/coverage.py): the thing the
asker wants paid must be in the evidence, or the evidence is a neighbouring rule."""

from __future__ import annotations

import pytest

from graph.coverage import find_gap
from retrieval.search import Passage


def passage(text: str, heading: str, *, doc: str = "hr/benefits") -> Passage:
    return Passage(chunk_id=f"t:{doc}:v1:0000", doc_id=doc, version="v1", title=heading.split(" > ")[0],
                   source_path=f"{doc}.md", page=None, heading=heading, text=f"{heading}\n{text}", score=0.6,
                   rrf=0.03, owner=None, policy_id=None, lang="en")


HEALTH = passage("The health plan reimburses 80% of GP visits, prescriptions and physiotherapy. Dental check-ups "
                 "are covered once a year.", "Benefits > Health Plan")
TRAVEL = passage("Internet while travelling is reimbursable up to USD 50 a day. Books that help you in your role are "
                 "reimbursable up to USD 60 a year. Dry cleaning during trips of five nights or more is reimbursed.",
                 "Expenses > What you can claim", doc="finance/expenses")
RELOCATION = passage("Staff who relocate for a role receive a one-off allowance of USD 3,000 for flights and the first "
                     "month's rent.", "Relocation > Allowance", doc="hr/relocation")


@pytest.mark.parametrize(("question", "evidence", "missing"), [
    ("Does the health plan pay for hearing aids?", HEALTH, "hearing aids"),
    ("does the company pay for professional movers when i relocate", RELOCATION, "professional movers"),
    ("Will they pay for my gym membership?", HEALTH, "gym membership"),
    ("Can I expense a standing desk for my home office?", TRAVEL, "standing desk"),
    ("Is laser eye surgery covered?", HEALTH, "laser eye surgery"),
])
def test_the_thing_to_be_paid_for_must_be_in_the_evidence(question: str, evidence: Passage, missing: str) -> None:
    gap = find_gap(question, [evidence], min_score=0.3)
    assert gap is not None and gap.missing == (missing,)


@pytest.mark.parametrize(("question", "evidence"), [
    ("Can I expense a book that helps me do my job?", TRAVEL),
    ("Is hotel wifi or internet access reimbursed while I'm on a trip?", TRAVEL),  # wifi is internet; either will do
    ("Can I get my dry cleaning paid for during a work trip?", TRAVEL),
    ("Does the health plan cover dental check-ups?", HEALTH),
    ("How much does the company put towards private health cover in Australia?", HEALTH),  # cover: the noun
    ("Will the company pay for my flights when I relocate?", RELOCATION),
    ("Are prescriptions reimbursed?", HEALTH),
])
def test_a_question_about_what_the_evidence_does_pay_for_passes(question: str, evidence: Passage) -> None:
    assert find_gap(question, [evidence], min_score=0.3) is None
