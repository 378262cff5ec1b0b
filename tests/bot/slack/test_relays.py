"""An admin's reply is shown to the asker before it counts as relayed: a reply Slack refused, or one a
restart cut short after the conversation took it, is shown later, once, and only then gets its ✅. A reply
under a thread root whose ts Cairn has not stored yet still reaches the asker."""

from __future__ import annotations

from datetime import timedelta

from bot.services import escalation_desk
from bot.slack.app import build_web_client
from bot.slack.escalation_posting import EscalationThreads
from escalations.desk import EscalationDesk
from graph.state import AdminReply
from store.db import utcnow
from tests.bot.conftest import ADMIN, ESCALATION_CHANNEL, Cairn
from tests.bot.slack.test_escalations import PETS, ask_and_escalate

ANSWER = "Only certified assistance dogs are allowed."


def desk_of(cairn: Cairn) -> EscalationDesk:
    return escalation_desk(cairn.services, EscalationThreads(client=build_web_client(cairn.settings),
                                                             services=cairn.services))


def shown_to_bob(cairn: Cairn, event: dict) -> list[dict]:
    """Messages Slack accepted in Bob's thread (a refused post is recorded as a call, not as a message)."""
    return [m for m in cairn.fake.messages.get("D0BOB", {}).values()
            if m.get("thread_ts") == event["ts"] and ANSWER in str(m.get("text"))]


async def test_a_reply_slack_refused_is_shown_later_once_and_only_then_marked(cairn: Cairn) -> None:
    event, _ = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    cairn.fake.reject_channel("D0BOB", "fatal_error")
    reply = cairn.message(ANSWER, user=ADMIN, channel=ESCALATION_CHANNEL, channel_type="channel", thread_ts=thread)
    await cairn.event(reply)
    await cairn.fake.wait_for("chat.postMessage", lambda c: "couldn't deliver that reply" in c.text)
    await cairn.settle()
    assert not cairn.fake.calls_to("reactions.add")  # not shown, so not marked

    del cairn.fake.rejected_channels["D0BOB"]
    desk = desk_of(cairn)
    assert await desk.relay_pending(now=utcnow()) == []  # too fresh: it may still be on its way
    later = utcnow() + timedelta(minutes=2)
    assert await desk.relay_pending(now=later) == [reply["ts"]]
    assert len(shown_to_bob(cairn, event)) == 1
    assert cairn.fake.calls_to("reactions.add", lambda c: c.params["timestamp"] == reply["ts"])
    assert await desk.relay_pending(now=later) == []  # once
    assert len(shown_to_bob(cairn, event)) == 1


async def test_a_reply_cut_short_after_the_conversation_took_it_still_reaches_the_asker(cairn: Cairn) -> None:
    event, root = await ask_and_escalate(cairn)
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    relays = cairn.services.store.relays
    # The process wrote the relay and delivered the reply to the conversation, then stopped.
    await relays.expect(escalation_id=escalation_id, message_key="k-crash", admin_id=ADMIN, admin_name="Adam",
                        text=ANSWER)
    await cairn.services.runner.resume(escalation_id=escalation_id, reply=AdminReply(
        type="admin_reply", admin_id=ADMIN, admin_name="Adam", text=ANSWER, message_key="k-crash"))
    assert not shown_to_bob(cairn, event)

    assert await desk_of(cairn).relay_pending(now=utcnow() + timedelta(minutes=2)) == ["k-crash"]
    [shown] = shown_to_bob(cairn, event)
    assert "Adam" in shown["text"]
    assert (await relays.get(escalation_id=escalation_id, message_key="k-crash")).relayed_at  # type: ignore[union-attr]


async def test_a_reply_under_a_root_whose_ts_is_not_stored_yet_still_reaches_the_asker(cairn: Cairn) -> None:
    # The root shows in the channel at once; the replica that posted it hears its ts 1.5 s later.
    cairn.fake.slow_channel(ESCALATION_CHANNEL, 1.5)
    event = cairn.message(PETS)
    await cairn.event(event)
    await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    assert await cairn.services.conversations.find_escalation(channel=ESCALATION_CHANNEL, thread_ts=thread) is None
    await cairn.event(cairn.message(ANSWER, user=ADMIN, channel=ESCALATION_CHANNEL, channel_type="channel",
                                    thread_ts=thread, parent_user_id=cairn.fake.bot_user_id))
    await cairn.settle()
    assert len(shown_to_bob(cairn, event)) == 1
