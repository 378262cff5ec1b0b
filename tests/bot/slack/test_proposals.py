"""An admin's answer in an escalation thread becomes knowledge through Slack's buttons: filed from the
resolved thread, approved by the document owner in their channel, then cited to the next person who asks;
never shown before that."""

from __future__ import annotations

from bot.slack.constants import ACTION_APPROVE_ANSWER, ACTION_PROPOSE_ANSWER, ACTION_RESOLVE
from tests.bot.conftest import ADMIN, BOB, Cairn

QUESTION = "What is the guest wifi password at the Lisbon office?"
ANSWER = "The guest wifi password at the Lisbon office is Harbour-2026, on the LarkspurGuest network."
SECRET = "Harbour-2026"
OLIVIA = "U0OLIVIA"


async def ask_again(cairn: Cairn, ts_user: str = BOB) -> str:
    """Bob asks the same question in a new DM thread; the text he is finally shown."""
    event = cairn.message(QUESTION, user=ts_user)
    await cairn.event(event)
    await cairn.settle()
    shown = [c.text for c in cairn.fake.calls_to("chat.update", lambda c: c.channel == "D0BOB")
             if c.params.get("ts") and c.text]
    return shown[-1]


def channel_id(channel: str) -> str:
    """How the fake Slack stores a channel given by name (`#it-security` → `CITSECURITY`)."""
    return "C" + channel[1:].upper().replace("-", "") if channel.startswith("#") else channel


async def test_an_answer_filed_from_the_thread_is_shown_only_once_its_owner_approved_it(cairn: Cairn) -> None:
    await cairn.event(cairn.message(QUESTION))
    root = await cairn.fake.wait_for("chat.postMessage", lambda c: (c.text or "").startswith("Escalation esc-"))
    await cairn.settle()
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    escalation = await cairn.services.conversations.get_escalation(escalation_id=escalation_id)
    assert escalation is not None and escalation.channel and escalation.thread_ts
    where, thread = channel_id(escalation.channel), escalation.thread_ts
    await cairn.event(cairn.message(ANSWER, user=ADMIN, channel=where, channel_type="channel", thread_ts=thread))
    await cairn.fake.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB" and SECRET in c.text)
    await cairn.click(ACTION_RESOLVE, escalation_id, user=ADMIN, channel=where, message_ts=thread)
    note = await cairn.fake.wait_for("chat.postMessage", lambda c: "Resolved by" in c.text)
    assert note.action_ids() == [ACTION_PROPOSE_ANSWER]

    # Someone who may not handle escalations cannot file it; the admin can.
    await cairn.click(ACTION_PROPOSE_ANSWER, escalation_id, user=BOB, channel=where, message_ts=thread)
    await cairn.fake.wait_for("chat.postEphemeral", lambda c: c.params["user"] == BOB and "Only Cairn admins" in c.text)
    await cairn.click(ACTION_PROPOSE_ANSWER, escalation_id, user=ADMIN, channel=where, message_ts=thread)
    request = await cairn.fake.wait_for("chat.postMessage", lambda c: ACTION_APPROVE_ANSWER in c.action_ids())
    [proposal] = await cairn.services.store.proposals.list()
    assert proposal.status == "proposed" and proposal.answer == ANSWER and proposal.groups == ("everyone",)
    assert request.channel == proposal.owner and SECRET in str(request.params["blocks"])
    await cairn.settle()

    # Not approved yet: the next asker is not shown it.
    assert SECRET not in await ask_again(cairn)

    # Bob owns nothing: his Approve is refused. Olivia owns `everyone` in larkspur: hers files it.
    owner_channel = channel_id(str(proposal.owner))
    request_ts = max(cairn.fake.messages[owner_channel])
    await cairn.click(ACTION_APPROVE_ANSWER, proposal.proposal_id, user=BOB, channel=owner_channel,
                      message_ts=request_ts)
    await cairn.fake.wait_for("chat.postEphemeral", lambda c: c.params["user"] == BOB and "may not decide" in c.text)
    await cairn.click(ACTION_APPROVE_ANSWER, proposal.proposal_id, user=OLIVIA, channel=owner_channel,
                      message_ts=request_ts)
    decided = await cairn.fake.wait_for("chat.update", lambda c: c.channel == owner_channel, within=120)
    assert f"Approved by <@{OLIVIA}>" in str(decided.params["blocks"]) and decided.action_ids() == []
    approved = await cairn.services.store.proposals.get(proposal_id=proposal.proposal_id)
    assert approved is not None and approved.status == "approved"
    doc = await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id=str(approved.doc_id))
    assert doc is not None and doc.status == "active" and doc.owner == proposal.owner

    # Now the same question is answered from it, with its citation.
    shown = await ask_again(cairn)
    assert SECRET in shown and "[1]" in shown, shown
