"""Three processes claim the same ingestion jobs and the same scheduled runs on one database: each job
each run key and each Slack event id has exactly one winner, none is lost, and a job whose claimer was killed is taken over.
On both engines: on PostgreSQL jobs are claimed with `FOR UPDATE SKIP LOCKED`, on SQLite under its
one writer."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import aiosqlite

from store.db import MIGRATIONS, open_db
from store.jobs import Jobs
from tests.conftest import ROOT

CLAIMER = r"""
import asyncio, json, sys
from datetime import timedelta

from store.conversations import ConversationStore
from store.db import open_db, utcnow
from store.jobs import Jobs
from store.run_claims import RunClaims


async def main(target, what, keys):
    db = None if what == "open" else await open_db(target)
    print("ready", flush=True)
    sys.stdin.readline()  # every claimer starts at the same moment
    won = []
    if what == "open":
        db = await open_db(target)
    elif what == "jobs":
        jobs = Jobs(db)
        while (job := await jobs.claim_next()) is not None:
            won.append(job.job_id)
    elif what == "runs":
        claims = RunClaims(db)
        for key in keys:
            if await claims.claim_run(run_key=key, now=utcnow(), stale_after=timedelta(minutes=30)):
                won.append(key)
    elif what == "events":  # one delivery names its event by two keys, as Slack's listeners do
        conversations = ConversationStore(db)
        for key in keys:
            if await conversations.first_seen(f"event:{key}", f"message:{key}"):
                won.append(key)
    else:  # "hold": take one job (if any), say which, and wait to be killed holding its lease
        job = await Jobs(db).claim_next()
        print(json.dumps([job.job_id] if job else []), flush=True)
        await asyncio.sleep(600)
    await db.close()
    print(json.dumps(won), flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
"""

CLAIMERS = 3


async def _claimer(target: Path | str, what: str, *keys: str) -> asyncio.subprocess.Process:
    """A claimer process, ready (its imports done, its database open) when this returns."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLAIMER, str(target), what, *keys, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    ready = await asyncio.wait_for(process.stdout.readline(), timeout=60)
    if ready.strip() != b"ready":
        _, err = await process.communicate()
        raise AssertionError(err.decode())
    return process


def _go(process: asyncio.subprocess.Process) -> None:
    assert process.stdin is not None
    process.stdin.write(b"go\n")


async def _race(target: Path | str, what: str, *keys: str) -> list[list[str]]:
    """What each of CLAIMERS processes, started together, won."""
    processes = [await _claimer(target, what, *keys) for _ in range(CLAIMERS)]
    for process in processes:
        _go(process)
    outputs = [await asyncio.wait_for(p.communicate(), timeout=120) for p in processes]
    for process, (_, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err.decode()
    return [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outputs]


async def _enqueue(jobs: Jobs, count: int) -> list[str]:
    ids = []
    for n in range(count):
        job, _ = await jobs.enqueue(tenant_id="acme", doc_id=f"doc-{n}", source_path=f"doc-{n}.md",
                                    raw_path=f"/raw/doc-{n}.md", content_hash=f"h{n}", options={})
        ids.append(job.job_id)
    return ids


async def test_three_processes_claim_each_job_exactly_once(conn: aiosqlite.Connection,
                                                           database_target: Path | str) -> None:
    queued = await _enqueue(Jobs(conn), 60)
    won = await _race(database_target, "jobs")
    claims = Counter(job_id for batch in won for job_id in batch)
    assert set(claims) == set(queued)  # none lost
    assert max(claims.values()) == 1  # none claimed twice
    for job_id in queued:
        job = await Jobs(conn).get(job_id=job_id)
        assert job is not None and job.attempts == 1


async def test_one_job_of_a_document_runs_at_a_time_across_processes(
        conn: aiosqlite.Connection, database_target: Path | str) -> None:
    jobs = Jobs(conn)
    by_document: dict[str, str] = {}
    for doc in ("handbook", "travel"):
        for version in range(3):  # three uploads of each document, each a job of its own
            job, _ = await jobs.enqueue(tenant_id="acme", doc_id=doc, source_path=f"{doc}.md",
                                        raw_path=f"/raw/{doc}-{version}.md", content_hash=f"{doc}{version}", options={})
            by_document[job.job_id] = doc
    holders = [await _claimer(database_target, "hold") for _ in range(CLAIMERS)]
    for holder in holders:
        _go(holder)
    held = []
    for holder in holders:
        assert holder.stdout is not None
        held += json.loads((await asyncio.wait_for(holder.stdout.readline(), timeout=60)).decode())
    try:
        assert sorted(by_document[job_id] for job_id in held) == ["handbook", "travel"]
        assert await jobs.claim_next() is None  # every document has a job running
    finally:
        for holder in holders:
            holder.send_signal(signal.SIGKILL)
            await holder.wait()
    assert sorted(await jobs.reclaim_dead_leases()) == sorted(held)
    taken = await jobs.claim_next()
    assert taken is not None and by_document[taken.job_id] in ("handbook", "travel")


async def test_three_processes_claim_each_scheduled_run_exactly_once(conn: aiosqlite.Connection,
                                                                     database_target: Path | str) -> None:
    keys = [f"digest:2026-W{week:02d}" for week in range(1, 31)]
    won = await _race(database_target, "runs", *keys)
    claims = Counter(key for batch in won for key in batch)
    assert set(claims) == set(keys) and max(claims.values()) == 1


async def test_three_processes_see_each_slack_event_first_exactly_once(conn: aiosqlite.Connection,
                                                                      database_target: Path | str) -> None:
    keys = [f"T0ACME:Ev{n:04d}" for n in range(50)]
    won = await _race(database_target, "events", *keys)
    firsts = Counter(key for batch in won for key in batch)
    assert set(firsts) == set(keys) and max(firsts.values()) == 1


async def test_a_killed_claimers_job_is_taken_over(conn: aiosqlite.Connection, database_target: Path | str) -> None:
    jobs = Jobs(conn)
    queued = await _enqueue(jobs, 2)
    holder = await _claimer(database_target, "hold")
    _go(holder)
    assert holder.stdout is not None
    held = json.loads((await asyncio.wait_for(holder.stdout.readline(), timeout=60)).decode())[0]
    assert held == queued[0]
    assert (other := await jobs.claim_next()) is not None and other.job_id == queued[1]  # the lease holds
    assert await jobs.claim_next() is None
    holder.send_signal(signal.SIGKILL)
    await holder.wait()
    assert await jobs.reclaim_dead_leases() == [held]
    taken = await jobs.claim_next()
    assert taken is not None and taken.job_id == held and taken.attempts == 2


async def test_three_processes_opening_a_new_database_at_once_migrate_it_once(
        database_target: Path | str, engine: str) -> None:
    await _race(database_target, "open")
    db = await open_db(database_target)
    try:
        version = "SELECT version FROM cairn_schema" if engine == "postgresql" else "PRAGMA user_version"
        async with db.execute(version) as cur:
            assert [tuple(row) for row in await cur.fetchall()] == [(len(MIGRATIONS),)]
    finally:
        await db.close()
