"""Sessions, turns, escalations, admin replies, feedback and seen events on real SQLite."""

from __future__ import annotations

import json
from datetime import timedelta

import aiosqlite
import pytest

from store.conversations import ConversationStore, escalation_id_for
from store.db import utcnow


@pytest.fixture
def store(conn: aiosqlite.Connection) -> ConversationStore:
    return ConversationStore(conn)


async def open_one(store: ConversationStore, turn_id: str = "t-1", **kwargs: object):
    values: dict[str, object] = {"session_id": "s-1", "tenant_id": "acme", "user_id": "U1",
                                 "question": "What is the wholesale returns policy?", "reason": "below_score_floor",
                                 "passages": [{"chunk_id": "acme:returns:v1:0000", "score": 0.31}],
                                 "top_score": 0.31, **kwargs}
    return await store.open_escalation(turn_id=turn_id, **values)  # type: ignore[arg-type]


async def test_session_get_or_create_keeps_the_first_identity(store: ConversationStore) -> None:
    first = await store.get_or_create_session(session_id="s-1", user_id="U1", tenant_id="acme", channel="C1",
                                              thread_ts="1.2", surface="slack", lang="en")
    again = await store.get_or_create_session(session_id="s-1", user_id="U2", tenant_id="other")
    assert again.user_id == "U1" and again.tenant_id == "acme" and again.channel == "C1"
    assert again.lang == "en" and again.created_at == first.created_at
    assert await store.get_session(session_id="nope") is None


async def test_turn_round_trip_and_rewrite(store: ConversationStore) -> None:
    turn = await store.write_turn(
        turn_id="t-1", session_id="s-1", user_id="U1", tenant_id="acme", question="q?", route="answer",
        reason=None, answer="A [acme:x:v1:0000]", top_score=0.7, passages=[{"chunk_id": "acme:x:v1:0000", "score": 0.7}],
        trace={"route_fired": "validate→END"}, answerer="extractive", prompt_version="extractive-v1",
        validation={"ok": True}, timings={"total_ms": 12.5})
    assert turn.passages == [{"chunk_id": "acme:x:v1:0000", "score": 0.7}]
    assert turn.trace["route_fired"] == "validate→END" and turn.timings == {"total_ms": 12.5}
    again = await store.write_turn(turn_id="t-1", session_id="s-1", user_id="U1", tenant_id="acme",
                                    question="q?", route="answer", reason=None, answer="A", top_score=0.7,
                                    passages=[], trace={"extra": 1})
    assert again.created_at == turn.created_at and again.trace == {"extra": 1}
    assert [t.turn_id for t in await store.list_turns(session_id="s-1")] == ["t-1"]


async def test_write_turn_returns_the_turn_as_stored(store: ConversationStore) -> None:
    values: dict[str, object] = {
        "session_id": "s-1", "user_id": "U1", "tenant_id": "acme", "question": "q?", "route": "answer",
        "reason": None, "answer": "A [acme:x:v1:0000]", "top_score": 0.7,
        "passages": [{"chunk_id": "acme:x:v1:0000", "score": 0.7}], "trace": {"route_fired": "validate→END"},
        "answerer": "extractive", "prompt_version": "extractive-v1", "validation": {"ok": True},
        "timings": {"total_ms": 12.5}}
    written = await store.write_turn(turn_id="t-w", **values)  # type: ignore[arg-type]
    assert written == await store.get_turn(turn_id="t-w")
    assert {k: getattr(written, k) for k in values if k != "validation"} == {
        k: v for k, v in values.items() if k != "validation"}
    assert json.loads(str(written.validation)) == values["validation"]


async def test_a_sessions_open_escalation_is_found_through_its_own_index(
        store: ConversationStore, conn: aiosqlite.Connection, engine: str) -> None:
    query = "SELECT * FROM escalations WHERE session_id=? AND status='open' ORDER BY created_at DESC LIMIT 1"
    if engine == "postgresql":
        # An empty table is read whole by PostgreSQL's planner: ask what it would do with a large one.
        await conn.execute("SET enable_seqscan = off")
        async with conn.execute("EXPLAIN " + query, ("s-1",)) as cur:
            plan = " ".join(str(row[0]) for row in await cur.fetchall())
        assert "escalations_session" in plan and "Sort" not in plan, plan
        return
    async with conn.execute("EXPLAIN QUERY PLAN " + query, ("s-1",)) as cur:
        plan = " ".join(str(row[-1]) for row in await cur.fetchall())
    assert "escalations_session" in plan and "TEMP B-TREE" not in plan


