"""Asking Cairn in Slack: DM, @mention, follow-ups, what it ignores, and how requests are verified."""

from __future__ import annotations

import time

from bot.slack.constants import (
    ACTION_FEEDBACK_DOWN,
    ACTION_FEEDBACK_UP,
    ACTION_TALK_TO_PERSON,
    session_id_for,
)
from tests.bot.conftest import BOB, TEAM, Cairn
from tests.fake_slack import Call

MEALS = "What is the per diem for meals?"


def is_answer(call: Call) -> bool:
    return ACTION_TALK_TO_PERSON in call.action_ids()


async def test_dm_question_gets_placeholder_then_answer_with_readable_sources(cairn: Cairn) -> None:
    event = cairn.message(MEALS)
    started = time.perf_counter()
    resp = await cairn.event(event)
    assert resp.status_code == 200
    assert time.perf_counter() - started < 3.0

    placeholder = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB")
    assert placeholder.thread_ts == event["ts"]
    assert "Looking that up" in placeholder.text
    update = await cairn.fake.wait_for("chat.update", is_answer)
    assert update.channel == "D0BOB"
    assert update.params["ts"] == next(iter(cairn.fake.messages["D0BOB"]))  # the placeholder, replaced
    assert "[1]" in update.text
    assert "[1] Travel and Expenses Policy · v1 · Meals" in update.text
    assert "larkspur:" not in update.text  # no raw chunk ids
    assert update.action_ids() == [ACTION_TALK_TO_PERSON, ACTION_FEEDBACK_UP, ACTION_FEEDBACK_DOWN]
    await cairn.settle()
    assert len(cairn.fake.posts_in("D0BOB")) == 2  # the placeholder and its update: nothing else


async def test_mention_answers_in_thread_and_follow_up_needs_no_mention(cairn: Cairn) -> None:
    root = cairn.mention(MEALS, channel="C0GENERAL")
    await cairn.event(root)
    await cairn.fake.wait_for("chat.update", lambda c: is_answer(c) and c.channel == "C0GENERAL")
    # Slack also sends the mention as a plain channel message: it must not be answered twice.
    await cairn.event(cairn.message(root["text"], channel="C0GENERAL", channel_type="channel", ts=root["ts"]))
    await cairn.settle()
    assert len(cairn.fake.calls_to("chat.postMessage", lambda c: c.channel == "C0GENERAL")) == 1

    follow_up = cairn.message("How many annual leave days do I get?", channel="C0GENERAL",
                              channel_type="channel", thread_ts=root["ts"])
    await cairn.event(follow_up)
    await cairn.fake.wait_for("chat.update", lambda c: is_answer(c) and c.channel == "C0GENERAL", count=2)
    posts = cairn.fake.calls_to("chat.postMessage", lambda c: c.channel == "C0GENERAL")
    assert [p.thread_ts for p in posts] == [root["ts"], root["ts"]]
    session = session_id_for(team_id=TEAM, channel="C0GENERAL", thread_ts=root["ts"])
    turns = await cairn.services.conversations.list_turns(session_id=session)
    assert [t.question for t in turns] == [MEALS, "How many annual leave days do I get?"]


async def test_channel_messages_outside_cairn_threads_are_ignored(cairn: Cairn) -> None:
    await cairn.event(cairn.message(MEALS, channel="C0RANDOM", channel_type="channel"))
    await cairn.event(cairn.message(MEALS, channel="C0RANDOM", channel_type="channel", thread_ts="1690000000.000100"))
    await cairn.settle()
    assert cairn.fake.calls_to("chat.postMessage") == []


async def test_ask_channel_questions_are_answered_without_mention(cairn: Cairn) -> None:
    cairn.overrides["CAIRN_ASK_CHANNELS"] = ["C0ASK"]
    await cairn.restart()
    await cairn.event(cairn.message(MEALS, channel="C0ASK", channel_type="channel"))
    await cairn.fake.wait_for("chat.update", lambda c: is_answer(c) and c.channel == "C0ASK")


async def test_bots_edits_and_joins_are_ignored(cairn: Cairn) -> None:
    fake = cairn.fake
    await cairn.event(cairn.message(MEALS, user=fake.bot_user_id, bot_id=fake.bot_id))  # Cairn itself
    await cairn.event(cairn.message(MEALS, user="U0OTHERBOT", bot_id="B0OTHER"))  # another bot
    await cairn.event(cairn.message(MEALS, subtype="bot_message", bot_id="B0OTHER", user=None))
    await cairn.event(cairn.message(MEALS, subtype="message_changed"))
    await cairn.event(cairn.message(MEALS, subtype="message_deleted"))
    await cairn.event(cairn.message("joined", subtype="channel_join", channel="C0GENERAL", channel_type="channel"))
    await cairn.settle()
    assert fake.calls_to("chat.postMessage") == []


