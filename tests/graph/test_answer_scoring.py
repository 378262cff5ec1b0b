"""The `answers` bench's scoring: does the answer shown contain the fact asked for?"""

from __future__ import annotations

import pytest

from bench.answer_scoring import contains_fact, normalise
from bench.answers import Case, Turn, gold_at, split_of
from retrieval.search import Passage

CITE = "[larkspur:finance/travel:v1:0002]"


@pytest.mark.parametrize("answer, gold", [
    ("The nightly limit in London is GBP 210 per night.", "GBP 210"),
    ("Hotels are reimbursable up to $300 USD per night.", "USD 300"),
    ("Hotels are reimbursable up to 300 USD per night.", "$300"),
    ("Hotels are reimbursable up to US$300 per night.", "300 dollars"),
    ("A stipend of 1,500 USD.", "$1500"),
    ("You may exceed it by up to 15 %.", "15%"),
    ("You may exceed it by up to 15 percent.", "15%"),
    ("الحد الأقصى ٢١٠ جنيه", "210"),
    ("“Itemized receipts must be included for any request over $25.” " + CITE, "over $25"),
    ("The RATE is USD 0.62 per mile.", "usd 0.62 per mile"),
    ("Up to $500 AUD per month.", "AUD 500"),
    ("Core hours are 10:00 to 15:00.", "10:00 to 15:00"),
    ("GitLab’s 16-week paid Parental Leave.", "16 weeks"),  # one unit, however it is joined
    ("Up to 4 weeks of paid leave.", "4 week"),
    ("ISOs: three (3) months after leaving to exercise them.", "3 months"),  # as contracts write numbers
    ("You have twenty-one (21) days to sign.", "21 days"),
    ("يُشترط تقديم الطلب قبل موعد السفر بخمسة عشر (15) يوم عمل", "قبل موعد السفر بخمسة عشر (15) يوم عمل"),
])
def test_the_fact_is_found_whatever_its_spelling(answer: str, gold: str) -> None:
    assert contains_fact(answer, [gold])


@pytest.mark.parametrize("answer, gold", [
    ("The limit is $2,500 per year.", "$250"),      # a number inside a longer number is not it
    ("The limit is USD 250.", "GBP 250"),          # another currency
    ("The old rate was USD 0.58 per mile.", "USD 0.62"),
    ("Claims are due within 3 days.", "30 days"),
    ("A 3-week trip.", "3 days"),
    ("Fifteen days.", "15 days"),                   # the bench scores digits; the gold spells what the page spells
    (None, "USD 250"),
    ("", "USD 250"),
])
def test_a_different_fact_is_not_the_fact(answer: str | None, gold: str) -> None:
    assert not contains_fact(answer, [gold])


def test_only_a_number_word_gives_way_to_the_digits_in_brackets_after_it() -> None:
    assert normalise("three (3) months") == "3 month"
    assert normalise("Section (2) applies") == "section 2 applies"


def test_any_listed_alternative_counts_and_citations_never_do() -> None:
    assert contains_fact("You get sixteen weeks.", ["16 weeks", "sixteen weeks"])
    assert not contains_fact(f"See the policy {CITE}", ["0002"])
    assert normalise("GBP 9,999 " + CITE) == "gbp 9999"


def _turn(kind: str, route: str, answer: str, golds: tuple[str, ...] = ("USD 250",)) -> Turn:
    case = Case("handbooks", "h-x", "What is the limit?", kind, answers=golds if kind == "answerable" else ())
    return Turn(case, route, None if route == "answer" else "below_score_floor", answer, 10.0, 0.5, ())


def test_verdicts() -> None:
    assert _turn("answerable", "answer", "It is USD 250 a night.").verdict == "right"
    assert _turn("answerable", "answer", "Receipts are needed over USD 25.").verdict == "wrong"
    assert _turn("answerable", "escalate", "I could not find it.").verdict == "needless_escalation"
    assert _turn("near_miss", "answer", "It is USD 250 a night.").verdict == "wrong"
    assert _turn("ooc", "escalate", "I could not find it.").verdict == "correct_escalation"


def test_the_split_is_fixed_and_roughly_half() -> None:
    ids = [f"q-{i}" for i in range(400)]
    halves = [split_of("squad", i) for i in ids]
    assert halves == [split_of("squad", i) for i in ids]
    assert 150 < halves.count("tune") < 250
    assert set(halves) == {"tune", "report"}


def test_the_sets_read_our_labels() -> None:
    from bench.answers import handbook_cases, sample_cases

    sample = {c.qid: c for c in sample_cases()}
    assert sample["s-13"].answers == ("25 days",)                # our label replaces the passage start
    assert sample["s-01"].answers == ("GBP 210",)                # gold_text where it is the fact already
    assert sample["s-43"].kind == "human" and sample["s-43"].expect == "escalate"
    assert sample["x-02"].question.startswith("I need someone from HR")
    handbooks = handbook_cases()
    answerable = [c for c in handbooks if c.kind == "answerable"]
    assert answerable and all(c.answers for c in answerable)
    assert {c.kind for c in handbooks} == {"answerable", "near_miss", "ooc"}
    assert {c.lang for c in handbooks} == {"en", "ar"}
    from bench.answers import staff_cases

    staff = staff_cases()
    assert len(staff) == 190 and {c.set for c in staff} == {"staff"}
    assert sum(c.kind == "answerable" for c in staff) == 114 and all(c.answers for c in staff if c.kind == "answerable")
    assert sum(c.kind == "near_miss" for c in staff) == 46 and sum(c.kind == "ooc" for c in staff) == 30


def test_the_limit_applies_per_kind_and_split(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.answers import _limit

    cases = [Case("squad", f"q-{i}", "?", kind) for i in range(40) for kind in ("answerable", "ooc")]
    monkeypatch.setenv("CAIRN_BENCH_LIMIT", "3")
    chosen = _limit(cases, ["tune"])
    assert {c.split for c in chosen} == {"tune"}
    assert sorted(c.kind for c in chosen) == ["answerable"] * 3 + ["ooc"] * 3
    monkeypatch.delenv("CAIRN_BENCH_LIMIT")
    assert len(_limit(cases, ["tune", "report"])) == len(cases)


def _candidate(text: str, n: int) -> Passage:
    return Passage(chunk_id=f"t:hr/leave:v1:{n:04d}", doc_id="hr/leave", version="v1", title="Leave", source_path="hr/leave.md",
                   page=None, heading="Leave", text=text, score=0.5, rrf=0.03, owner=None, policy_id=None, lang="en")


def test_where_the_gold_stood_tells_answer_selection_from_retrieval() -> None:
    candidates = [_candidate(f"Filler rule number {n}.", n) for n in range(8)]
    holding = _candidate("Unused days carry over up to 5 days.", 9)
    assert gold_at([holding, *candidates], ["5 days"]) == "read"
    assert gold_at([*candidates[:3], holding, *candidates[3:]], ["5 days"]) == "read"  # the 4th of 4 read
    assert gold_at([*candidates[:4], holding], ["5 days"]) == "ranked out"
    assert gold_at([*candidates[:4], holding], ["5 days"], read=5) == "read"
    assert gold_at(candidates, ["5 days"]) == "not retrieved"
    assert gold_at([_candidate("Up to 15 days.", 0)], ["5 days"]) == "not retrieved"  # a whole run of tokens
