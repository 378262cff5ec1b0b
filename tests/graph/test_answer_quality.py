"""The answer shown is the fact asked for: each failure class seen on the sample handbook, as a
full turn (real graph, retrieval, models, the shipped answer judge), judged on what the user would read."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.services import Services
from models.judge import Judge
from retrieval.embed import Embedder
from tests.conftest import handbook_copy

pytestmark = pytest.mark.slow
# What the shipped judge still reads wrongly: a retrained judge that reads it right turns the test red, to be unmarked.
JUDGE_MISS = pytest.mark.xfail(strict=True, reason="the shipped answer judge misreads this question")


@pytest.fixture(scope="module")
async def svc(tmp_path_factory: pytest.TempPathFactory, handbook_template: Path,
              embedder: Embedder) -> AsyncIterator[Services]:
    async with handbook_copy(handbook_template, tmp_path_factory.mktemp("quality") / "home", embedder) as services:
        yield services


async def ask(svc: Services, question: str, who: str = "bob"):
    n = getattr(svc, "_quality_turns", 0) + 1
    svc._quality_turns = n  # type: ignore[attr-defined]
    return await svc.runner.ask(session_id=f"quality-{n}", scope=svc.access.resolve_cli(who), question=question)


def quoted(answer: str) -> list[str]:
    return re.findall(r"[“«]([^”»]+)[”»]", answer)


async def test_the_superseding_notice_gives_the_mileage_rate_in_force(svc: Services) -> None:
    out = await ask(svc, "What is the mileage rate?")
    assert out.route == "answer", out.reason
    assert "0.62" in out.answer and "0.58" not in out.answer


@pytest.mark.parametrize("question", [
    "What is the hotel limit per night in Boston?",
    "ما هو الحد الأقصى لسعر الفندق في بوسطن لليلة الواحدة؟",
    "hey, quick one - I'm heading to Boston next month to see a supplier and I'm wondering what the most is "
    "that I can spend on a hotel each night?",
    "Outside trade-show weeks, what is the Boston hotel limit?",
])
async def test_the_two_boston_limits_conflict_in_any_wording_or_language(svc: Services, question: str) -> None:
    out = await ask(svc, question)
    assert (out.route, out.reason) == ("escalate", "conflicting_sources"), out.answer
    assert "320" not in (out.answer or "")


async def test_a_question_that_names_no_city_gets_the_table_of_limits_by_city(svc: Services) -> None:
    """The judge reads every row of the nightly limits as answering "per night" alike: the answer is the
    table, once under its lead-in, not one row, the "per room" sentence beside it, or the events guide's
    Boston figure that conflicts with the table's."""
    out = await ask(svc, "What is the hotel limit per night?")
    assert out.route == "answer", out.reason
    rows = quoted(out.answer)
    assert rows[0].endswith("nightly limits, before taxes and resort fees:")
    assert [r.split(";")[0] for r in rows[1:]] == ["City: Boston", "City: New York", "City: London", "City: Dubai",
                                                   "City: Riyadh", "City: Any other city"]
    assert "USD 275" not in out.answer and "per room" not in out.answer
    one = await ask(svc, "What is the hotel limit in London?")
    assert one.route == "answer" and quoted(one.answer) == [
        "The company pays up to the following nightly limits, before taxes and resort fees: City: London; "
        "Nightly limit: GBP 210"]


async def test_inside_the_trade_show_week_the_exception_answers(svc: Services) -> None:
    out = await ask(svc, "What is the Boston hotel limit during a trade-show week?")
    assert out.route == "answer" and "USD 320" in out.answer


@pytest.mark.parametrize(("question", "facts"), [
    pytest.param("A customer's jacket is faulty after 8 months. What can we offer?",
                 ("1-year quality guarantee", "United Kingdom"), marks=JUDGE_MISS),  # escalates: p < threshold
    ("What is the meals per diem in Riyadh?", ("SAR 280",)),
    pytest.param("What kind of MFA do people in Finance have to use?", ("hardware security key", "Finance"),
                 marks=JUDGE_MISS),  # escalates: p < threshold
])
async def test_a_rule_is_quoted_with_its_scope(svc: Services, question: str, facts: tuple[str, ...]) -> None:
    out = await ask(svc, question)
    assert all(fact in out.answer for fact in facts), out.answer


async def test_the_sentence_that_answers_beats_the_one_that_restates_the_question(svc: Services) -> None:
    out = await ask(svc, "From which day of sick leave do I need a medical certificate?")
    assert "4th day" in out.answer


@pytest.mark.parametrize("question", ["How long do I have to return something?", "What if I lost my receipt?",
                                      "Can I return an online order to a store?"])
async def test_an_faq_question_is_never_quoted_as_the_answer(svc: Services, question: str) -> None:
    out = await ask(svc, question, who="carla")
    assert out.route == "answer"
    assert quoted(out.answer) and not any(q.rstrip().endswith("?") for q in quoted(out.answer))