async def test_open_escalation_is_idempotent_by_turn(store: ConversationStore) -> None:
    first = await open_one(store, deadline_hours=24)
    second = await open_one(store, reason="answer_validation_failed")
    assert first.escalation_id == second.escalation_id == escalation_id_for("t-1")
    assert second.reason == "below_score_floor" and second.status == "open"
    assert second.deadline_at is not None and second.passages[0]["chunk_id"] == "acme:returns:v1:0000"
    assert escalation_id_for("t-1") != escalation_id_for("t-2")
    assert (await store.pending_escalation(session_id="s-1")).escalation_id == first.escalation_id  # type: ignore[union-attr]


async def test_admin_replies_are_recorded_once_and_first_reply_is_kept(store: ConversationStore) -> None:
    esc = await open_one(store)
    assert await store.record_admin_reply(escalation_id=esc.escalation_id, message_key="m1", admin_id="A1", text="x")
    first_at = (await store.get_escalation(escalation_id=esc.escalation_id)).first_reply_at  # type: ignore[union-attr]
    assert first_at is not None
    assert not await store.record_admin_reply(escalation_id=esc.escalation_id, message_key="m1", admin_id="A1",
                                              text="changed")
    assert await store.record_admin_reply(escalation_id=esc.escalation_id, message_key="m2", admin_id="A1", text="y")
    assert (await store.get_escalation(escalation_id=esc.escalation_id)).first_reply_at == first_at  # type: ignore[union-attr]
    assert (await store.get_admin_reply(escalation_id=esc.escalation_id, message_key="m1")).text == "x"  # type: ignore[union-attr]
    assert await store.mark_delivered(escalation_id=esc.escalation_id, message_key="m1")
    assert not await store.mark_delivered(escalation_id=esc.escalation_id, message_key="m1")
    replies = await store.list_admin_replies(escalation_id=esc.escalation_id)
    assert [(r.message_key, r.delivered_at is not None) for r in replies] == [("m1", True), ("m2", False)]


async def test_lifecycle_resolve_exactly_once(store: ConversationStore) -> None:
    esc = await open_one(store)
    assert await store.claim(escalation_id=esc.escalation_id, admin_id="A1")
    assert not await store.claim(escalation_id=esc.escalation_id, admin_id="A2")
    assert await store.mark_answered(escalation_id=esc.escalation_id)
    assert await store.pending_escalation(session_id="s-1") is None  # answered: the session is free again
    assert [e.escalation_id for e in await store.list_escalations(open_only=True)] == [esc.escalation_id]
    assert not await store.expire(escalation_id=esc.escalation_id)  # only unanswered ones expire
    assert await store.resolve(escalation_id=esc.escalation_id, resolved_by="A1")
    assert not await store.resolve(escalation_id=esc.escalation_id, resolved_by="A2")
    closed = await store.get_escalation(escalation_id=esc.escalation_id)
    assert closed.status == "resolved" and closed.resolved_by == "A1" and closed.closed_at  # type: ignore[union-attr]
    assert await store.list_escalations(open_only=True) == []
    assert len(await store.list_escalations()) == 1


async def test_expiry(store: ConversationStore) -> None:
    esc = await open_one(store, deadline_hours=1)
    assert await store.due_for_expiry() == []
    due = await store.due_for_expiry(now=utcnow() + timedelta(hours=2))
    assert [e.escalation_id for e in due] == [esc.escalation_id]
    assert await store.expire(escalation_id=esc.escalation_id)
    assert not await store.expire(escalation_id=esc.escalation_id)
    assert not await store.resolve(escalation_id=esc.escalation_id, resolved_by="A1")


async def test_thread_transcript_and_label(store: ConversationStore) -> None:
    esc = await open_one(store, transcript="user: What is the wholesale returns policy?")
    await store.set_thread(escalation_id=esc.escalation_id, channel="C-ESC", thread_ts="111.222")
    await store.append_to_escalation(escalation_id=esc.escalation_id, author="user", text="any news?")
    await store.label(escalation_id=esc.escalation_id, kind="missing_policy", topic="wholesale returns")
    found = await store.find_escalation(channel="C-ESC", thread_ts="111.222")
    assert found is not None and found.escalation_id == esc.escalation_id
    assert found.transcript.splitlines() == ["user: What is the wholesale returns policy?", "user: any news?"]
    assert (found.kind, found.topic, found.label_attempts) == ("missing_policy", "wholesale returns", 1)


async def test_feedback_and_seen_events(store: ConversationStore) -> None:
    await store.record_feedback(turn_id="t-1", user_id="U1", value=1)
    await store.record_feedback(turn_id="t-1", user_id="U1", value=-1)
    await store.record_feedback(turn_id="t-1", user_id="U2", value=1)
    assert await store.get_feedback(turn_id="t-1") == {"U1": -1, "U2": 1}
    with pytest.raises(ValueError):
        await store.record_feedback(turn_id="t-1", user_id="U1", value=5)
    assert await store.seen_event(key="Ev1")
    assert not await store.seen_event(key="Ev1")
