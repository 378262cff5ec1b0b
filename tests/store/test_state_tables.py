"""The stores whose own tests live with their callers (escalations/, retrieval/sync, bot/) read and
write here on both engines: relays, sources, controls, the digest's reports, counts and retention."""

from __future__ import annotations

from datetime import timedelta

import aiosqlite

from store.controls import Controls
from store.conversations import ConversationStore
from store.counts import open_escalations_by_status
from store.db import utcnow
from store.relays import Relays
from store.reports import EscalationReports
from store.retention import purge_old_turns
from store.sources import Sources


async def test_relays_are_expected_once_then_pending_until_relayed(conn: aiosqlite.Connection) -> None:
    relays = Relays(conn)
    await relays.setup()
    await relays.setup()  # idempotent
    now = utcnow()
    for text in ("first", "again"):
        await relays.expect(escalation_id="e1", message_key="m1", admin_id="U0A", admin_name="adam", text=text,
                            now=now - timedelta(minutes=5))
    await relays.answered(escalation_id="e1", message_key="m1", answer="It is 25 days.", turn_id="t1")
    await relays.attempted(escalation_id="e1", message_key="m1")
    pending = await relays.pending(created_before=now, max_attempts=3)
    assert [(r.text, r.answer, r.attempts) for r in pending] == [("first", "It is 25 days.", 1)]
    assert await relays.pending(created_before=now, max_attempts=1) == []
    await relays.relayed(escalation_id="e1", message_key="m1", now=now)
    record = await relays.get(escalation_id="e1", message_key="m1")
    assert record is not None and record.relayed_at is not None
    assert await relays.pending(created_before=now, max_attempts=3) == []


async def test_sources_are_saved_claimed_once_and_keep_their_items(conn: aiosqlite.Connection) -> None:
    sources = Sources(conn)
    await sources.setup()
    saved = await sources.save(tenant_id="acme", kind="directory", location="/srv/handbook", groups=["hr", "hr"],
                               owner="#people", every_s=3600)
    again = await sources.save(tenant_id="acme", kind="directory", location="/srv/handbook", groups=None,
                               owner=None, every_s=None)
    assert again.source_id == saved.source_id and again.every_s is None and again.next_run_at is None
    await sources.save(tenant_id="acme", kind="directory", location="/srv/handbook", groups=["hr"], owner="#people",
                       every_s=60)
    assert [s.source_id for s in await sources.due(now=utcnow() + timedelta(minutes=1))] == [saved.source_id]
    assert await sources.claim_run(source_id=saved.source_id)
    assert not await sources.claim_run(source_id=saved.source_id)  # one run at a time
    await sources.finish_run(source_id=saved.source_id, status="ok", error=None, counts={"new": 2})
    assert await sources.claim_run(source_id=saved.source_id)
    for key, state in (("a.md", "present"), ("b.md", "withdrawn"), ("a.md", "present")):
        await sources.record_item(source_id=saved.source_id, tenant_id="acme", item_key=key, doc_id=key[0],
                                  links=["x"], state=state)
    assert sorted(await sources.items(source_id=saved.source_id)) == ["a.md", "b.md"]
    assert await sources.owner_of(tenant_id="acme", doc_id="a") == saved.source_id
    assert await sources.owner_of(tenant_id="acme", doc_id="b") is None
    assert [s.source_id for s in await sources.sources_of_documents(tenant_id="acme", doc_ids=["a", "b"])] \
        == [saved.source_id]
    assert [s.location for s in await sources.list_sources(tenant_id="acme")] == ["/srv/handbook"]
    await sources.remove(source_id=saved.source_id)
    assert await sources.list_sources() == [] and await sources.items(source_id=saved.source_id) == {}


async def test_controls_pause_and_unpause(conn: aiosqlite.Connection) -> None:
    controls = Controls(conn, cache_s=0)
    assert not await controls.is_paused("llm")
    await controls.set_paused("llm", True, by="U0A", reason="drill")
    assert await controls.is_paused("llm") and not await controls.is_paused("tools")
    await controls.set_paused("llm", False, by="U0A")
    assert [(s.kind, s.paused) for s in await controls.state()] == [("llm", False), ("tools", False)]


async def test_reports_counts_and_retention_read_the_conversation_tables(conn: aiosqlite.Connection) -> None:
    conversations = ConversationStore(conn)
    reports = EscalationReports(conn, conversations)
    start = utcnow() - timedelta(hours=1)
    for n, tenant in enumerate(("acme", "acme", "harbor")):
        await conversations.get_or_create_session(session_id=f"s{n}", user_id="U0B", tenant_id=tenant)
        await conversations.write_turn(turn_id=f"t{n}", session_id=f"s{n}", user_id="U0B", tenant_id=tenant,
                                       question=f"q{n}?", route="escalate", reason="below_score_floor",
                                       answer=None, top_score=0.2, passages=[], trace={})
        await conversations.open_escalation(turn_id=f"t{n}", session_id=f"s{n}", tenant_id=tenant, user_id="U0B",
                                            question=f"q{n}?", reason="below_score_floor", deadline_hours=2)
        await conversations.record_feedback(turn_id=f"t{n}", user_id="U0B", value=-1 if n else 1)
    end = utcnow() + timedelta(hours=1)
    assert len(await reports.escalations_between(start=start, end=end)) == 3
    assert len(await reports.escalations_between(start=start, end=end, tenant_id="acme")) == 2
    assert [reason for _, reason in await reports.reasons_between(start=start, end=end, tenant_id="harbor")] \
        == ["below_score_floor"]
    feedback = await reports.feedback_between(start=start, end=end, tenant_id="acme")
    assert (feedback.up, feedback.down, feedback.down_questions) == (1, 1, ["q1?"])
    assert len(await reports.unlabelled_escalations(max_attempts=3)) == 3
    assert len(await reports.due_for_reminder(now=utcnow() + timedelta(hours=1, minutes=30))) == 3
    assert await reports.expired_between(start=start, end=end) == []
    assert await reports.proposals_awaiting() == []
    assert await open_escalations_by_status(conn) == {"open": 3, "answered": 0}

    later = utcnow() + timedelta(days=91)
    assert await purge_old_turns(conn, older_than_days=90, now=later) == 0  # open escalations keep them
    for escalation in await conversations.list_escalations():
        assert await conversations.resolve(escalation_id=escalation.escalation_id, resolved_by="U0A")
    assert await purge_old_turns(conn, older_than_days=90, now=later) == 3
