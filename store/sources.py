"""Sources kept in sync (a folder or a website) and what each last saw of every file or page.

A source's access (tenant, groups) and owner are its own configuration, set by whoever registered it;
nothing a crawl reads can change them. Each item row remembers the document it became, the validators
(ETag, Last-Modified, or a folder file's size and mtime) that let an unchanged item cost one request or
one stat, and whether the item has been missing once already: a page that is gone is withdrawn only
when the next run confirms it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

import aiosqlite

from store.db import create_tables, iso, transaction, utcnow

SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    source_id TEXT PRIMARY KEY,
    tenant_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    location TEXT NOT NULL,
    groups TEXT,
    owner TEXT,
    every_s INTEGER,
    settings TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    running_since TEXT,
    last_started_at TEXT,
    last_finished_at TEXT,
    last_status TEXT,
    last_error TEXT,
    last_counts TEXT NOT NULL DEFAULT '{}',
    next_run_at TEXT,
    UNIQUE (tenant_id, location)
);
CREATE TABLE IF NOT EXISTS source_items (
    source_id TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
    item_key TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    url TEXT,
    validator TEXT,
    etag TEXT,
    last_modified TEXT,
    links TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL DEFAULT 'present',
    missing_since TEXT,
    last_result TEXT,
    last_error TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source_id, item_key)
);
CREATE INDEX IF NOT EXISTS source_items_doc ON source_items (tenant_id, doc_id);
"""

KINDS = ("directory", "website")
# A run that died with its process leaves running_since behind; after this long it no longer blocks.
STALE_RUN = timedelta(hours=2)


@dataclass(frozen=True)
class SourceRecord:
    source_id: str
    tenant_id: str
    kind: str
    location: str
    groups: tuple[str, ...] | None
    owner: str | None
    every_s: int | None
    settings: dict[str, object]
    created_at: str
    running_since: str | None
    last_started_at: str | None
    last_finished_at: str | None
    last_status: str | None
    last_error: str | None
    last_counts: dict[str, int]
    next_run_at: str | None


@dataclass(frozen=True)
class SourceItem:
    source_id: str
    item_key: str
    doc_id: str
    url: str | None
    validator: str | None
    etag: str | None
    last_modified: str | None
    links: tuple[str, ...]
    state: str  # present | missing | withdrawn
    missing_since: str | None
    last_result: str | None
    last_error: str | None


def source_id_for(tenant_id: str, location: str) -> str:
    return "src-" + hashlib.sha256(f"{tenant_id}\n{location}".encode()).hexdigest()[:10]


