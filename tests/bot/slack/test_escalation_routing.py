"""Where an escalation thread goes (owner channel or the escalation channel) and who may answer in it."""

from __future__ import annotations

from bot.services import escalation_desk
from bot.slack.app import build_web_client
from bot.slack.escalation_posting import EscalationThreads
from store.records import EscalationRecord
from tests.bot.conftest import ADMIN, BOB, ESCALATION_CHANNEL, TEAM, Cairn

TRAVEL_PASSAGE = {"chunk_id": "larkspur:finance/travel:v1:0003", "doc_id": "finance/travel", "version": "v1",
                  "title": "Travel and Expenses Policy", "heading": "Travel and Expenses Policy > Hotels",
                  "source_path": "finance/travel.md", "page": None}


def threads_for(cairn: Cairn) -> EscalationThreads:
    return EscalationThreads(client=build_web_client(cairn.settings), services=cairn.services)


async def escalation(cairn: Cairn, *, score: float, turn: str = "t-route") -> EscalationRecord:
    session = f"slack:{TEAM}:D0BOB:1699990000.000100"
    await cairn.services.conversations.get_or_create_session(
        session_id=session, user_id=BOB, tenant_id="larkspur", channel="D0BOB", thread_ts="1699990000.000100",
        surface="slack")
    return await cairn.services.conversations.open_escalation(
        turn_id=turn, session_id=session, tenant_id="larkspur", user_id=BOB,
        question="Can I expense a hotel minibar?", reason="answer_validation_failed",
        passages=[{**TRAVEL_PASSAGE, "score": score}], top_score=score)


async def set_owner(cairn: Cairn, owner: str | None) -> None:
    """The sample travel policy names `#travel-team` in its front matter; tests set what they need."""
    await cairn.services.db.execute("UPDATE documents SET owner=? WHERE doc_id='finance/travel'", (owner,))


async def test_evidence_with_an_owner_goes_to_the_owner_channel(cairn: Cairn) -> None:
    await set_owner(cairn, "#travel-team")
    esc = await threads_for(cairn).open_escalation_thread(await escalation(cairn, score=0.8), link="slack://x")
    root = await cairn.fake.wait_for("chat.postMessage")
    assert root.channel == "#travel-team"
    assert (esc.channel, esc.thread_ts) == ("CTRAVELTEAM", next(iter(cairn.fake.messages["CTRAVELTEAM"])))
    # Opening it again (a retried turn) posts nothing new.
    await threads_for(cairn).open_escalation_thread(esc, link="slack://x")
    assert len(cairn.fake.calls_to("chat.postMessage")) == 1


async def test_an_owner_channel_that_refuses_falls_back_to_the_escalation_channel(cairn: Cairn) -> None:
    await set_owner(cairn, "#travel-team")
    cairn.fake.reject_channel("#travel-team", "not_in_channel")
    esc = await threads_for(cairn).open_escalation_thread(await escalation(cairn, score=0.8), link="slack://x")
    assert esc.channel == ESCALATION_CHANNEL


async def test_weak_evidence_belongs_to_no_owner(cairn: Cairn) -> None:
    await set_owner(cairn, "#travel-team")
    esc = await threads_for(cairn).open_escalation_thread(await escalation(cairn, score=0.1), link="slack://x")
    assert esc.channel == ESCALATION_CHANNEL


async def test_owner_from_the_access_file_when_the_document_names_none(cairn: Cairn) -> None:
    await set_owner(cairn, None)
    await cairn.services.db.execute(
        "INSERT INTO document_groups (tenant_id, doc_id, group_name) VALUES ('larkspur','finance/travel','finance')"
        " ON CONFLICT DO NOTHING")
    threads = threads_for(cairn)
    assert await threads.channels_for(await escalation(cairn, score=0.8)) == ["#finance-policy", ESCALATION_CHANNEL]


async def test_who_may_answer(cairn: Cairn) -> None:
    desk = escalation_desk(cairn.services)
    esc = await escalation(cairn, score=0.8)
    in_main = EscalationRecord(**{**esc.__dict__, "channel": ESCALATION_CHANNEL})
    in_owner = EscalationRecord(**{**esc.__dict__, "channel": "CFINANCEPOLICY"})

    def may(user: str, where: EscalationRecord) -> bool:
        return desk.may_handle(cairn.services.access.resolve_slack(user_id=user, team_id=TEAM), where)

    assert may(ADMIN, in_main) and may(ADMIN, in_owner)
    assert not may(BOB, in_main) and not may(BOB, in_owner)
    assert may("U0OLIVIA", in_owner)  # an owner, in an owner's channel
    assert not may("U0OLIVIA", in_main)
