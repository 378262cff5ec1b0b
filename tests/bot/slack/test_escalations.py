"""When Cairn cannot answer: the abstention, the escalation thread, follow-ups, an admin's reply
reaching the user once, Resolve exactly once, and all of it across a restart."""

from __future__ import annotations

from bot.slack.constants import (
    ACTION_CLAIM,
    ACTION_RESOLVE,
    ACTION_TALK_TO_PERSON,
    session_id_for,
)
from tests.bot.conftest import ADMIN, BOB, ESCALATION_CHANNEL, TEAM, Cairn
from tests.fake_slack import Call

PETS = "What is our policy on bringing pets to the Tokyo office?"
MEALS = "What is the per diem for meals?"


async def ask_and_escalate(cairn: Cairn, question: str = PETS) -> tuple[dict, Call]:
    """Bob asks in his DM; returns his message event and the escalation thread's root post."""
    event = cairn.message(question)
    await cairn.event(event)
    root = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    await cairn.settle()
    return event, root


def to_user(cairn: Cairn, event: dict) -> list[Call]:
    return cairn.fake.posts_in("D0BOB", thread_ts=event["ts"])


async def test_out_of_corpus_question_abstains_and_opens_an_escalation_thread(cairn: Cairn) -> None:
    event, root = await ask_and_escalate(cairn)
    abstention = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0BOB")
    assert "couldn't find this in our approved policies" in abstention.text
    assert ACTION_TALK_TO_PERSON not in abstention.action_ids()

    assert PETS in root.text
    assert "below_score_floor" in root.text
    assert "Travel and Expenses Policy" in root.text and "score 0." in root.text  # chunks and scores
    assert "larkspur:finance/travel:v1:" in root.text  # the chunk ids, for the admin
    assert f"https://larkspur.slack.com/archives/D0BOB/p{event['ts'].replace('.', '')}" in root.text
    assert "user: " + PETS in root.text  # the transcript
    assert root.action_ids() == [ACTION_RESOLVE, ACTION_CLAIM]

    session = session_id_for(team_id=TEAM, channel="D0BOB", thread_ts=event["ts"])
    escalation = await cairn.services.conversations.pending_escalation(session_id=session)
    assert escalation is not None and escalation.reason == "below_score_floor"
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    assert (escalation.channel, escalation.thread_ts) == (ESCALATION_CHANNEL, thread)


