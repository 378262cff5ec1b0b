"""Read-side reports on escalations: what the classifier, the weekly digest and the reminders read.

They only read tables the conversation store owns (escalations, feedback, turns); labels are written
through the store's own methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiosqlite

from store.conversations import ConversationStore
from store.db import iso
from store.proposals import ProposalRecord, ProposedAnswers
from store.records import EscalationRecord


@dataclass(frozen=True)
class FeedbackCounts:
    up: int
    down: int
    down_questions: list[str] = field(default_factory=list)


# The topic of an escalation the classifier could not label (tried again while attempts remain).
UNCLASSIFIED = "unclassified"


class EscalationReports:
    def __init__(self, conn: aiosqlite.Connection, conversations: ConversationStore | None = None) -> None:
        self._conn = conn
        self.conversations = conversations or ConversationStore(conn)

    async def proposals_awaiting(self, *, tenant_id: str | None = None) -> list[ProposalRecord]:
        """Admin answers filed for an owner's approval and not yet decided (store/proposals.py)."""
        proposals = ProposedAnswers(self._conn)
        await proposals.setup()  # a database that never filed one has no table yet
        return await proposals.list(tenant_id=tenant_id, status="proposed")

    async def _ids(self, sql: str, args: tuple[Any, ...]) -> list[str]:
        async with self._conn.execute(sql, args) as cur:
            return [r[0] for r in await cur.fetchall()]

    async def _records(self, ids: list[str]) -> list[EscalationRecord]:
        out = []
        for escalation_id in ids:
            record = await self.conversations.get_escalation(escalation_id=escalation_id)
            if record is not None:
                out.append(record)
        return out

    # -- labels ---------------------------------------------------------------------------------

    async def unlabelled_escalations(self, *, max_attempts: int, limit: int = 50) -> list[EscalationRecord]:
        """Never labelled, or labelled `unclassified` by a failed attempt with attempts left; oldest first."""
        return await self._records(await self._ids(
            "SELECT escalation_id FROM escalations WHERE label_attempts < ? AND"
            " (labelled_at IS NULL OR topic IS NULL OR topic=?) ORDER BY created_at LIMIT ?",
            (max_attempts, UNCLASSIFIED, limit)))

    # -- the digest's window --------------------------------------------------------------------

    async def escalations_between(self, *, start: datetime, end: datetime,
                                  tenant_id: str | None = None) -> list[EscalationRecord]:
        """Escalations opened in [start, end) (of one tenant, when given), oldest first."""
        return await self._records(await self._ids(
            "SELECT escalation_id FROM escalations WHERE created_at >= ? AND created_at < ?"
            " AND (CAST(? AS TEXT) IS NULL OR tenant_id=?) ORDER BY created_at",
            (iso(start), iso(end), tenant_id, tenant_id)))

    async def reasons_between(self, *, start: datetime, end: datetime,
                              tenant_id: str | None = None) -> list[tuple[str, str]]:
        """(created_at, reason) of escalations opened in [start, end): enough for the weekly trend."""
        async with self._conn.execute(
            "SELECT created_at, reason FROM escalations WHERE created_at >= ? AND created_at < ?"
            " AND (CAST(? AS TEXT) IS NULL OR tenant_id=?) ORDER BY created_at",
            (iso(start), iso(end), tenant_id, tenant_id)) as cur:
            return [(r[0], r[1]) for r in await cur.fetchall()]

    async def expired_between(self, *, start: datetime, end: datetime,
                              tenant_id: str | None = None) -> list[EscalationRecord]:
        """Escalations that expired (closed unanswered at the deadline) in [start, end)."""
        return await self._records(await self._ids(
            "SELECT escalation_id FROM escalations WHERE status='expired' AND closed_at >= ? AND closed_at < ?"
            " AND (CAST(? AS TEXT) IS NULL OR tenant_id=?) ORDER BY closed_at",
            (iso(start), iso(end), tenant_id, tenant_id)))

    async def feedback_between(self, *, start: datetime, end: datetime, examples: int = 5,
                               tenant_id: str | None = None) -> FeedbackCounts:
        window = (iso(start), iso(end), tenant_id, tenant_id)
        async with self._conn.execute(
            "SELECT COALESCE(SUM(CASE WHEN f.value=1 THEN 1 ELSE 0 END),0),"
            " COALESCE(SUM(CASE WHEN f.value=-1 THEN 1 ELSE 0 END),0) FROM feedback f"
            " LEFT JOIN turns t ON t.turn_id=f.turn_id"
            " WHERE f.created_at >= ? AND f.created_at < ? AND (CAST(? AS TEXT) IS NULL OR t.tenant_id=?)",
            window) as cur:
            row = await cur.fetchone()
        async with self._conn.execute(
            "SELECT t.question FROM feedback f JOIN turns t ON t.turn_id=f.turn_id WHERE f.value=-1"
            " AND f.created_at >= ? AND f.created_at < ? AND (CAST(? AS TEXT) IS NULL OR t.tenant_id=?)"
            " GROUP BY t.turn_id ORDER BY MIN(f.created_at) LIMIT ?", (*window, examples)) as cur:
            questions = [r[0] for r in await cur.fetchall()]
        return FeedbackCounts(up=int(row[0]) if row else 0, down=int(row[1]) if row else 0,
                              down_questions=questions)

    # -- expiry ---------------------------------------------------------------------------------

    async def due_for_reminder(self, *, now: datetime) -> list[EscalationRecord]:
        """Open, not yet reminded, past half its time to the deadline but not past the deadline."""
        candidates = await self._records(await self._ids(
            "SELECT escalation_id FROM escalations WHERE status='open' AND reminded_at IS NULL"
            " AND deadline_at IS NOT NULL AND deadline_at > ? ORDER BY deadline_at", (iso(now),)))
        due = []
        for esc in candidates:
            created, deadline = datetime.fromisoformat(esc.created_at), datetime.fromisoformat(str(esc.deadline_at))
            if now >= created + (deadline - created) / 2:
                due.append(esc)
        return due
