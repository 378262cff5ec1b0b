"""PostgreSQL only (SQLite has no server to drop a connection): after the server drops Cairn's
connections, reads go on at once, a write that met the dropped connection fails and the next one runs,
and transactions open on a new connection."""

from __future__ import annotations

import psycopg
import pytest

from store.catalog import Catalog
from store.conversations import ConversationStore
from store.db import open_db, transaction


def _drop_other_connections(url: str) -> int:
    """What a server restart does to Cairn's connections: terminate every backend but this one."""
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                             " WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchall()
    return len(rows)


async def test_connections_the_server_dropped_are_opened_again(pg_database_url: str) -> None:
    db = await open_db(pg_database_url)
    try:
        catalog, conversations = Catalog(db), ConversationStore(db)
        await catalog.sync_tenants(tenants={"acme": ["everyone"]})
        assert await conversations.seen_event(key="ev-1")

        assert _drop_other_connections(pg_database_url) >= 3  # the database, its writer and its reader
        assert await catalog.list_documents() == []  # a read: sent again on a new connection
        assert await catalog.documents_signature(tenant_id="acme") == (0, None)  # the reader's too
        await catalog.sync_tenants(tenants={"acme": ["everyone", "hr"]})  # a transaction: a new connection

        _drop_other_connections(pg_database_url)
        # A store's write runs in a transaction of its own: the BEGIN met the dropped connection and was
        # sent again on a new one, before the write itself was sent.
        assert await conversations.seen_event(key="ev-2")
        with pytest.raises(psycopg.OperationalError):
            async with transaction(db) as tx:
                _drop_other_connections(pg_database_url)
                # A write that met the dropped connection: unknown whether it was applied, so not sent again.
                await tx.execute("INSERT INTO seen_events (event_key, created_at) VALUES ('ev-3', 'now')")
        assert not await conversations.seen_event(key="ev-1")  # the next statement runs
        assert await conversations.seen_event(key="ev-3")  # the transaction the drop cut short left nothing
        async with transaction(db) as tx:
            async with tx.execute("SELECT group_name FROM groups WHERE tenant_id=? ORDER BY group_name",
                                  ("acme",)) as cur:
                assert [row[0] for row in await cur.fetchall()] == ["everyone", "hr"]
    finally:
        await db.close()