async def test_follow_up_is_appended_to_the_escalation_thread(cairn: Cairn) -> None:
    event, _ = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    await cairn.event(cairn.message("It is a very small dog.", thread_ts=event["ts"]))
    appended = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL
                                         and c.thread_ts == thread)
    assert "It is a very small dog." in appended.text and f"<@{BOB}>" in appended.text
    told = await cairn.fake.wait_for("chat.update", lambda c: "already looking at your question" in c.text)
    assert told.channel == "D0BOB"
    await cairn.settle()
    assert len(cairn.fake.calls_to("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)) == 2


async def test_admin_reply_reaches_the_user_exactly_once(cairn: Cairn) -> None:
    event, _ = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    reply = cairn.message("Only certified assistance dogs are allowed in the Tokyo office.", user=ADMIN,
                          channel=ESCALATION_CHANNEL, channel_type="channel", thread_ts=thread)
    await cairn.event(reply, event_id="Ev-admin")
    await cairn.event(reply, event_id="Ev-admin")  # the same event again
    await cairn.event(reply, event_id="Ev-admin", retry_num=1)  # and Slack's retry of it
    delivered = await cairn.fake.wait_for("chat.postMessage", lambda c: "certified assistance dogs" in c.text)
    await cairn.settle()
    assert delivered.channel == "D0BOB" and delivered.thread_ts == event["ts"]
    assert "Adam" in delivered.text  # attributed to the admin
    assert len([c for c in to_user(cairn, event) if "certified assistance dogs" in c.text]) == 1
    assert cairn.fake.calls_to("reactions.add", lambda c: c.params["timestamp"] == reply["ts"])

    # A further reply (before Resolve) is relayed too.
    await cairn.event(cairn.message("Send the certificate to HR first.", user=ADMIN, channel=ESCALATION_CHANNEL,
                                    channel_type="channel", thread_ts=thread))
    await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB" and "certificate to HR" in c.text)


async def test_non_admin_replies_in_the_escalation_thread_are_not_relayed(cairn: Cairn) -> None:
    event, _ = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    await cairn.event(cairn.message("I think pets are fine?", user="U0ALICE", channel=ESCALATION_CHANNEL,
                                    channel_type="channel", thread_ts=thread))
    await cairn.fake.wait_for("chat.postEphemeral", lambda c: c.params["user"] == "U0ALICE")
    await cairn.settle()
    assert not [c for c in to_user(cairn, event) if "pets are fine" in c.text]


async def test_resolve_button_closes_once_and_a_second_click_is_harmless(cairn: Cairn) -> None:
    event, root = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    for _ in range(2):
        resp = await cairn.click(ACTION_RESOLVE, escalation_id, user=ADMIN, channel=ESCALATION_CHANNEL,
                                 message_ts=thread)
        assert resp.status_code == 200
        await cairn.settle()
    escalation = await cairn.services.conversations.get_escalation(escalation_id=escalation_id)
    assert escalation is not None and escalation.status == "resolved" and escalation.resolved_by == ADMIN
    # Unanswered: the user is told it closed, once.
    closing = [c for c in to_user(cairn, event) if "closed your question" in c.text]
    assert len(closing) == 1
    assert len(cairn.fake.calls_to("chat.postMessage", lambda c: "Resolved by" in c.text)) == 1
    assert cairn.fake.calls_to("chat.postEphemeral", lambda c: "already resolved" in c.text)
    updated = cairn.fake.calls_to("chat.update", lambda c: c.channel == ESCALATION_CHANNEL)[-1]
    assert updated.action_ids() == []  # no more buttons on the root

    # A reply after Resolve is not relayed.
    await cairn.event(cairn.message("Late answer", user=ADMIN, channel=ESCALATION_CHANNEL,
                                    channel_type="channel", thread_ts=thread))
    await cairn.fake.wait_for("chat.postMessage", lambda c: "no longer sent to the user" in c.text)
    assert not [c for c in to_user(cairn, event) if "Late answer" in c.text]


async def test_slash_resolve_and_claim(cairn: Cairn) -> None:
    _, root = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    await cairn.click(ACTION_CLAIM, escalation_id, user=ADMIN, channel=ESCALATION_CHANNEL, message_ts=thread)
    await cairn.settle()
    assert (await cairn.services.conversations.get_escalation(escalation_id=escalation_id)).claimed_by == ADMIN
    await cairn.command(f"resolve {escalation_id}", user=BOB)
    assert "Only Cairn admins" in (await cairn.fake.wait_for("response_url")).text
    await cairn.command(f"resolve {escalation_id}", user=ADMIN)
    assert f"Resolved {escalation_id}" in (await cairn.fake.wait_for("response_url", count=2)).text
    await cairn.command(f"resolve {escalation_id}", user=ADMIN)
    assert "already resolved" in (await cairn.fake.wait_for("response_url", count=3)).text


async def test_admin_reply_after_a_restart_is_delivered_once(cairn: Cairn) -> None:
    event, _ = await ask_and_escalate(cairn)
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    await cairn.restart()  # a new process: nothing in memory survives
    reply = cairn.message("Pets are not allowed, sorry.", user=ADMIN, channel=ESCALATION_CHANNEL,
                          channel_type="channel", thread_ts=thread)
    await cairn.event(reply, event_id="Ev-after-restart")
    await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB" and "not allowed" in c.text)
    await cairn.restart()
    await cairn.event(reply, event_id="Ev-after-restart", retry_num=1)
    await cairn.settle()
    assert len([c for c in to_user(cairn, event) if "not allowed" in c.text]) == 1

    # The conversation continues after the answer: Bob's next question is a normal turn.
    await cairn.event(cairn.message(MEALS, thread_ts=event["ts"]))
    await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0BOB" and "[1]" in c.text)


async def test_talk_to_a_person_button_escalates(cairn: Cairn) -> None:
    event = cairn.message(MEALS)
    await cairn.event(event)
    answer = await cairn.fake.wait_for("chat.update", lambda c: ACTION_TALK_TO_PERSON in c.action_ids())
    await cairn.settle()
    session_id = next(e["value"] for b in answer.params["blocks"] if b["type"] == "actions"
                      for e in b["elements"] if e["action_id"] == ACTION_TALK_TO_PERSON)
    for _ in range(2):  # a double click escalates once
        await cairn.click(ACTION_TALK_TO_PERSON, session_id, user=BOB, channel="D0BOB",
                          message_ts=answer.params["ts"], thread_ts=event["ts"])
    root = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    await cairn.settle()
    assert "user_requested_human" in root.text
    assert MEALS in root.text  # the transcript shows what came before
    assert len(cairn.fake.calls_to("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)) == 1
    assert [c for c in to_user(cairn, event) if "passed your question to a person" in c.text]


async def test_asking_for_a_person_in_text_escalates(cairn: Cairn) -> None:
    _, root = await ask_and_escalate(cairn, "I want to talk to a person")
    assert "user_requested_human" in root.text


async def test_app_home_shows_open_escalations_to_admins_only(cairn: Cairn) -> None:
    await ask_and_escalate(cairn)
    await cairn.event({"type": "app_home_opened", "user": ADMIN, "channel": "D0ADMIN", "tab": "home",
                       "event_ts": cairn.new_ts()})
    admin_home = await cairn.fake.wait_for("views.publish", lambda c: c.params["user_id"] == ADMIN)
    assert "Open escalations (1)" in admin_home.text and "No approved passage scored above the floor" in admin_home.text
    assert PETS in admin_home.text and "0m old" in admin_home.text
    await cairn.event({"type": "app_home_opened", "user": BOB, "channel": "D0BOB", "tab": "home",
                       "event_ts": cairn.new_ts()})
    staff_home = await cairn.fake.wait_for("views.publish", lambda c: c.params["user_id"] == BOB)
    assert "Ask Cairn" in staff_home.text and "Open escalations" not in staff_home.text
