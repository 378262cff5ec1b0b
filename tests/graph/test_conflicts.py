"""Conflicting sources on the sample handbook: the deliberate Boston conflict escalates with
`conflicting_sources` and both passages; the ordered pairs (a scoped exception, a later effective
date) are answered with the value that applies."""

from __future__ import annotations

from graph.messages import abstention
from tests.graph.conftest import LONDON, bob


async def test_boston_hotel_limit_conflict_is_held_and_escalated(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-conflict", scope=bob(svc),
                                   question="What is the nightly hotel limit in Boston?")
        escalation = await svc.conversations.get_escalation(escalation_id=out.escalation.escalation_id)
    assert (out.route, out.reason) == ("escalate", "conflicting_sources")
    # the proposed answer is held: the user sees only the fixed message
    assert out.answer == abstention("conflicting_sources", "en")
    assert "250" not in out.answer and "275" not in out.answer
    payload = out.interrupt
    assert payload is not None and payload["reason"] == "conflicting_sources"
    values = {v for c in payload["conflicts"] for v in c["values"]}
    assert {"USD 250", "USD 275"} <= values
    contested = {p["doc_id"]: p for p in escalation.passages if p.get("conflict")}
    assert set(contested) >= {"finance/travel", "ops/events-travel"}
    # owners and versions travel with each side, for the thread's side-by-side view
    assert contested["finance/travel"]["owner"] == "#travel-team"
    assert contested["ops/events-travel"]["owner"] == "#events-team"
    assert all(p["version"] and p["effective_at"] for p in contested.values())


async def test_scoped_exception_is_not_a_conflict(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-tradeshow", scope=bob(svc),
                                   question="What is the hotel limit in Boston during trade-show weeks?")
    assert (out.route, out.reason) == ("answer", None)
    assert "USD 320" in out.answer and "[larkspur:finance/travel:" in out.answer


async def test_later_effective_date_orders_the_pair(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-mileage", scope=bob(svc),
                                   question="How much is the mileage reimbursement per mile?")
    assert (out.route, out.reason) == ("answer", None)
    assert "0.62" in out.answer and "[larkspur:finance/mileage-2026:" in out.answer
    # the superseded travel-policy mileage passage is not quoted
    assert "[larkspur:finance/travel:" not in out.answer


async def test_supersedes_orders_the_pair_when_the_old_policy_says_less_of_the_question(open_home) -> None:
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-mileage-car", scope=bob(svc),
                                   question="What is the current mileage rate for driving my own car on company "
                                            "business?")
    assert (out.route, out.reason) == ("answer", None)
    assert "0.62" in out.answer and "[larkspur:finance/travel:" not in out.answer


async def test_another_city_is_not_held_by_the_boston_conflict(open_home) -> None:
    # The London question retrieves both Boston passages (same table, same "nightly hotel limit"
    # words); their own subject is Boston, not what was asked.
    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-london", scope=bob(svc), question=LONDON)
    assert (out.route, out.reason) == ("answer", None) and out.interrupt is None
    assert "GBP 210" in out.answer
