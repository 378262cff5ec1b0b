"""The conflict detector on hand-made pairs: it must fire on real contradictions and stay quiet
on pairs an ordering rule settles (scope, later effective date, supersedes, agreement)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from qdrant_edge import Bm25, Bm25Config

from retrieval.conflicts import detect_conflicts, extract_quantities

_EN = Bm25(Bm25Config(language="english"))


def terms(text: str) -> set[int]:
    return set(_EN.embed_query(text).indices)


@dataclass(frozen=True)
class P:
    chunk_id: str
    doc_id: str
    text: str
    heading: str = "Policy"
    title: str = "Policy"
    version: str = "v1"
    effective_at: str | None = "2025-01-01T00:00:00+00:00"


def passage(doc: str, body: str, **kw: object) -> P:
    return P(chunk_id=f"t:{doc}:v1:0000", doc_id=doc, text=f"{kw.get('heading', 'Policy')}\n{body}", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("sentence", "expected"), [
    ("The nightly limit is USD 250.", [("USD", 250.0)]),
    ("Claim $1,250 at most.", [("USD", 1250.0)]),
    ("You get 25 days of leave.", [("day", 25.0)]),
    ("Up to 15% above the limit.", [("percent", 15.0)]),
    ("Mileage is USD 0.62 per mile.", [("USD/mile", 0.62)]),
    ("The allowance is 900 AED.", [("AED", 900.0)]),
    ("Report within 1 hour.", [("hour", 1.0)]),
    ("No numbers here.", []),
])
def test_extract_quantities(sentence: str, expected: list[tuple[str, float]]) -> None:
    assert [(u, v) for u, v, _ in extract_quantities(sentence)] == expected


CONFLICTS = [
    ("What is the nightly hotel limit in Boston?",
     passage("travel", "Boston | USD 250", heading="Hotels"),
     passage("events", "The nightly hotel limit in Boston is USD 275 for all staff.")),
    ("How many days of annual leave do I get?",
     passage("leave", "Every employee gets 25 days of annual leave."),
     passage("handbook", "Annual leave is 22 days for everyone.")),
    ("What percentage is the staff discount?",
     passage("retail", "The staff discount is 25% on full-price items."),
     passage("benefits", "Staff discount: 20% on everything.")),
]

NOT_CONFLICTS = [
    # an exception that names its scope
    ("What is the hotel limit in Boston?",
     passage("travel", "The hotel limit in Boston is USD 250."),
     passage("events", "During trade-show weeks the hotel limit in Boston rises to USD 320.")),
    # a later effective date orders them
    ("What is the mileage rate?",
     passage("travel", "Mileage is paid at USD 0.58 per mile.", effective_at="2025-01-01T00:00:00+00:00"),
     passage("mileage-2026", "Mileage is paid at USD 0.62 per mile.", effective_at="2026-07-01T00:00:00+00:00")),
    # explicit supersedes, same effective date
    ("What is the mileage rate?",
     passage("travel", "Mileage is paid at USD 0.58 per mile."),
     passage("notice", "This notice supersedes the old rate: mileage is paid at USD 0.62 per mile.")),
    # different subjects (London vs Boston) share a unit
    ("What is the hotel limit in Boston?",
     passage("travel", "The hotel limit in Boston is USD 250."),
     passage("uk", "The hotel limit in London is GBP 210 and meals are GBP 60.")),
    # same value
    ("What is the hotel limit in Boston?",
     passage("travel", "The hotel limit in Boston is USD 250."),
     passage("events", "In Boston the hotel limit is USD 250 per night.")),
    # two values in one document are that document's business
    ("What is the hotel limit in Boston?",
     passage("travel", "The hotel limit in Boston is USD 250. In Boston the hotel limit was USD 230 in 2024."),
     passage("events", "Book a hotel in Boston early.")),
    # agreement on the deadline; the other number is a different cut-off
    ("How long do I have to submit an expense claim?",
     passage("travel", "Submit every expense claim within 30 days. Claims older than 60 days need approval."),
     passage("events", "Submit your expense claim within 30 days.")),
]


@pytest.mark.parametrize(("question", "a", "b"), CONFLICTS)
def test_fires_on_contradictions(question: str, a: P, b: P) -> None:
    report = detect_conflicts(question, [a, b], terms_of=terms)
    assert report.found, report
    assert {report.conflicts[0].first.doc_id, report.conflicts[0].second.doc_id} == {a.doc_id, b.doc_id}


@pytest.mark.parametrize(("question", "a", "b"), NOT_CONFLICTS)
def test_quiet_on_ordered_or_unrelated_pairs(question: str, a: P, b: P) -> None:
    assert not detect_conflicts(question, [a, b], terms_of=terms).found


def test_ordering_reports_the_passage_that_loses() -> None:
    old = passage("travel", "Mileage is paid at USD 0.58 per mile.", effective_at="2025-01-01T00:00:00+00:00")
    new = passage("mileage-2026", "Mileage is paid at USD 0.62 per mile.", effective_at="2026-07-01T00:00:00+00:00")
    report = detect_conflicts("What is the mileage rate?", [old, new], terms_of=terms)
    assert report.overridden == {old.chunk_id}


def test_catalog_supersedes_orders_the_pair() -> None:
    a = passage("travel", "The hotel limit in Boston is USD 250.")
    b = passage("events", "The hotel limit in Boston is USD 275.")
    report = detect_conflicts("What is the hotel limit in Boston?", [a, b], terms_of=terms,
                              supersedes=lambda x, y: (x, y) == ("events", "travel"))
    assert not report.found and report.overridden == {a.chunk_id}
