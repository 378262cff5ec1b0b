"""Run claims: the `job_runs` rows that make a scheduled post happen once (claim → work → mark done).

A key such as "digest:2026-W05" is claimed by one process; a claim left by a process that died is taken
over after `stale_after`; a failure before anything was posted releases it, so a later trigger retries.
A takeover learns when the key was first claimed and the tokens of the claims before it, so it can look
for what a holder that died may have done under them (a Slack message it posted) before doing it again;
a failure that leaves that uncertain (a post whose answer never came) hands the claim over at once
(`abandon_run`) instead of releasing it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiosqlite

from store.db import iso, write


@dataclass(frozen=True)
class RunClaim:
    """Ownership of one run key (e.g. "digest:2026-W05") until marked done or released."""

    run_key: str
    token: str
    reclaimed: bool = False  # a stale claim of a crashed process was taken over
    # With `reclaimed`: when the key was first claimed, and the tokens of every claim taken over since.
    first_claimed_at: datetime | None = None
    earlier_tokens: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunState:
    run_key: str
    created_at: str
    detail: dict[str, Any]

    @property
    def state(self) -> str:
        return str(self.detail.get("state", "done"))

    @property
    def first_claimed_at(self) -> str:
        """When the key was first claimed, across takeovers."""
        return str(self.detail.get("first_claimed_at") or self.detail.get("claimed_at") or self.created_at)


class RunClaims:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

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
        fresh = {"state": "claimed", "token": token, "claimed_at": iso(now)}
        inserted = await write(self._conn, "INSERT INTO job_runs (run_key, created_at, detail) VALUES (?,?,?)"
                               " ON CONFLICT DO NOTHING", (run_key, iso(now), json.dumps(fresh))) == 1
        if inserted:
            return RunClaim(run_key, token)
        current = await self.get_run(run_key=run_key)
        if current is None or current.state != "claimed":
            return None
        claimed_at = datetime.fromisoformat(str(current.detail.get("claimed_at") or current.created_at))
        if now - claimed_at < stale_after:
            return None
        first = current.first_claimed_at
        earlier = (*(str(t) for t in current.detail.get("earlier_tokens") or ()), str(current.detail.get("token")))
        detail = {**fresh, "first_claimed_at": first, "earlier_tokens": list(earlier)}
        taken = await write(
            self._conn, "UPDATE job_runs SET detail=? WHERE run_key=? AND json_extract(detail,'$.token')=?",
            (json.dumps(detail), run_key, current.detail.get("token"))) == 1
        if not taken:
            return None
        return RunClaim(run_key, token, reclaimed=True, first_claimed_at=datetime.fromisoformat(first),
                        earlier_tokens=earlier)

    async def mark_run(self, claim: RunClaim, *, state: str, now: datetime, **extra: object) -> bool:
        """Record progress ("posted", "done") while still holding the claim; False if it was lost."""
        current = await self.get_run(run_key=claim.run_key)
        if current is None or current.detail.get("token") != claim.token:
            return False
        return await self._write(claim, {**current.detail, **extra, "state": state, f"{state}_at": iso(now)})

    async def release_run(self, claim: RunClaim) -> None:
        """Give the key back after a failure before anything was posted, so a later trigger retries."""
        await write(self._conn, "DELETE FROM job_runs WHERE run_key=? AND json_extract(detail,'$.token')=?"
                    " AND json_extract(detail,'$.state')='claimed'", (claim.run_key, claim.token))

    async def abandon_run(self, claim: RunClaim) -> None:
        """Give the key up after a failure that may have done the work (a post whose answer never came):
        the row stays claimed but is due for takeover at once, and the taker looks before redoing it."""
        current = await self.get_run(run_key=claim.run_key)
        if current is None or current.detail.get("token") != claim.token or current.state != "claimed":
            return
        await self._write(claim, {**current.detail, "first_claimed_at": current.first_claimed_at,
                                  "claimed_at": iso(datetime.min.replace(tzinfo=UTC))})

    async def _write(self, claim: RunClaim, detail: dict[str, Any]) -> bool:
        """Replace the key's detail while `claim` still holds it; False if it was lost."""
        return await write(
            self._conn, "UPDATE job_runs SET detail=? WHERE run_key=? AND json_extract(detail,'$.token')=?",
            (json.dumps(detail, default=str), claim.run_key, claim.token)) == 1

    async def forget_run(self, *, run_key: str) -> None:
        """For `--force`: the next claim of this key starts afresh."""
        await write(self._conn, "DELETE FROM job_runs WHERE run_key=?", (run_key,))

    async def forget_runs_before(self, *, prefix: str, before: datetime) -> int:
        """Forget the runs of keys starting `prefix` claimed before `before` (a periodic job's past
        periods, whose keys block nobody any more); returns how many."""
        return await write(self._conn, "DELETE FROM job_runs WHERE substr(run_key, 1, ?) = ? AND created_at < ?",
                           (len(prefix), prefix, iso(before)))
