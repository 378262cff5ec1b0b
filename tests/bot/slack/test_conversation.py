"""Slack (signed events into the real app, the fake Web API): small talk gets a reply and never reaches
the escalation channel or the digest; a new question while a person looks at an earlier one is
answered in the same DM thread, and a follow-up still joins the open escalation's thread."""

from __future__ import annotations

from datetime import UTC

import pytest

from escalations.digest import build_digest
from escalations.weeks import week_label
from graph.messages import fixed
from store.db import utcnow
from tests.bot.conftest import BOB, ESCALATION_CHANNEL, Cairn
from tests.fake_slack import Call

PERSON = "I want to talk to a person about bringing my dog to the Tokyo office"
MEALS = "What is the per diem for meals?"


def in_dm(call: Call) -> bool:
    return call.channel == "D0BOB"


@pytest.mark.parametrize(("text", "intent"), [("hi", "greeting"), ("thanks!", "thanks"), ("ok", "acknowledgement"),
                                              ("what can you do?", "capabilities")])
async def test_small_talk_is_answered_and_never_escalates(cairn: Cairn, text: str, intent: str) -> None:
    event = cairn.message(text)
    await cairn.event(event)
    reply = await cairn.fake.wait_for("chat.update", in_dm)
    await cairn.settle()
    assert fixed(intent, "en") in reply.text
    assert reply.action_ids() == []  # a notice: no feedback on small talk
    assert not cairn.fake.calls_to("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    assert await cairn.services.conversations.list_escalations(open_only=False) == []
    digest = await build_digest(cairn.services.store.reports, week=week_label(utcnow(), UTC), tenant_id="larkspur")
    assert digest.counts.total == 0


async def test_a_new_question_in_the_thread_is_answered_while_a_person_looks_at_the_first(cairn: Cairn) -> None:
    event = cairn.message(PERSON)
    await cairn.event(event)
    await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    await cairn.settle()
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))

    await cairn.event(cairn.message(MEALS, thread_ts=event["ts"]))
    answered = await cairn.fake.wait_for("chat.update", lambda c: in_dm(c) and fixed("aside_answer", "en") in c.text)
    assert "Meals" in answered.text and answered.action_ids()  # an answer, with its feedback buttons
    placeholders = [c for c in cairn.fake.posts_in("D0BOB", thread_ts=event["ts"]) if c.method == "chat.postMessage"]
    assert len(placeholders) == 2  # both in Bob's thread
    await cairn.settle()
    # the escalation thread did not get the new question: it was not about the open one
    assert not cairn.fake.calls_to("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL and MEALS in c.text)

    await cairn.event(cairn.message("It is a very small dog.", thread_ts=event["ts"]))
    appended = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL
                                         and c.thread_ts == thread and "very small dog" in c.text)
    assert f"<@{BOB}>" in appended.text
    await cairn.fake.wait_for("chat.update", lambda c: in_dm(c) and "already looking at your question" in c.text)
    await cairn.settle()
    assert len(await cairn.services.conversations.list_escalations(open_only=True)) == 1
