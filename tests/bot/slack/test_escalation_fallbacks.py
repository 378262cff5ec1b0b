"""Escalations never vanish: a channel that refuses the thread falls back to a DM to an admin, the asker is
told the truth when nobody could be reached, and a failed placeholder update still opens the thread."""

from __future__ import annotations

from tests.bot.conftest import ADMIN, ESCALATION_CHANNEL, Cairn

PETS = "What is our policy on bringing pets to the Tokyo office?"
ADMIN_DM = "D0ADMIN"  # the fake's conversations.open for U0ADMIN


async def test_an_escalation_channel_the_bot_is_not_in_still_reaches_an_admin(cairn: Cairn) -> None:
    cairn.fake.reject_channel(ESCALATION_CHANNEL, "not_in_channel")
    event = cairn.message(PETS)
    await cairn.event(event)
    root = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ADMIN_DM)
    assert PETS in root.text and "below_score_floor" in root.text
    await cairn.settle()
    assert not any("couldn't reach anyone" in c.text for c in cairn.fake.posts_in("D0BOB"))
    assert 'cairn_events_total{event="escalation_fallback",label="admin_dm"} 1.0' in (
        await cairn.http.get("/metrics")).text

    # The admin answers in that DM thread; the asker gets it.
    thread = next(iter(cairn.fake.messages[ADMIN_DM]))
    await cairn.event(cairn.message("Only certified assistance dogs.", user=ADMIN, channel=ADMIN_DM,
                                    thread_ts=thread))
    await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB" and "assistance dogs" in c.text)


async def test_when_nobody_can_be_reached_the_asker_is_told_the_truth(cairn: Cairn) -> None:
    cairn.fake.reject_channel(ESCALATION_CHANNEL, "channel_not_found")
    cairn.fake.reject_channel(ADMIN_DM, "cannot_dm_bot")
    event = cairn.message(PETS)
    await cairn.event(event)
    told = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB" and "couldn't reach" in c.text)
    assert told.thread_ts == event["ts"]
    await cairn.settle()
    escalation = (await cairn.services.conversations.list_escalations(open_only=True))[0]
    assert escalation.escalation_id in told.text and escalation.thread_ts is None  # still in `cairn escalations`
    assert 'cairn_events_total{event="escalation_unposted",label="refused"} 1.0' in (
        await cairn.http.get("/metrics")).text


async def test_a_failed_placeholder_update_still_opens_the_escalation_thread(cairn: Cairn) -> None:
    cairn.fake.fail_next("chat.update", error="message_not_found", times=3)
    await cairn.event(cairn.message(PETS))
    root = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    assert PETS in root.text
