"""Counts read at scrape time for /metrics: cheap aggregate reads over the conversation tables."""

from __future__ import annotations

import aiosqlite

from store.conversations import ACTIVE_STATUSES


async def open_escalations_by_status(db: aiosqlite.Connection) -> dict[str, int]:
    """Escalations not yet closed, by status (every active status present, zero when none)."""
    marks = ",".join("?" * len(ACTIVE_STATUSES))
    async with db.execute(f"SELECT status, COUNT(*) FROM escalations WHERE status IN ({marks}) GROUP BY status",
                          tuple(ACTIVE_STATUSES)) as cur:
        counts = {str(row[0]): int(row[1]) for row in await cur.fetchall()}
    return {status: counts.get(status, 0) for status in ACTIVE_STATUSES}
