"""Who may read what is posted: an answer in a channel is read by every member, so it uses only what all
of them may read; the asker alone is told where to get a fuller answer. DMs keep the asker's scope."""

from __future__ import annotations

from bot.slack.escalation_views import WITHHELD_ANSWER, visible_transcript
from tests.bot.conftest import ESCALATION_CHANNEL, Cairn

CAR = "What is the monthly car allowance for executives in London?"
ERIN = "U0ERIN"  # an executive: may read the confidential executive allowances


async def test_an_executives_question_in_a_public_channel_gets_only_everyone_content(cairn: Cairn) -> None:
    await cairn.event(cairn.mention(CAR, user=ERIN, channel="C0GENERAL"))
    reply = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "C0GENERAL")
    await cairn.settle()
    assert "GBP 900" not in reply.text and "Executive Allowances" not in reply.text
    hint = cairn.fake.calls_to("chat.postEphemeral", lambda c: c.params.get("user") == ERIN)
    assert hint and "direct messages" in hint[0].text  # only she sees it
    private = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0ERIN")  # the fuller answer
    assert "GBP 900" in private.text


async def test_the_same_question_in_a_dm_uses_the_askers_own_scope(cairn: Cairn) -> None:
    await cairn.event(cairn.message(CAR, user=ERIN, channel="D0ERIN"))
    reply = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0ERIN")
    assert "GBP 900" in reply.text and "Executive Allowances" in reply.text
    assert not cairn.fake.calls_to("chat.postEphemeral")


async def test_a_private_channel_answers_from_what_every_member_may_read(cairn: Cairn) -> None:
    cairn.fake.channels["G0EXEC"] = {"is_private": True}
    cairn.fake.members["G0EXEC"] = [ERIN, "U0OLIVIA", cairn.fake.bot_user_id]  # both may read executive documents
    await cairn.event(cairn.mention(CAR, user=ERIN, channel="G0EXEC"))
    reply = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "G0EXEC")
    assert "GBP 900" in reply.text

    cairn.fake.channels["G0MIXED"] = {"is_private": True}
    cairn.fake.members["G0MIXED"] = [ERIN, "U0BOB"]  # Bob may not
    await cairn.event(cairn.mention(CAR, user=ERIN, channel="G0MIXED"))
    mixed = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "G0MIXED")
    assert "GBP 900" not in mixed.text


async def test_a_shared_channel_answers_for_the_customer_audience(cairn: Cairn) -> None:
    cairn.fake.channels["C0PARTNERS"] = {"is_ext_shared": True, "is_shared": True}
    await cairn.event(cairn.mention("What is the per diem for meals?", user="U0BOB", channel="C0PARTNERS"))
    reply = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "C0PARTNERS")
    assert "[1]" not in reply.text  # the travel policy is for staff, not customers


async def test_an_escalation_thread_never_quotes_a_restricted_answer_outside_its_owner_channel(cairn: Cairn) -> None:
    cairn.fake.reject_channel("#finance-policy", "not_in_channel")  # so the thread opens in the general channel
    ask = cairn.message(CAR, user=ERIN, channel="D0ERIN")
    await cairn.event(ask)
    answer = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0ERIN")
    assert "GBP 900" in answer.text
    await cairn.settle()
    await cairn.event(cairn.message("I want to talk to a person.", user=ERIN, channel="D0ERIN", thread_ts=ask["ts"]))
    root = await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL)
    assert "GBP 900" not in root.text and "Car Allowance" not in root.text
    assert "answer left out" in root.text and CAR in root.text  # the asker's own words stay


def test_every_line_of_an_answer_is_left_out_of_a_transcript_others_read() -> None:
    transcript = ("user: What is the monthly car allowance?\n"
                  "cairn: According to Executive Allowances: “Office: Paris; Monthly car allowance: EUR 950” [1]\n"
                  "According to Executive Allowances: “Office: London; Monthly car allowance: GBP 900” [2]\n"
                  "user: I want to talk to a person.\nIt is about London.")
    shown = visible_transcript(transcript, withheld=frozenset({"finance/executive-allowances"}))
    assert "EUR 950" not in shown and "GBP 900" not in shown and shown.count(WITHHELD_ANSWER) == 1
    assert shown.endswith("user: I want to talk to a person.\nIt is about London.")  # the asker's words stay
