"""Conversations: sessions, turn traces, escalations, admin replies, feedback, seen events.

Escalation lifecycle: `open` (a person is needed; the session's new messages are appended to it)
→ `answered` (an admin reply reached the user; more replies may follow) → `resolved`, or
`open` → `expired` (nobody answered before the deadline). `resolve` and `expire` happen at most
once. The escalation id is derived from the turn id, so opening it again (a graph node re-runs
from its first line when resumed) is a no-op.

Every write that a retry may repeat is idempotent by a natural key: escalations by turn id,
admin replies by (escalation id, message key), seen events by their key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import aiosqlite

from store.db import iso, transaction, utcnow, write, write_returning
from store.records import EscalationRecord, TurnRecord

OPEN = "open"
ANSWERED = "answered"
RESOLVED = "resolved"
EXPIRED = "expired"
ACTIVE_STATUSES = (OPEN, ANSWERED)


def escalation_id_for(turn_id: str) -> str:
    """Deterministic and short enough to type: `cairn reply esc-3f9a0c1b2d "…"`."""
    return "esc-" + hashlib.sha256(turn_id.encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    user_id: str
    tenant_id: str
    channel: str | None
    thread_ts: str | None
    surface: str
    lang: str | None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class AdminReplyRecord:
    escalation_id: str
    message_key: str
    admin_id: str
    text: str
    delivered_at: str | None
    created_at: str


class ConversationStore:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    # execute_fetchall is one round trip to the connection's thread; execute, fetchone and closing the
    # cursor were three (a turn looks up its session and escalation this way).
    async def _one(self, sql: str, args: tuple[Any, ...]) -> aiosqlite.Row | None:
        rows = await self._conn.execute_fetchall(sql, args)
        return next(iter(rows), None)

    # Writes go through store.db's `write` helpers: on the database's writer connection, never on the
    # one this store reads from (store/db.py says why).
    async def _run(self, sql: str, args: tuple[Any, ...]) -> list[aiosqlite.Row]:
        """A write whose row count nobody needs: its RETURNING rows, if any."""
        return await write_returning(self._conn, sql, args)

    async def _changed(self, sql: str, args: tuple[Any, ...]) -> int:
        """A write: the number of rows it changed."""
        return await write(self._conn, sql, args)

    # -- sessions -------------------------------------------------------------------------------

    async def get_or_create_session(self, *, session_id: str, user_id: str, tenant_id: str,
                                    channel: str | None = None, thread_ts: str | None = None,
                                    surface: str = "cli", lang: str | None = None) -> SessionRecord:
        now = iso()
        rows = await self._run(
            "INSERT INTO sessions (session_id, user_id, tenant_id, channel, thread_ts, surface, lang,"
            " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(session_id) DO UPDATE SET updated_at=excluded.updated_at,"
            " lang=COALESCE(excluded.lang, sessions.lang) RETURNING *",
            (session_id, user_id, tenant_id, channel, thread_ts, surface, lang, now, now),
        )
        return SessionRecord(**dict(rows[0]))  # the row as written (RETURNING), not read back separately

    async def get_session(self, *, session_id: str) -> SessionRecord | None:
        row = await self._one("SELECT * FROM sessions WHERE session_id=?", (session_id,))
        return SessionRecord(**dict(row)) if row else None

    # -- turns ----------------------------------------------------------------------------------

    async def write_turn(self, *, turn_id: str, session_id: str, user_id: str, tenant_id: str, question: str,
                         route: str | None, reason: str | None, answer: str | None, top_score: float | None,
                         passages: list[dict[str, object]], trace: dict[str, object],
                         answerer: str | None = None, model: str | None = None,
                         prompt_version: str | None = None, validation: dict[str, object] | None = None,
                         timings: dict[str, float] | None = None) -> TurnRecord:
        """Write (or rewrite) a turn; `answer` is only ever the text the user was shown. The statement
        has committed when this returns. Returns the turn as stored (its `created_at` kept from the first
        write), from the write itself (RETURNING): a read of `db` may still see the snapshot of another
        coroutine's open cursor."""
        rows = await self._run(
            "INSERT INTO turns (turn_id, session_id, user_id, tenant_id, question, route, reason,"
            " answer, top_score, passages, trace, answerer, model, prompt_version, validation, timings,"
            " created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(turn_id) DO UPDATE SET"
            " session_id=excluded.session_id, user_id=excluded.user_id, tenant_id=excluded.tenant_id,"
            " question=excluded.question, route=excluded.route, reason=excluded.reason, answer=excluded.answer,"
            " top_score=excluded.top_score, passages=excluded.passages, trace=excluded.trace,"
            " answerer=excluded.answerer, model=excluded.model, prompt_version=excluded.prompt_version,"
            " validation=excluded.validation, timings=excluded.timings RETURNING *",
            (turn_id, session_id, user_id, tenant_id, question, route, reason, answer, top_score,
             _dump(passages), _dump(trace), answerer, model, prompt_version,
             None if validation is None else _dump(validation), _dump(timings or {}), iso()),
        )
        return _turn(rows[0])

    async def get_turn(self, *, turn_id: str) -> TurnRecord | None:
        row = await self._one("SELECT * FROM turns WHERE turn_id=?", (turn_id,))
        return _turn(row) if row else None

    async def list_turns(self, *, session_id: str, limit: int = 50) -> list[TurnRecord]:
        async with self._conn.execute(
            "SELECT * FROM turns WHERE session_id=? ORDER BY created_at DESC LIMIT ?", (session_id, limit)
        ) as cur:
            rows = list(await cur.fetchall())
        return [_turn(r) for r in reversed(rows)]

    # -- escalations ----------------------------------------------------------------------------

    async def open_escalation(self, *, turn_id: str, session_id: str, tenant_id: str, user_id: str,
                              question: str, reason: str, transcript: str = "",
                              passages: list[dict[str, object]] | None = None, top_score: float | None = None,
                              deadline_hours: float | None = None) -> EscalationRecord:
        """Idempotent by turn id: a second call returns the first escalation unchanged (the row comes back
        from the write itself, RETURNING, not from a read that an open cursor's snapshot could precede)."""
        escalation_id = escalation_id_for(turn_id)
        now = utcnow()
        deadline = iso(now + timedelta(hours=deadline_hours)) if deadline_hours else None
        rows = await self._run(
            "INSERT INTO escalations (escalation_id, session_id, turn_id, tenant_id, user_id,"
            " question, reason, transcript, passages, top_score, status, deadline_at, created_at)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,'open',?,?)"
            " ON CONFLICT(escalation_id) DO UPDATE SET escalation_id=escalations.escalation_id RETURNING *",
            (escalation_id, session_id, turn_id, tenant_id, user_id, question, reason, transcript,
             _dump(passages or []), top_score, deadline, iso(now)),
        )
        return _escalation(rows[0])

    async def get_escalation(self, *, escalation_id: str) -> EscalationRecord | None:
        row = await self._one("SELECT * FROM escalations WHERE escalation_id=?", (escalation_id,))
        return _escalation(row) if row else None

    async def find_escalation(self, *, channel: str, thread_ts: str) -> EscalationRecord | None:
        row = await self._one("SELECT * FROM escalations WHERE channel=? AND thread_ts=?", (channel, thread_ts))
        return _escalation(row) if row else None

    async def list_escalations(self, *, open_only: bool = False, tenant_id: str | None = None,
                               limit: int = 100) -> list[EscalationRecord]:
        """Newest first. `open_only`: not yet closed (status open or answered)."""
        sql, args = "SELECT * FROM escalations WHERE 1=1", []
        if open_only:
            sql += " AND status IN ('open','answered')"
        if tenant_id:
            sql += " AND tenant_id=?"
            args.append(tenant_id)
        async with self._conn.execute(sql + " ORDER BY created_at DESC LIMIT ?", (*args, limit)) as cur:
            return [_escalation(r) for r in await cur.fetchall()]

    async def pending_escalation(self, *, session_id: str) -> EscalationRecord | None:
        """The session's escalation still waiting for a person (status open), if any."""
        row = await self._one("SELECT * FROM escalations WHERE session_id=? AND status='open'"
                              " ORDER BY created_at DESC LIMIT 1", (session_id,))
        return _escalation(row) if row else None

    async def due_for_expiry(self, *, now: datetime | None = None) -> list[EscalationRecord]:
        async with self._conn.execute(
            "SELECT * FROM escalations WHERE status='open' AND deadline_at IS NOT NULL AND deadline_at<=?"
            " ORDER BY deadline_at", (iso(now),)
        ) as cur:
            return [_escalation(r) for r in await cur.fetchall()]

    async def append_to_escalation(self, *, escalation_id: str, author: str, text: str) -> None:
        """A follow-up from the user while a person is on it: kept on the escalation's transcript."""
        await self._run(
            "UPDATE escalations SET transcript = transcript || CASE WHEN transcript='' THEN '' ELSE ? END"
            " || ? WHERE escalation_id=?", ("\n", f"{author}: {text}", escalation_id))

    async def set_thread(self, *, escalation_id: str, channel: str, thread_ts: str) -> None:
        await self._changed("UPDATE escalations SET channel=?, thread_ts=? WHERE escalation_id=?",
                            (channel, thread_ts, escalation_id))

    async def record_admin_reply(self, *, escalation_id: str, message_key: str, admin_id: str,
                                 text: str) -> bool:
        """True the first time this (escalation, message key) is seen; a retry changes nothing."""
        now = iso()
        new = await self._changed(
            "INSERT INTO admin_replies (escalation_id, message_key, admin_id, text, created_at)"
            " VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING", (escalation_id, message_key, admin_id, text, now)) == 1
        if new:
            await self._changed("UPDATE escalations SET first_reply_at=COALESCE(first_reply_at, ?)"
                                " WHERE escalation_id=?", (now, escalation_id))
        return new

    async def get_admin_reply(self, *, escalation_id: str, message_key: str) -> AdminReplyRecord | None:
        row = await self._one("SELECT * FROM admin_replies WHERE escalation_id=? AND message_key=?",
                              (escalation_id, message_key))
        return AdminReplyRecord(**dict(row)) if row else None

    async def list_admin_replies(self, *, escalation_id: str) -> list[AdminReplyRecord]:
        async with self._conn.execute(
            "SELECT * FROM admin_replies WHERE escalation_id=? ORDER BY created_at", (escalation_id,)
        ) as cur:
            return [AdminReplyRecord(**dict(r)) for r in await cur.fetchall()]

    async def mark_delivered(self, *, escalation_id: str, message_key: str) -> bool:
        """True when this call delivered it (it was not delivered before)."""
        return await self._changed(
            "UPDATE admin_replies SET delivered_at=? WHERE escalation_id=? AND message_key=?"
            " AND delivered_at IS NULL", (iso(), escalation_id, message_key)) == 1

    async def mark_answered(self, *, escalation_id: str) -> bool:
        return await self._changed("UPDATE escalations SET status='answered' WHERE escalation_id=?"
                                   " AND status='open'", (escalation_id,)) == 1

    async def claim(self, *, escalation_id: str, admin_id: str) -> bool:
        return await self._changed(
            "UPDATE escalations SET claimed_by=? WHERE escalation_id=? AND claimed_by IS NULL"
            " AND status IN ('open','answered')", (admin_id, escalation_id)) == 1

    async def resolve(self, *, escalation_id: str, resolved_by: str) -> bool:
        """Exactly once: False when it is already resolved or expired (or does not exist)."""
        return await self._changed(
            "UPDATE escalations SET status='resolved', resolved_by=?, closed_at=? WHERE escalation_id=?"
            " AND status IN ('open','answered')", (resolved_by, iso(), escalation_id)) == 1

    async def expire(self, *, escalation_id: str) -> bool:
        """Only an escalation nobody answered expires; False otherwise."""
        return await self._changed(
            "UPDATE escalations SET status='expired', closed_at=? WHERE escalation_id=? AND status='open'",
            (iso(), escalation_id)) == 1

    async def mark_reminded(self, *, escalation_id: str) -> None:
        await self._changed("UPDATE escalations SET reminded_at=? WHERE escalation_id=?", (iso(), escalation_id))

    async def label(self, *, escalation_id: str, kind: str | None, topic: str | None) -> None:
        """For the classifier: the kind of gap (missing, conflict, …) and a short topic."""
        await self._changed(
            "UPDATE escalations SET kind=?, topic=?, labelled_at=?, label_attempts=label_attempts+1"
            " WHERE escalation_id=?", (kind, topic, iso(), escalation_id))

    # -- feedback and retries -------------------------------------------------------------------

    async def record_feedback(self, *, turn_id: str, user_id: str, value: int) -> None:
        if value not in (1, -1):
            raise ValueError("feedback value is +1 or -1")
        await self._changed(
            "INSERT INTO feedback (turn_id, user_id, value, created_at) VALUES (?,?,?,?)"
            " ON CONFLICT(turn_id, user_id) DO UPDATE SET value=excluded.value, created_at=excluded.created_at",
            (turn_id, user_id, value, iso()))

    async def get_feedback(self, *, turn_id: str) -> dict[str, int]:
        async with self._conn.execute("SELECT user_id, value FROM feedback WHERE turn_id=?", (turn_id,)) as cur:
            return {r["user_id"]: int(r["value"]) for r in await cur.fetchall()}

    async def seen_event(self, *, key: str) -> bool:
        """True the first time a key is seen (Slack retries deliver the same event again)."""
        return await self.first_seen(key)

    async def first_seen(self, *keys: str) -> bool:
        """True when none of the keys was seen before; all are recorded either way, in one transaction.
        One delivery of an event names it by several keys (its event id, its message); two deliveries
        racing through two replicas then never both lose, as they could key by key (each first to one)."""
        fresh = True
        async with transaction(self._conn) as conn:
            for key in keys:
                async with conn.execute("INSERT INTO seen_events (event_key, created_at) VALUES (?,?)"
                                        " ON CONFLICT DO NOTHING", (key, iso())) as cur:
                    fresh = cur.rowcount == 1 and fresh
        return fresh


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _turn(row: aiosqlite.Row) -> TurnRecord:
    d = dict(row)
    return TurnRecord(
        turn_id=d["turn_id"], session_id=d["session_id"], user_id=d["user_id"], tenant_id=d["tenant_id"],
        question=d["question"], route=d["route"], reason=d["reason"], answer=d["answer"],
        top_score=d["top_score"], passages=json.loads(d["passages"] or "[]"), trace=json.loads(d["trace"] or "{}"),
        answerer=d["answerer"], model=d["model"], prompt_version=d["prompt_version"], validation=d["validation"],
        timings=json.loads(d["timings"] or "{}"), created_at=d["created_at"])


def _escalation(row: aiosqlite.Row) -> EscalationRecord:
    d = dict(row)
    return EscalationRecord(
        escalation_id=d["escalation_id"], session_id=d["session_id"], turn_id=d["turn_id"],
        tenant_id=d["tenant_id"], user_id=d["user_id"], question=d["question"], reason=d["reason"],
        transcript=d["transcript"], passages=json.loads(d["passages"] or "[]"), top_score=d["top_score"],
        status=d["status"], channel=d["channel"], thread_ts=d["thread_ts"], claimed_by=d["claimed_by"],
        resolved_by=d["resolved_by"], kind=d["kind"], topic=d["topic"], label_attempts=d["label_attempts"],
        first_reply_at=d["first_reply_at"], reminded_at=d["reminded_at"], deadline_at=d["deadline_at"],
        created_at=d["created_at"], closed_at=d["closed_at"],
        extra={"labelled_at": d.get("labelled_at")})
