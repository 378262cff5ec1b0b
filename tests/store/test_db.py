"""Connection discipline: a transaction is one writer's, whole; nobody else's statement runs inside it."""

from __future__ import annotations

import asyncio

import pytest

from store.conversations import ConversationStore
from store.db import Database, transaction


async def test_one_features_rollback_cannot_undo_another_features_write(conn: Database) -> None:
    """A job's transaction fails and rolls back while a Slack event is being recorded meanwhile:
    the event stays recorded (on one shared connection it ran inside the job's transaction)."""
    conversations = ConversationStore(conn)
    inside = asyncio.Event()
    release = asyncio.Event()

    async def failing_feature() -> None:
        async with transaction(conn) as tx:
            await tx.execute("INSERT INTO job_runs (run_key, created_at) VALUES ('nightly', 'now')")
            inside.set()
            await release.wait()
            raise RuntimeError("the feature fails after its first write")

    feature = asyncio.create_task(failing_feature())
    await inside.wait()
    recorded = asyncio.create_task(conversations.seen_event(key="slack:Ev1"))
    await asyncio.sleep(0.05)  # the event's INSERT is sent while the transaction is open
    release.set()
    with pytest.raises(RuntimeError):
        await feature
    assert await recorded is True
    async with conn.execute("SELECT event_key FROM seen_events") as cur:
        assert [r[0] for r in await cur.fetchall()] == ["slack:Ev1"]
    async with conn.execute("SELECT COUNT(*) FROM job_runs") as cur:
        assert (await cur.fetchone())[0] == 0  # the failed feature's own write is gone
    assert await conversations.seen_event(key="slack:Ev1") is False


async def test_readers_see_a_transaction_whole_or_not_at_all(conn: Database) -> None:
    await conn.execute("INSERT INTO job_runs (run_key, created_at) VALUES ('a', 'x')")
    half = asyncio.Event()
    finish = asyncio.Event()

    async def two_step_write() -> None:
        async with transaction(conn) as tx:
            await tx.execute("DELETE FROM job_runs WHERE run_key='a'")
            half.set()
            await finish.wait()
            await tx.execute("INSERT INTO job_runs (run_key, created_at) VALUES ('b', 'x')")

    writer = asyncio.create_task(two_step_write())
    await half.wait()
    for reader in (conn, conn.reader):
        async with reader.execute("SELECT run_key FROM job_runs") as cur:
            assert [r[0] for r in await cur.fetchall()] == ["a"]  # before, never between
    finish.set()
    await writer
    for reader in (conn, conn.reader):
        async with reader.execute("SELECT run_key FROM job_runs") as cur:
            assert [r[0] for r in await cur.fetchall()] == ["b"]


async def test_transactions_run_one_at_a_time_and_a_nested_one_is_refused(conn: Database) -> None:
    order: list[str] = []

    async def writer(name: str) -> None:
        async with transaction(conn) as tx:
            order.append(f"{name} begins")
            await asyncio.sleep(0.01)
            await tx.execute("INSERT INTO job_runs (run_key, created_at) VALUES (?, 'x')", (name,))
            order.append(f"{name} ends")

    await asyncio.gather(writer("one"), writer("two"), writer("three"))
    assert [o.split()[1] for o in order] == ["begins", "ends"] * 3
    async with transaction(conn):
        with pytest.raises(RuntimeError, match="already open"):
            async with transaction(conn):
                pass
    async with transaction(conn) as tx:  # the refused one left nothing held
        await tx.execute("DELETE FROM job_runs")
