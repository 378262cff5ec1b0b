"""The conflict detector on hand-made pairs: it must fire on real contradictions and stay quiet
on pairs an ordering rule settles (scope, later effective date, supersedes, agreement)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from qdrant_edge import Bm25, Bm25Config

from retrieval.conflicts import (
    ConflictReport,
    _bound,
    _Lexicon,
    _sentence_subject,
    detect_conflicts,
    extract_quantities,
)

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
    ("The home office budget is CAD 500.", [("CAD", 500.0)]),  # any currency of the one list
    ("Claim up to 1,000 Swiss francs or CHF 1,000.", [("CHF", 1000.0)]),
    ("Report within 1 hour.", [("hour", 1.0)]),
    ("No numbers here.", []),
])
def test_extract_quantities(sentence: str, expected: list[tuple[str, float]]) -> None:
    assert [(u, v) for u, v, _ in extract_quantities(sentence)] == expected


CONFLICTS = [
    ("What is the home office budget in Canada?",
     passage("canada-benefits", "The home office budget in Canada is CAD 500."),
     passage("remote-work", "The home office budget in Canada is CAD 600 for all staff.")),
    ("What is the nightly hotel limit in Boston?",
     passage("travel", "Boston | USD 250", heading="Hotels"),
     passage("events", "The nightly hotel limit in Boston is USD 275 for all staff.")),
    ("How many days of annual leave do I get?",
     passage("leave", "Every employee gets 25 days of annual leave."),
     passage("handbook", "Annual leave is 22 days for everyone.")),
    ("What percentage is the staff discount?",
     passage("retail", "The staff discount is 25% on full-price items."),
     passage("benefits", "Staff discount: 20% on everything.")),
    # the same subject in other words on each side
    ("How many weeks of parental leave do I get?",
     passage("hr/parental", "Parental leave is 16 weeks."),
     passage("hr/handbook", "Every new parent gets 12 weeks of parental leave.")),
    # a table row read under its column header
    ("What is the nightly hotel limit in Boston?",
     passage("finance/travel", "City | Nightly limit\nBoston | USD 250\nLondon | GBP 210", heading="Hotels"),
     passage("ops/events", "The nightly hotel limit in Boston is USD 275.")),
    # two bounds of the same kind disagree
    ("Above what amount do I need a receipt for an expense?",
     passage("finance/expenses", "Receipts are required for expenses over USD 50."),
     passage("finance/cards", "Keep a receipt for any expense over USD 25.")),
    # two collections in one tenant (say, two companies' handbooks): nothing says which applies
    ("How much is the monthly coworking allowance?",
     passage("acme/perks", "The coworking allowance is USD 200 per month."),
     passage("globex/perks", "The coworking allowance is USD 350 per month.")),
    # a passage that mentions something "replaced" does not claim to supersede the other
    ("What is the laptop repair budget?",
     passage("it/laptops", "The laptop repair budget is USD 300. A cracked screen is replaced by the IT desk."),
     passage("finance/equipment", "The laptop repair budget is USD 400.")),
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
    # each number has its own subject: a leave of absence is not parental leave
    ("How many weeks of parental leave can I take?",
     passage("hr/absence", "Staff may take up to 12 weeks of leave of absence for personal reasons, excluding "
                           "parental leave."),
     passage("hr/parental", "Parents receive 16 weeks of parental leave on full pay.")),
    ("Am I eligible for parental leave?",
     passage("hr/absence", "You qualify if you have not used 10 weeks of sick leave (not parental leave) this year."),
     passage("hr/parental", "You qualify as long as you have not used the 18 weeks of parental leave this year.")),
    # different benefits of one kind: the other number's own subject is not what was asked
    ("How much life cover does the company give?",
     passage("benefits/global", "Where no local scheme exists, the company gives $20,000 in life cover to a "
                                "beneficiary you name."),
     passage("benefits/us", "For US staff the company gives life cover of twice base salary, with a maximum "
                            "payout of $500,000.")),
    # a bound is a condition, not the value asked: "over $75" vs a flat $25
    ("Above what amount do I have to upload a receipt for a purchase?",
     passage("perks", "Upload receipts for purchases over $75 every month."),
     passage("payables", "Card purchases: for purchases on company cards $25, attach an itemised receipt.")),
    ("How many weeks of paid parental leave do we get?",
     passage("benefits/au", "Eligible carers can get up to 20 weeks of government parental leave pay."),
     passage("hr/parental", "The top-up applies to any period of parental leave that is >3 weeks.")),
    # one number without a subject of its own, the other's subject not among its words: two benefits
    ("Is there a salary floor at Acme? What is it?",
     passage("careers", "Acme pays at the top 10% for our industry at San Francisco salary levels."),
     passage("benefits", "Acme matches what you contribute, up to 6% of your salary.")),
    # a table row about another city, found through the column header the question shares
    ("What is the nightly hotel limit in London?",
     passage("finance/travel", "Boston | USD 250\nLondon | GBP 210", heading="Nightly hotel limits"),
     passage("ops/events", "The nightly hotel limit in Boston is USD 275.")),
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


def test_quantities_keep_their_own_subject_and_bound() -> None:
    leave = passage("hr/absence", "You may take 12 weeks of leave of absence.")
    parental = passage("hr/parental", "Parental leave is 16 weeks.")
    receipts = passage("finance/expenses", "Keep receipts for purchases over $75.")
    report = detect_conflicts("How many weeks of leave can I take?", [leave, parental], terms_of=terms)
    assert not report.found  # "leave of absence" vs "parental leave"
    lexicon = _Lexicon(terms)
    subject, near = _sentence_subject("You may take 12 weeks of leave of absence.", 13, 21, lexicon)
    assert subject == terms("leave absence") and subject <= near
    assert _sentence_subject("Parental leave is 16 weeks.", 18, 26, lexicon)[0] == terms("parental leave")
    assert _bound("Keep receipts for purchases over ") == ">" and _bound("Keep receipts for ") == ""
    assert not detect_conflicts("Do I need a receipt?", [receipts, parental], terms_of=terms).found


def test_a_narrower_question_is_not_held_by_the_general_conflict() -> None:
    # Boston's general limit is contested (250 vs 275), but the question asks about trade-show
    # weeks, which one scoped sentence answers on its own.
    table = passage("finance/travel", "City | Nightly limit\nBoston | USD 250", heading="Hotels")
    events = passage("ops/events", "The nightly hotel limit in Boston is USD 275.")
    exception = passage("finance/exceptions", "During trade-show weeks the nightly hotel limit in Boston is USD 330.")
    both = [table, events, exception]
    assert not detect_conflicts("What is the hotel limit in Boston during trade-show weeks?", both,
                                terms_of=terms).found
    assert detect_conflicts("What is the nightly hotel limit in Boston?", both, terms_of=terms).found


def test_supersedes_orders_a_pair_that_shares_little_wording() -> None:
    # The old policy says far less of the question than the notice does; the notice still wins.
    notice = passage("finance/mileage-notice", "Staff who drive their own car on company business are paid "
                     "USD 0.64 per mile. This notice supersedes the old rate.", heading="Mileage rate notice")
    old = passage("finance/travel", "You may claim mileage at USD 0.55 per mile.", heading="Travel policy")
    report = detect_conflicts("What is the current mileage rate for driving my own car on company business?",
                              [notice, old], terms_of=terms)
    assert not report.found and report.overridden == {old.chunk_id}


def test_catalog_supersedes_orders_the_pair() -> None:
    a = passage("travel", "The hotel limit in Boston is USD 250.")
    b = passage("events", "The hotel limit in Boston is USD 275.")
    report = detect_conflicts("What is the hotel limit in Boston?", [a, b], terms_of=terms,
                              supersedes=lambda x, y: (x, y) == ("events", "travel"))
    assert not report.found and report.overridden == {a.chunk_id}


def test_a_statement_without_a_quantity_is_not_analysed() -> None:
    """Only statements that state a quantity can conflict, so only theirs are looked up."""
    from types import SimpleNamespace

    seen: list[str] = []

    def terms(text: str) -> set[int]:
        seen.append(text)
        return {hash(w) for w in text.lower().replace(".", " ").split() if len(w) > 3}

    passages = [SimpleNamespace(chunk_id=f"t:{d}:v1:0000", doc_id=d, version="v1", title=d, heading=f"{d} > Leave",
                                text=f"{d} > Leave\nParental leave is generous here. Parental leave is {n} weeks.",
                                effective_at=None) for d, n in (("a", 12), ("b", 16))]
    report = detect_conflicts("How many weeks of parental leave?", passages, terms_of=terms)
    assert report.found and report.conflicts[0].unit == "week"
    assert "Parental leave is generous here." not in seen


def test_passages_without_quantities_or_superseding_are_not_analysed() -> None:
    from types import SimpleNamespace

    seen: list[str] = []

    def terms(text: str) -> set[int]:
        seen.append(text)
        return {hash(w) for w in text.lower().split()}

    passages = [SimpleNamespace(chunk_id=f"t:{d}:v1:0000", doc_id=d, version="v1", title=d, heading=f"{d} > Leave",
                                text=f"{d} > Leave\nParental leave is generous here.", effective_at=None)
                for d in ("a", "b")]
    assert detect_conflicts("How much parental leave?", passages, terms_of=terms) == ConflictReport()
    assert seen == []
