"""Reminder at half the deadline, then expiry: the user is told no one answered; nothing else happens."""

from __future__ import annotations

from datetime import timedelta

from slack_sdk.web.async_client import AsyncWebClient

from bot.scheduler import build_context, expire_escalations
from bot.services import Services
from graph.messages import fixed
from store.db import iso
from store.records import Scope
from tests.escalations.conftest import NOW, Clock
from tests.escalations.slack_files import FakeSlackWithFiles

BOB = Scope(user_id="U0BOB", tenant_id="larkspur", groups=frozenset({"everyone"}))
USER_CHANNEL, USER_THREAD = "D0BOB", "1699999999.000100"


async def escalate(svc: Services, fake: FakeSlackWithFiles, client: AsyncWebClient, question: str, *,
                   session: str, created_hours_ago: float, lang: str | None = None) -> str:
    """A real escalation through the graph (its interrupt pending), with a thread in #escalations."""
    outcome = await svc.runner.ask(session_id=session, scope=BOB, question=question, surface="slack",
                                   channel=USER_CHANNEL, thread_ts=USER_THREAD, lang=lang)
    assert outcome.route == "escalate" and outcome.escalation is not None, outcome
    esc = outcome.escalation
    root = await client.chat_postMessage(channel="C0ESC", text=f"Escalation {esc.escalation_id}")
    await svc.conversations.set_thread(escalation_id=esc.escalation_id, channel="C0ESC", thread_ts=root["ts"])
    created = NOW - timedelta(hours=created_hours_ago)
    await svc.db.execute("UPDATE escalations SET created_at=?, deadline_at=? WHERE escalation_id=?",
                         (iso(created), iso(created + timedelta(hours=24)), esc.escalation_id))
    return esc.escalation_id


async def test_reminder_then_expiry(handbook: Services, fake_slack: FakeSlackWithFiles,
                                    slack_client: AsyncWebClient) -> None:
    svc = handbook
    esc_id = await escalate(svc, fake_slack, slack_client, "I want to talk to a person, please.",
                            session="slack:T0LARKSPUR:D0BOB:1", created_hours_ago=11)
    root_ts = (await svc.conversations.get_escalation(escalation_id=esc_id)).thread_ts  # type: ignore[union-attr]
    clock = Clock(NOW)
    ctx = build_context(svc, slack_client=slack_client, clock=clock)

    report = await expire_escalations(ctx)  # 11 h of 24: too early for anything
    assert (report.reminded, report.expired) == ([], [])

    clock.now = NOW + timedelta(hours=1, minutes=1)  # past half the deadline
    report = await expire_escalations(ctx)
    assert report.reminded == [esc_id] and report.expired == []
    [reminder] = fake_slack.posts_in("C0ESC", root_ts)
    assert "Reminder: nobody has answered this yet" in reminder.text
    await expire_escalations(ctx)  # one reminder only
    assert len(fake_slack.posts_in("C0ESC", root_ts)) == 1
    esc = await svc.conversations.get_escalation(escalation_id=esc_id)
    assert esc is not None and esc.reminded_at and esc.status == "open"

    clock.now = NOW + timedelta(hours=13)  # past the deadline
    report = await expire_escalations(ctx)
    assert report.expired == [esc_id] and report.errors == []
    esc = await svc.conversations.get_escalation(escalation_id=esc_id)
    assert esc is not None and esc.status == "expired"
    [told] = fake_slack.posts_in(USER_CHANNEL, USER_THREAD)
    assert told.params["text"] == fixed("expired", "en")  # honest: nobody answered; no grant, no action
    notes = fake_slack.calls_to("chat.postMessage", lambda c: c.thread_ts == root_ts)
    assert "Expired: no reply within 24 h" in notes[-1].text and "nothing was done or granted" in notes[-1].text
    assert fake_slack.calls_to("chat.update", lambda c: c.params.get("ts") == root_ts)  # root shows Expired
    # the graph's interrupt is closed: the next message is a fresh turn, not appended to the escalation
    snapshot = await svc.graph.aget_state({"configurable": {"thread_id": "slack:T0LARKSPUR:D0BOB:1"}})
    assert not snapshot.interrupts
    # nothing happens twice
    calls = len(fake_slack.calls)
    assert (await expire_escalations(ctx)).expired == []
    assert len(fake_slack.calls) == calls


async def test_arabic_user_is_told_in_arabic(handbook: Services, fake_slack: FakeSlackWithFiles,
                                            slack_client: AsyncWebClient) -> None:
    esc_id = await escalate(handbook, fake_slack, slack_client, "أريد التحدث مع شخص من فريق الموارد البشرية.",
                            session="slack:T0LARKSPUR:D0BOB:ar", created_hours_ago=30, lang="ar")
    ctx = build_context(handbook, slack_client=slack_client, clock=Clock(NOW))
    report = await expire_escalations(ctx)
    assert report.expired == [esc_id] and report.reminded == []  # past the deadline: no late reminder
    [told] = fake_slack.posts_in(USER_CHANNEL, USER_THREAD)
    assert told.params["text"] == fixed("expired", "ar")


async def test_an_answered_escalation_never_expires(handbook: Services, fake_slack: FakeSlackWithFiles,
                                                    slack_client: AsyncWebClient) -> None:
    esc_id = await escalate(handbook, fake_slack, slack_client, "Can I talk to a person about my leave?",
                            session="slack:T0LARKSPUR:D0BOB:2", created_hours_ago=30)
    await handbook.runner.resume(escalation_id=esc_id, reply={
        "type": "admin_reply", "admin_id": "U0ADMIN", "admin_name": "Adam", "text": "You get 25 days.",
        "message_key": "1700000500.000100"})
    report = await expire_escalations(build_context(handbook, slack_client=slack_client, clock=Clock(NOW)))
    assert report.expired == []
    esc = await handbook.conversations.get_escalation(escalation_id=esc_id)
    assert esc is not None and esc.status == "answered"


async def test_without_slack_it_still_expires(handbook: Services) -> None:
    outcome = await handbook.runner.ask(session_id="cli-1", scope=BOB, question="I want to talk to a person.")
    assert outcome.escalation is not None
    created = NOW - timedelta(hours=25)
    await handbook.db.execute("UPDATE escalations SET created_at=?, deadline_at=? WHERE escalation_id=?",
                              (iso(created), iso(created + timedelta(hours=24)), outcome.escalation.escalation_id))
    report = await expire_escalations(build_context(handbook, clock=Clock(NOW)))
    assert report.expired == [outcome.escalation.escalation_id] and report.errors == []


async def test_a_slack_failure_on_the_reminder_retries_next_tick(
        handbook: Services, fake_slack: FakeSlackWithFiles, slack_client: AsyncWebClient) -> None:
    esc_id = await escalate(handbook, fake_slack, slack_client, "I want to talk to a person, please.",
                            session="slack:T0LARKSPUR:D0BOB:3", created_hours_ago=13)
    ctx = build_context(handbook, slack_client=slack_client, clock=Clock(NOW))
    fake_slack.fail_next("chat.postMessage", error="ratelimited")
    first = await expire_escalations(ctx)
    assert first.reminded == [] and first.errors
    second = await expire_escalations(ctx)
    assert second.reminded == [esc_id]
