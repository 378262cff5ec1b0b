"""Relays: an admin's reply on its way to the asker, kept until the asker's surface showed it.

The conversation store records a reply as delivered once the conversation has it; showing it to the
asker (a Slack post) is a second step that can fail or be cut short by a crash. A relay row is written
before the reply is delivered and closed only after it was shown, so a pending row is work left to do:
the scheduler retries it (escalations/desk.py:EscalationDesk.relay_pending) and the ✅ on the admin's
message appears only once the asker has the reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import aiosqlite

from store.db import create_tables, iso, write

SCHEMA = """
CREATE TABLE IF NOT EXISTS relays (
    escalation_id TEXT NOT NULL,
    message_key TEXT NOT NULL,
    admin_id TEXT NOT NULL,
    admin_name TEXT NOT NULL,
    text TEXT NOT NULL,
    answer TEXT,
    turn_id TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    relayed_at TEXT,
    PRIMARY KEY (escalation_id, message_key)
);
CREATE INDEX IF NOT EXISTS relays_pending ON relays (relayed_at, created_at)
"""


@dataclass(frozen=True)
class RelayRecord:
    escalation_id: str
    message_key: str
    admin_id: str
    admin_name: str
    text: str
    answer: str | None  # what the asker is shown, once the conversation produced it
    turn_id: str | None
    attempts: int
    created_at: str
    relayed_at: str | None


class Relays:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def setup(self) -> None:
        """Create the table if missing; safe to call on every start."""
        await create_tables(self._conn, SCHEMA)

    async def _run(self, sql: str, args: tuple[object, ...]) -> None:
        await write(self._conn, sql, args)

    async def expect(self, *, escalation_id: str, message_key: str, admin_id: str, admin_name: str, text: str,
                     now: datetime | None = None) -> None:
        """Before the reply is delivered: from here on it is either shown to the asker or pending."""
        await self._run("INSERT INTO relays (escalation_id, message_key, admin_id, admin_name, text,"
                        " created_at) VALUES (?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                        (escalation_id, message_key, admin_id, admin_name, text, iso(now)))

    async def answered(self, *, escalation_id: str, message_key: str, answer: str, turn_id: str) -> None:
        await self._run("UPDATE relays SET answer=?, turn_id=? WHERE escalation_id=? AND message_key=?",
                        (answer, turn_id, escalation_id, message_key))

    async def attempted(self, *, escalation_id: str, message_key: str) -> None:
        await self._run("UPDATE relays SET attempts=attempts+1 WHERE escalation_id=? AND message_key=?",
                        (escalation_id, message_key))

    async def relayed(self, *, escalation_id: str, message_key: str, now: datetime | None = None) -> None:
        await self._run("UPDATE relays SET relayed_at=? WHERE escalation_id=? AND message_key=? AND relayed_at IS NULL",
                        (iso(now), escalation_id, message_key))

    async def get(self, *, escalation_id: str, message_key: str) -> RelayRecord | None:
        async with self._conn.execute("SELECT * FROM relays WHERE escalation_id=? AND message_key=?",
                                      (escalation_id, message_key)) as cur:
            row = await cur.fetchone()
        return _record(row) if row else None

    async def pending(self, *, created_before: datetime, max_attempts: int, limit: int = 50) -> list[RelayRecord]:
        """Replies not yet shown to their askers, written before `created_before`, oldest first."""
        async with self._conn.execute(
            "SELECT * FROM relays WHERE relayed_at IS NULL AND created_at < ? AND attempts < ?"
            " ORDER BY created_at LIMIT ?", (iso(created_before), max_attempts, limit)) as cur:
            return [_record(row) for row in await cur.fetchall()]


def _record(row: aiosqlite.Row) -> RelayRecord:
    return RelayRecord(escalation_id=row["escalation_id"], message_key=row["message_key"], admin_id=row["admin_id"],
                       admin_name=row["admin_name"], text=row["text"], answer=row["answer"], turn_id=row["turn_id"],
                       attempts=int(row["attempts"]), created_at=row["created_at"], relayed_at=row["relayed_at"])
