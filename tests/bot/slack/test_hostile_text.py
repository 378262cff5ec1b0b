"""Odd text from Slack never makes a turn vanish: a question with a lone surrogate (`\\ud800`, which
copy and paste can produce) is escalated for real — thread posted, escalation and turn recorded — and a
signed body nested thousands deep is a 400, not a 500."""

from __future__ import annotations

from urllib.parse import urlencode

from bot.slack.constants import session_id_for
from tests.bombs import nested_json
from tests.bot.conftest import ESCALATION_CHANNEL, TEAM, Cairn

PETS_ODD = "What is our policy on bringing pets to the Tokyo office? \ud800"


async def test_a_question_with_a_lone_surrogate_ends_in_a_recorded_turn(cairn: Cairn) -> None:
    event = cairn.message(PETS_ODD)
    assert (await cairn.event(event)).status_code == 200
    told = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0BOB", within=60)
    await cairn.settle()
    session = session_id_for(team_id=TEAM, channel="D0BOB", thread_ts=event["ts"])
    [turn] = await cairn.services.conversations.list_turns(session_id=session)
    assert turn.question.endswith("office? \ufffd")  # replaced once, at the edge
    escalation = await cairn.services.conversations.pending_escalation(session_id=session)
    if turn.route == "escalate":  # what the user was told happened: thread posted, escalation recorded
        assert escalation is not None
        root = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
        assert "Tokyo office? \ufffd" in root.text
    else:
        assert turn.route == "answer" and "[1]" in told.text and escalation is None


async def test_a_signed_deeply_nested_body_is_400_and_the_app_serves_on(cairn: Cairn) -> None:
    for body, content_type in ((nested_json(50_000), "application/json"),
                               (urlencode({"payload": nested_json(5_000)}), "application/x-www-form-urlencoded")):
        response = await cairn.post(body, content_type=content_type)
        assert response.status_code == 400, response.text
        assert "nested" in response.json()["detail"]
        assert (await cairn.post(body, content_type=content_type, signed=False)).status_code == 401
    answered = await cairn.event(cairn.message("What is the per diem for meals?"))
    assert answered.status_code == 200
    await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0BOB", within=60)  # served on