async def test_duplicate_deliveries_get_one_reply(cairn: Cairn) -> None:
    event = cairn.message(MEALS)
    for kwargs in ({"event_id": "Ev-dup"}, {"event_id": "Ev-dup"}, {"event_id": "Ev-dup", "retry_num": 1},
                   {"event_id": "Ev-other", "retry_num": 2}):
        assert (await cairn.event(event, **kwargs)).status_code == 200
    await cairn.fake.wait_for("chat.update", is_answer)
    await cairn.settle()
    assert len(cairn.fake.calls_to("chat.postMessage")) == 1
    assert len(cairn.fake.calls_to("chat.update")) == 1


async def test_unsigned_badly_signed_and_replayed_requests_are_rejected(cairn: Cairn) -> None:
    event = cairn.message(MEALS)
    assert (await cairn.event(event, signed=False)).status_code == 401
    assert (await cairn.event(event, secret="not-the-secret")).status_code == 401
    assert (await cairn.event(event, timestamp=int(time.time()) - 6 * 60)).status_code == 401
    await cairn.settle()
    assert cairn.fake.calls_to("chat.postMessage") == []


async def test_url_verification_challenge(cairn: Cairn) -> None:
    body = '{"token": "legacy", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"}'
    resp = await cairn.post(body, content_type="application/json")
    assert resp.status_code == 200
    assert "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in resp.text


async def test_rate_limited_post_is_retried(cairn: Cairn) -> None:
    cairn.fake.fail_next("chat.postMessage", status=429, error="ratelimited", headers={"Retry-After": "0"})
    await cairn.event(cairn.message(MEALS))
    await cairn.fake.wait_for("chat.update", is_answer)
    assert len(cairn.fake.calls_to("chat.postMessage")) == 2  # the 429, then the retry


async def test_a_failure_becomes_a_visible_error_not_silence(cairn: Cairn) -> None:
    cairn.fake.fail_next("chat.update", error="msg_too_long")
    await cairn.event(cairn.message(MEALS))
    error = await cairn.fake.wait_for("chat.update", lambda c: "went wrong" in c.text)
    assert error.channel == "D0BOB"


async def test_feedback_buttons_are_stored_with_the_turn(cairn: Cairn) -> None:
    event = cairn.message(MEALS)
    await cairn.event(event)
    answer = await cairn.fake.wait_for("chat.update", is_answer)
    await cairn.settle()
    turn_id = next(e["value"] for b in answer.params["blocks"] if b["type"] == "actions"
                   for e in b["elements"] if e["action_id"] == ACTION_FEEDBACK_UP)
    resp = await cairn.click(ACTION_FEEDBACK_DOWN, turn_id, user=BOB, channel="D0BOB",
                             message_ts=answer.params["ts"], thread_ts=event["ts"])
    assert resp.status_code == 200
    await cairn.settle()
    assert await cairn.services.conversations.get_feedback(turn_id=turn_id) == {BOB: -1}
    await cairn.click(ACTION_FEEDBACK_UP, turn_id, user=BOB, channel="D0BOB", message_ts=answer.params["ts"])
    await cairn.settle()
    assert await cairn.services.conversations.get_feedback(turn_id=turn_id) == {BOB: 1}


async def test_slash_command_ask_answers_in_the_dm(cairn: Cairn) -> None:
    resp = await cairn.command(f"ask {MEALS}")
    assert resp.status_code == 200
    answer = await cairn.fake.wait_for("chat.update", is_answer)
    root = cairn.fake.calls_to("chat.postMessage")[0]
    assert root.channel == answer.channel == "D0BOB" and MEALS in root.text
    placeholder = cairn.fake.calls_to("chat.postMessage")[1]
    assert placeholder.thread_ts == min(cairn.fake.messages["D0BOB"])  # answered in the root's thread


async def test_slash_command_help(cairn: Cairn) -> None:
    await cairn.command("help")
    reply = await cairn.fake.wait_for("response_url")
    assert "/cairn ask" in reply.text


async def test_a_failed_placeholder_still_ends_in_a_visible_reply(cairn: Cairn) -> None:
    cairn.fake.fail_next("chat.postMessage", error="fatal_error")
    event = cairn.message(MEALS)
    await cairn.event(event)
    error = await cairn.fake.wait_for("chat.postMessage", lambda c: "went wrong" in c.text)
    assert (error.channel, error.thread_ts) == ("D0BOB", event["ts"])


async def test_a_retry_of_an_event_never_processed_is_answered(cairn: Cairn) -> None:
    """Retries are deduplicated, not dropped: if the first delivery never arrived, the retry answers."""
    await cairn.event(cairn.message(MEALS), retry_num=1)
    await cairn.fake.wait_for("chat.update", is_answer)
