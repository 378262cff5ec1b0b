"""Proposed answers: an admin's answer to an escalation, filed for the document owner's approval.

A row is `proposed` until an owner decides: `approved` (the answer is then ingested as a document of its
own, `doc_id`) or `rejected`. Nothing here is ever shown to an asker: only an approved answer's document,
once published, is searchable like any other. One proposal per escalation; filing it again returns the
existing row.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import aiosqlite

from store.db import create_tables, iso, utcnow, write

ProposalStatus = Literal["proposed", "approved", "rejected"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS proposed_answers (
    proposal_id TEXT PRIMARY KEY,
    escalation_id TEXT NOT NULL UNIQUE,
    tenant_id TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    admin_id TEXT NOT NULL,
    admin_name TEXT NOT NULL,
    groups TEXT NOT NULL,
    owner TEXT,
    status TEXT NOT NULL DEFAULT 'proposed',
    created_at TEXT NOT NULL,
    decided_at TEXT,
    decided_by TEXT,
    doc_id TEXT
);
CREATE INDEX IF NOT EXISTS proposed_answers_status ON proposed_answers (tenant_id, status, created_at)
"""


@dataclass(frozen=True)
class ProposalRecord:
    proposal_id: str
    escalation_id: str
    tenant_id: str
    question: str
    answer: str
    admin_id: str
    admin_name: str
    groups: tuple[str, ...]
    owner: str | None
    status: ProposalStatus
    created_at: str
    decided_at: str | None
    decided_by: str | None
    doc_id: str | None

    def as_json(self) -> dict[str, object]:
        return {"proposal_id": self.proposal_id, "escalation_id": self.escalation_id, "tenant": self.tenant_id,
                "question": self.question, "answer": self.answer, "admin": self.admin_name,
                "groups": list(self.groups), "owner": self.owner, "status": self.status,
                "created_at": self.created_at, "decided_at": self.decided_at, "decided_by": self.decided_by,
                "doc_id": self.doc_id}


def _record(row: aiosqlite.Row) -> ProposalRecord:
    d = dict(row)
    d["groups"] = tuple(json.loads(d["groups"]))
    return ProposalRecord(**d)


class ProposedAnswers:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def setup(self) -> None:
        await create_tables(self._conn, SCHEMA)

    async def propose(self, *, escalation_id: str, tenant_id: str, question: str, answer: str, admin_id: str,
                      admin_name: str, groups: tuple[str, ...], owner: str | None,
                      now: datetime | None = None) -> tuple[ProposalRecord, bool]:
        """File a proposal for this escalation; (the row, True) when this call filed it, (the existing row,
        False) when one was filed before."""
        proposal_id = f"pa-{uuid.uuid4().hex[:10]}"
        created = await write(
            self._conn,
            "INSERT INTO proposed_answers (proposal_id, escalation_id, tenant_id, question, answer,"
            " admin_id, admin_name, groups, owner, created_at) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
            (proposal_id, escalation_id, tenant_id, question, answer, admin_id, admin_name,
             json.dumps(sorted(groups)), owner, iso(now or utcnow()))) == 1
        found = await self.for_escalation(escalation_id=escalation_id)
        assert found is not None
        return found, created

    async def get(self, *, proposal_id: str) -> ProposalRecord | None:
        async with self._conn.execute("SELECT * FROM proposed_answers WHERE proposal_id=?", (proposal_id,)) as cur:
            row = await cur.fetchone()
        return _record(row) if row else None

    async def for_escalation(self, *, escalation_id: str) -> ProposalRecord | None:
        async with self._conn.execute("SELECT * FROM proposed_answers WHERE escalation_id=?",
                                      (escalation_id,)) as cur:
            row = await cur.fetchone()
        return _record(row) if row else None

    async def list(self, *, tenant_id: str | None = None, status: ProposalStatus | None = "proposed",
                   limit: int = 200) -> list[ProposalRecord]:
        """Oldest first; `status=None` for every status."""
        where, args = [], []
        if tenant_id is not None:
            where.append("tenant_id=?")
            args.append(tenant_id)
        if status is not None:
            where.append("status=?")
            args.append(status)
        sql = ("SELECT * FROM proposed_answers" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY created_at, proposal_id LIMIT ?")
        async with self._conn.execute(sql, (*args, limit)) as cur:
            return [_record(r) for r in await cur.fetchall()]

    async def decide(self, *, proposal_id: str, status: Literal["approved", "rejected"], decided_by: str,
                     doc_id: str | None = None, now: datetime | None = None) -> bool:
        """Record the owner's decision once: False when it was decided before."""
        return await write(
            self._conn,
            "UPDATE proposed_answers SET status=?, decided_by=?, decided_at=?, doc_id=? "
            "WHERE proposal_id=? AND status='proposed'",
            (status, decided_by, iso(now or utcnow()), doc_id, proposal_id)) == 1
