"""Retention of turn traces (`CAIRN_TRACE_RETENTION_DAYS`, default 90): a thin scheduled job.

Register it daily, e.g.
    scheduler.add_job(purge_old_turns, "cron", hour=3,
                      kwargs={"db": services.db, "older_than_days": settings.trace_retention_days})
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import aiosqlite

from store.db import iso, transaction, utcnow

log = logging.getLogger(__name__)


async def purge_old_turns(db: aiosqlite.Connection, *, older_than_days: int, now: datetime | None = None) -> int:
    """Delete turn traces (question, answer, passages, trace) older than the retention window.

    A turn that an unresolved escalation still points at is kept until the escalation closes:
    the admin answering it needs the trace. Returns the number of turns deleted.
    """
    if older_than_days < 1:
        raise ValueError("older_than_days must be at least 1")
    cutoff = iso((now or utcnow()) - timedelta(days=older_than_days))
    async with transaction(db) as conn:
        cur = await conn.execute(
            "DELETE FROM turns WHERE created_at < ? AND turn_id NOT IN"
            " (SELECT turn_id FROM escalations WHERE status IN ('open','answered'))", (cutoff,))
        deleted = cur.rowcount or 0
    log.info("retention.turns_purged", extra={"deleted": deleted, "older_than_days": older_than_days})
    return deleted