@pytest.mark.parametrize("question", [
    # Read as answered by the annual-leave carry-over (0.88) and the family bereavement rule (0.64).
    pytest.param("Can I carry over unused sick days to next year?", marks=JUDGE_MISS),
    pytest.param("Do I get bereavement leave if my pet dies?", marks=JUDGE_MISS),
    "How many days of annual leave do interns get?",
])
async def test_a_near_miss_escalates_on_the_judge_s_reading(svc: Services, question: str) -> None:
    out = await ask(svc, question)
    assert (out.route, out.reason) == ("escalate", "below_score_floor"), out.answer
    turn = await svc.conversations.get_turn(turn_id=out.turn_id)
    assert turn is not None
    reading = turn.trace["searches"][0]["judge"]
    assert reading["answerable"] < reading["threshold"]


async def test_a_quote_without_the_amount_asked_for_is_never_shown(svc: Services) -> None:
    # The closest sentence says when a new badge is ready, not what it costs: the turn answers with
    # the cost or escalates.
    out = await ask(svc, "How much is a replacement badge?")
    if out.route == "answer":
        assert "USD 25" in out.answer
        return
    assert out.reason == "below_score_floor"


@pytest.mark.parametrize(("question", "fact"), [
    ("How many days of annual leave can I carry over?", "5 days"),
    ("can i roll my unused holiday into next yr?", "5 days"),
    pytest.param("I'm visiting a supplier in Denver. What's the most the company will pay for my hotel per night?",
                 "USD 180", marks=JUDGE_MISS),  # escalates: the table's rows read at 0.12
    ("My flight to Dubai is 12 hours. Can I book premium economy?", "premium economy"),
])
async def test_the_same_gate_leaves_answerable_questions_alone(svc: Services, question: str, fact: str) -> None:
    out = await ask(svc, question)
    assert out.route == "answer" and fact in out.answer, (out.reason, out.answer)


async def test_asking_for_hr_to_call_is_a_request_for_a_person(svc: Services) -> None:
    out = await ask(svc, "I need someone from HR to call me, not a bot")
    assert (out.route, out.reason) == ("escalate", "user_requested_human")


ANNUAL_LEAVE = "How many days of annual leave do full-time staff get?"


async def test_the_judge_reads_what_the_answer_quotes_and_the_trace_says_so(svc: Services) -> None:
    out = await ask(svc, ANNUAL_LEAVE)
    assert out.route == "answer", out.reason
    reading = [s["judge"] for s in out.trace["searches"] if s.get("judge")][-1]
    assert reading["threshold"] == svc.answerer.judge.answerable_at  # type: ignore[attr-defined]
    assert reading["answerable"] >= reading["threshold"]
    read = [s for s in reading["sentences"] if s["quoted"]]
    assert read and len(reading["sentences"]) > len(read)  # it read others besides those quoted
    assert all(0.0 <= s["probability"] <= 1.0 for s in reading["sentences"])
    shown = quoted(out.answer)
    assert any(q["text"].startswith(text[:40]) or text.startswith(q["text"][:40]) for q in read for text in shown)
    assert reading["answerable"] == max(s["probability"] for s in read)


async def test_a_reading_under_the_threshold_escalates_with_the_reason_the_floor_gives(svc: Services) -> None:
    answerer = svc.answerer
    strict = Judge()
    strict.answerable_at = 0.999  # nothing the shipped judge reads reaches it
    kept = answerer.judge  # type: ignore[attr-defined]
    answerer.judge = strict  # type: ignore[attr-defined]
    try:
        out = await ask(svc, ANNUAL_LEAVE + " (full-time, please)")
    finally:
        answerer.judge = kept  # type: ignore[attr-defined]
    assert (out.route, out.reason) == ("escalate", "below_score_floor"), out.answer
    reading = [s["judge"] for s in out.trace["searches"] if s.get("judge")][-1]
    assert reading["answerable"] < 0.999 and reading["threshold"] == 0.999


async def test_without_a_judge_the_turn_answers_as_before_and_has_no_reading(svc: Services) -> None:
    answerer = svc.answerer
    kept = answerer.judge  # type: ignore[attr-defined]
    answerer.judge = None  # type: ignore[attr-defined]
    try:
        out = await ask(svc, "What is the mileage rate per mile?")
    finally:
        answerer.judge = kept  # type: ignore[attr-defined]
    assert out.route == "answer" and "0.62" in out.answer
    assert not any(s.get("judge") for s in out.trace["searches"])


def test_a_reading_is_ok_only_at_or_above_its_threshold() -> None:
    from graph.answerers.extractive import JudgeReading

    at = JudgeReading(0.5, 0.7, 0.5, [])
    assert at.ok and not at._replace(answerable=0.49).ok
    assert at.trace() == {"answerable": 0.5, "best": 0.7, "threshold": 0.5, "sentences": []}
