"""Connection discipline: a transaction is one writer's, whole; nobody else's statement runs inside it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from store.conversations import ConversationStore
from store.db import Database, open_db, transaction
from store.jobs import Jobs


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
    await asyncio.sleep(0.05)  # the event is recorded while the transaction is open (its write waits for it)
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


@pytest.mark.parametrize("write", ["job_advance", "session_upsert"])
async def test_sqlite_write_waits_for_another_process_writer_while_a_read_is_unfinished(
        tmp_path: Path, write: str) -> None:
    """SQLite only. A read on the database's main connection is left mid-way (a cursor of several rows
    fetched once, as a coroutine's read is while another coroutine's statement runs) while another
    process holds the write lock. A store's write then waits for that writer, up to the busy timeout,
    rather than failing at once with "database is locked": SQLite does not wait for a connection that
    has a read open, which is why writes run on the writer connection, never on the main one."""
    path = tmp_path / "cairn.db"
    db = await open_db(path)
    other: threading.Thread | None = None
    locked, release = threading.Event(), threading.Event()
    try:
        jobs = Jobs(db)
        for n in range(5):
            job, _ = await jobs.enqueue(tenant_id="acme", doc_id=f"doc{n}", source_path=f"doc{n}.md",
                                        raw_path=f"/raw/doc{n}.md", content_hash="abc", options={})

        def other_process_writer() -> None:
            peer = sqlite3.connect(str(path), isolation_level=None, timeout=30)
            try:
                peer.execute("BEGIN IMMEDIATE")
                peer.execute("INSERT INTO job_runs (run_key, created_at) VALUES ('peer', 'now')")
                locked.set()
                release.wait(timeout=30)
                peer.execute("COMMIT")
            finally:
                peer.close()

        other = threading.Thread(target=other_process_writer, daemon=True)
        other.start()
        assert await asyncio.to_thread(locked.wait, 30)
        unfinished = await db.execute("SELECT job_id FROM ingest_jobs ORDER BY job_id")
        assert await unfinished.fetchone() is not None  # four rows still to read: the read stays open

        if write == "job_advance":
            task: asyncio.Task[object] = asyncio.create_task(jobs.advance(job_id=job.job_id, state="parsing"))
        else:
            task = asyncio.create_task(ConversationStore(db).get_or_create_session(
                session_id="s1", user_id="U1", tenant_id="acme"))
        # The write cannot finish while the other writer holds the lock (sent on the main connection,
        # behind the open read, it was refused here at once); it finishes once that writer commits.
        done, _ = await asyncio.wait({task}, timeout=0.5)
        assert not done, f"the write ended while the other writer held the lock: {task.exception()!r}"
        release.set()
        result = await asyncio.wait_for(task, timeout=30)
        await unfinished.close()
        if write == "job_advance":
            assert result is True
            current = await jobs.get(job_id=job.job_id)
            assert current is not None and current.state == "parsing"
        else:
            assert (await ConversationStore(db).get_session(session_id="s1")) is not None
        async with db.execute("SELECT run_key FROM job_runs") as cur:
            assert [r[0] for r in await cur.fetchall()] == ["peer"]
    finally:
        release.set()
        if other is not None:
            await asyncio.to_thread(other.join, 30)
        await db.close()
