"""Read-side queries the analytics need, plus the `job_runs` claims that make scheduled posts idempotent.

They live here, taking the aiosqlite connection like a store does, rather than in
store/conversations.py, so that module keeps one owner while the graph work lands; they only read
tables the store owns (escalations, feedback, turns) and write only `job_runs` and escalation labels
through the store's own methods.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import aiosqlite

from bot.analytics.taxonomy import UNCLASSIFIED
from store.conversations import ConversationStore
from store.db import iso
from store.records import EscalationRecord


@dataclass(frozen=True)
class FeedbackCounts:
    up: int
    down: int
    down_questions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunClaim:
    """Ownership of one run key (e.g. "digest:2026-W05") until marked done or released."""

    run_key: str
    token: str
    reclaimed: bool = False  # a stale claim of a crashed process was taken over


@dataclass(frozen=True)
class RunState:
    run_key: str
    created_at: str
    detail: dict[str, Any]

    @property
    def state(self) -> str:
        return str(self.detail.get("state", "done"))


class AnalyticsQueries:
    def __init__(self, conn: aiosqlite.Connection, conversations: ConversationStore | None = None) -> None:
        self._conn = conn
        self.conversations = conversations or ConversationStore(conn)

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

    async def escalations_between(self, *, start: datetime, end: datetime) -> list[EscalationRecord]:
        """Escalations opened in [start, end), oldest first."""
        return await self._records(await self._ids(
            "SELECT escalation_id FROM escalations WHERE created_at >= ? AND created_at < ? ORDER BY created_at",
            (iso(start), iso(end))))

    async def reasons_between(self, *, start: datetime, end: datetime) -> list[tuple[str, str]]:
        """(created_at, reason) of escalations opened in [start, end): enough for the weekly trend."""
        async with self._conn.execute(
            "SELECT created_at, reason FROM escalations WHERE created_at >= ? AND created_at < ?"
            " ORDER BY created_at", (iso(start), iso(end))) as cur:
            return [(r[0], r[1]) for r in await cur.fetchall()]

    async def expired_between(self, *, start: datetime, end: datetime) -> list[EscalationRecord]:
        """Escalations that expired (closed unanswered at the deadline) in [start, end)."""
        return await self._records(await self._ids(
            "SELECT escalation_id FROM escalations WHERE status='expired' AND closed_at >= ? AND closed_at < ?"
            " ORDER BY closed_at", (iso(start), iso(end))))

    async def feedback_between(self, *, start: datetime, end: datetime, examples: int = 5) -> FeedbackCounts:
        async with self._conn.execute(
            "SELECT COALESCE(SUM(value=1),0), COALESCE(SUM(value=-1),0) FROM feedback"
            " WHERE created_at >= ? AND created_at < ?", (iso(start), iso(end))) as cur:
            row = await cur.fetchone()
        async with self._conn.execute(
            "SELECT t.question FROM feedback f JOIN turns t ON t.turn_id=f.turn_id WHERE f.value=-1"
            " AND f.created_at >= ? AND f.created_at < ? GROUP BY t.turn_id ORDER BY MIN(f.created_at) LIMIT ?",
            (iso(start), iso(end), examples)) as cur:
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

    # -- job runs: claim → work → mark done ------------------------------------------------------

    async def get_run(self, *, run_key: str) -> RunState | None:
        async with self._conn.execute("SELECT run_key, created_at, detail FROM job_runs WHERE run_key=?",
                                      (run_key,)) as cur:
            row = await cur.fetchone()
        if row is None:
            return None
        try:
            detail = json.loads(row[2] or "{}")
        except ValueError:
            detail = {"raw": row[2]}
        return RunState(run_key=row[0], created_at=row[1], detail=detail if isinstance(detail, dict) else {})

    async def claim_run(self, *, run_key: str, now: datetime, stale_after: timedelta) -> RunClaim | None:
        """Own `run_key`, or None when it is done or another process holds a fresh claim.

        A claim older than `stale_after` and still not done belongs to a process that died mid-run:
        it is taken over (compare-and-set on the old detail, so two survivors cannot both take it).
        """
        token = uuid.uuid4().hex
        detail = json.dumps({"state": "claimed", "token": token, "claimed_at": iso(now)})
        cur = await self._conn.execute("INSERT OR IGNORE INTO job_runs (run_key, created_at, detail) VALUES (?,?,?)",
                                       (run_key, iso(now), detail))
        inserted = cur.rowcount == 1
        await cur.close()
        if inserted:
            return RunClaim(run_key, token)
        current = await self.get_run(run_key=run_key)
        if current is None or current.state != "claimed":
            return None
        claimed_at = datetime.fromisoformat(str(current.detail.get("claimed_at") or current.created_at))
        if now - claimed_at < stale_after:
            return None
        cur = await self._conn.execute(
            "UPDATE job_runs SET detail=? WHERE run_key=? AND json_extract(detail,'$.token')=?",
            (detail, run_key, current.detail.get("token")))
        taken = cur.rowcount == 1
        await cur.close()
        return RunClaim(run_key, token, reclaimed=True) if taken else None

    async def mark_run(self, claim: RunClaim, *, state: str, now: datetime, **extra: object) -> bool:
        """Record progress ("posted", "done") while still holding the claim; False if it was lost."""
        current = await self.get_run(run_key=claim.run_key)
        if current is None or current.detail.get("token") != claim.token:
            return False
        detail = {**current.detail, **extra, "state": state, f"{state}_at": iso(now)}
        cur = await self._conn.execute(
            "UPDATE job_runs SET detail=? WHERE run_key=? AND json_extract(detail,'$.token')=?",
            (json.dumps(detail, default=str), claim.run_key, claim.token))
        changed = cur.rowcount == 1
        await cur.close()
        return changed

    async def release_run(self, claim: RunClaim) -> None:
        """Give the key back after a failure before anything was posted, so a later trigger retries."""
        cur = await self._conn.execute(
            "DELETE FROM job_runs WHERE run_key=? AND json_extract(detail,'$.token')=?"
            " AND json_extract(detail,'$.state')='claimed'", (claim.run_key, claim.token))
        await cur.close()

    async def forget_run(self, *, run_key: str) -> None:
        """For `--force`: the next claim of this key starts afresh."""
        cur = await self._conn.execute("DELETE FROM job_runs WHERE run_key=?", (run_key,))
        await cur.close()