class Sources:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def setup(self) -> None:
        """Create the tables if missing; safe to call on every start."""
        await create_tables(self._conn, SCHEMA)

    # -- sources ----------------------------------------------------------------------------------

    async def save(self, *, tenant_id: str, kind: str, location: str, groups: Sequence[str] | None,
                   owner: str | None, every_s: int | None, settings: dict[str, object] | None = None) -> SourceRecord:
        """Register a source, or update its configuration (the same tenant and location are one source)."""
        if kind not in KINDS:
            raise ValueError(f"unknown source kind {kind!r}")
        source_id = source_id_for(tenant_id, location)
        now = iso()
        encoded_groups = json.dumps(sorted(set(groups))) if groups else None
        async with transaction(self._conn) as conn:
            await conn.execute(
                "INSERT INTO sources (source_id, tenant_id, kind, location, groups, owner, every_s, settings,"
                " created_at, updated_at, next_run_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(source_id) DO UPDATE SET kind=excluded.kind, groups=excluded.groups,"
                " owner=excluded.owner, every_s=excluded.every_s, settings=excluded.settings,"
                " updated_at=excluded.updated_at,"
                " next_run_at=CASE WHEN excluded.every_s IS NULL THEN NULL ELSE COALESCE(sources.next_run_at, ?) END",
                (source_id, tenant_id, kind, location, encoded_groups, owner, every_s,
                 json.dumps(settings or {}, sort_keys=True), now, now, now if every_s else None, now),
            )
        record = await self.get(source_id=source_id)
        assert record is not None
        return record

    async def get(self, *, source_id: str) -> SourceRecord | None:
        async with self._conn.execute("SELECT * FROM sources WHERE source_id=?", (source_id,)) as cur:
            row = await cur.fetchone()
        return _source(row) if row else None

    async def list_sources(self, *, tenant_id: str | None = None) -> list[SourceRecord]:
        sql, args = "SELECT * FROM sources", cast(tuple[str, ...], ())
        if tenant_id is not None:
            sql, args = sql + " WHERE tenant_id=?", (tenant_id,)
        async with self._conn.execute(sql + " ORDER BY tenant_id, location", args) as cur:
            return [_source(r) for r in await cur.fetchall()]

    async def due(self, *, now: datetime | None = None) -> list[SourceRecord]:
        """Scheduled sources whose next run has come and that are not running."""
        moment = now or utcnow()
        async with self._conn.execute(
            "SELECT * FROM sources WHERE every_s IS NOT NULL AND next_run_at <= ?"
            " AND (running_since IS NULL OR running_since < ?) ORDER BY next_run_at",
            (iso(moment), iso(moment - STALE_RUN)),
        ) as cur:
            return [_source(r) for r in await cur.fetchall()]

    async def claim_run(self, *, source_id: str, now: datetime | None = None) -> bool:
        """Mark the source running; False when another run holds it (two runs would withdraw twice)."""
        moment = now or utcnow()
        async with transaction(self._conn) as conn:
            result = await conn.execute(
                "UPDATE sources SET running_since=?, last_started_at=? WHERE source_id=?"
                " AND (running_since IS NULL OR running_since < ?)",
                (iso(moment), iso(moment), source_id, iso(moment - STALE_RUN)),
            )
        return bool(result.rowcount)

    async def finish_run(self, *, source_id: str, status: str, error: str | None, counts: dict[str, int],
                         now: datetime | None = None) -> None:
        moment = now or utcnow()
        async with transaction(self._conn) as conn:
            async with conn.execute("SELECT every_s FROM sources WHERE source_id=?", (source_id,)) as cur:
                row = await cur.fetchone()
            every = row[0] if row else None
            await conn.execute(
                "UPDATE sources SET running_since=NULL, last_finished_at=?, last_status=?, last_error=?,"
                " last_counts=?, next_run_at=? WHERE source_id=?",
                (iso(moment), status, error, json.dumps(counts, sort_keys=True),
                 iso(moment + timedelta(seconds=every)) if every else None, source_id),
            )

    async def remove(self, *, source_id: str) -> None:
        async with transaction(self._conn) as conn:
            await conn.execute("DELETE FROM source_items WHERE source_id=?", (source_id,))
            await conn.execute("DELETE FROM sources WHERE source_id=?", (source_id,))

    # -- items ------------------------------------------------------------------------------------

    async def items(self, *, source_id: str) -> dict[str, SourceItem]:
        async with self._conn.execute("SELECT * FROM source_items WHERE source_id=?", (source_id,)) as cur:
            return {r["item_key"]: _item(r) for r in await cur.fetchall()}

    async def owner_of(self, *, tenant_id: str, doc_id: str) -> str | None:
        """The source that keeps this document in sync (not yet withdrawn by it), if any."""
        async with self._conn.execute(
            "SELECT source_id FROM source_items WHERE tenant_id=? AND doc_id=? AND state!='withdrawn' LIMIT 1",
            (tenant_id, doc_id),
        ) as cur:
            row = await cur.fetchone()
        return row[0] if row else None

    async def record_item(self, *, source_id: str, tenant_id: str, item_key: str, doc_id: str,
                          url: str | None = None, validator: str | None = None, etag: str | None = None,
                          last_modified: str | None = None, links: Sequence[str] = (), state: str = "present",
                          missing_since: str | None = None, last_result: str | None = None,
                          last_error: str | None = None) -> None:
        async with transaction(self._conn) as conn:
            await conn.execute(
                "INSERT INTO source_items (source_id, item_key, tenant_id, doc_id, url, validator, etag,"
                " last_modified, links, state, missing_since, last_result, last_error, updated_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(source_id, item_key) DO UPDATE SET"
                " doc_id=excluded.doc_id, url=excluded.url, validator=excluded.validator, etag=excluded.etag,"
                " last_modified=excluded.last_modified, links=excluded.links, state=excluded.state,"
                " missing_since=excluded.missing_since, last_result=excluded.last_result,"
                " last_error=excluded.last_error, updated_at=excluded.updated_at",
                (source_id, item_key, tenant_id, doc_id, url, validator, etag, last_modified,
                 json.dumps(list(links)), state, missing_since, last_result, last_error, iso()),
            )

    async def sources_of_documents(self, *, tenant_id: str, doc_ids: Sequence[str]) -> list[SourceRecord]:
        """The sources that keep any of these documents in sync (what App Home shows their owners)."""
        if not doc_ids:
            return []
        marks = ",".join("?" * len(doc_ids))
        async with self._conn.execute(
            f"SELECT * FROM sources WHERE source_id IN (SELECT source_id FROM source_items WHERE tenant_id=?"
            f" AND doc_id IN ({marks}) AND state!='withdrawn') ORDER BY location",
            (tenant_id, *doc_ids),
        ) as cur:
            return [_source(r) for r in await cur.fetchall()]


def _source(row: aiosqlite.Row) -> SourceRecord:
    return SourceRecord(
        source_id=row["source_id"], tenant_id=row["tenant_id"], kind=row["kind"], location=row["location"],
        groups=tuple(json.loads(row["groups"])) if row["groups"] else None, owner=row["owner"],
        every_s=row["every_s"], settings=json.loads(row["settings"] or "{}"), created_at=row["created_at"],
        running_since=row["running_since"], last_started_at=row["last_started_at"],
        last_finished_at=row["last_finished_at"], last_status=row["last_status"], last_error=row["last_error"],
        last_counts=json.loads(row["last_counts"] or "{}"), next_run_at=row["next_run_at"],
    )


def _item(row: aiosqlite.Row) -> SourceItem:
    return SourceItem(
        source_id=row["source_id"], item_key=row["item_key"], doc_id=row["doc_id"], url=row["url"],
        validator=row["validator"], etag=row["etag"], last_modified=row["last_modified"],
        links=tuple(json.loads(row["links"] or "[]")), state=row["state"], missing_since=row["missing_since"],
        last_result=row["last_result"], last_error=row["last_error"],
    )
