"""The ingestion job state machine on real SQLite: claim, lease, retry with backoff, dead letter, resume."""

from __future__ import annotations

from datetime import datetime, timedelta

import aiosqlite
import pytest

from store.db import utcnow
from store.jobs import FINAL_STATES, Jobs
from store.records import JobRecord


@pytest.fixture
def jobs(conn: aiosqlite.Connection) -> Jobs:
    return Jobs(conn, max_attempts=3, backoff_s=10)


async def enqueue(jobs: Jobs, doc_id: str = "travel", digest: str = "abc", **kwargs: object) -> JobRecord:
    job, _ = await jobs.enqueue(tenant_id="acme", doc_id=doc_id, source_path=f"{doc_id}.md",
                                raw_path=f"/raw/{doc_id}.md", content_hash=digest, options={"tenant_id": "acme"},
                                dedupe_key=f"acme:{doc_id}:{digest}", **kwargs)  # type: ignore[arg-type]
    return job


async def next_attempt(conn: aiosqlite.Connection, job_id: str) -> datetime:
    async with conn.execute("SELECT next_attempt_at FROM ingest_jobs WHERE job_id=?", (job_id,)) as cur:
        row = await cur.fetchone()
    return datetime.fromisoformat(row[0])


async def test_enqueue_is_idempotent_per_dedupe_key(jobs: Jobs) -> None:
    first, created = await jobs.enqueue(tenant_id="acme", doc_id="travel", source_path="travel.md",
                                        raw_path="/raw/a", content_hash="abc", options={}, dedupe_key="k1")
    again, created_again = await jobs.enqueue(tenant_id="acme", doc_id="travel", source_path="travel.md",
                                              raw_path="/raw/a", content_hash="abc", options={}, dedupe_key="k1")
    assert created and not created_again
    assert again.job_id == first.job_id
    assert (first.state, first.attempts, first.last_error) == ("queued", 0, None)
    assert len(await jobs.list()) == 1


async def test_claim_takes_the_oldest_job_and_leases_it(jobs: Jobs) -> None:
    a = await enqueue(jobs, "a")
    b = await enqueue(jobs, "b")
    claimed = await jobs.claim_next()
    assert claimed is not None and claimed.job_id == a.job_id and claimed.attempts == 1
    # Leased: the next claim passes it by, and a second worker cannot take it either.
    second = await jobs.claim_next()
    assert second is not None and second.job_id == b.job_id
    assert await jobs.claim_next() is None


async def test_claim_filters_before_leasing(jobs: Jobs) -> None:
    a = await enqueue(jobs, "a")
    b = await enqueue(jobs, "b")
    assert await jobs.claim_next(only=[]) is None
    got = await jobs.claim_next(only=[b.job_id])
    assert got is not None and got.job_id == b.job_id
    # `a` was never leased by that claim: it is still claimable with no attempt counted.
    untouched = await jobs.get(job_id=a.job_id)
    assert untouched.attempts == 0
    assert await jobs.claim_next(exclude=[a.job_id]) is None
    assert (await jobs.claim_next()).job_id == a.job_id


async def test_failure_retries_with_exponential_backoff_then_dead_letters(jobs: Jobs,
                                                                          conn: aiosqlite.Connection) -> None:
    job = await enqueue(jobs)
    now = utcnow()
    delays = []
    for attempt in range(1, 4):
        claimed = await jobs.claim_next(now=now)
        assert claimed is not None and claimed.attempts == attempt
        failed = await jobs.fail(job_id=job.job_id, error=f"index down #{attempt}", now=now)
        due = await next_attempt(conn, job.job_id)
        delays.append((due - now).total_seconds())
        if attempt < 3:
            assert failed.state == "failed"
            # Not before the backoff has passed…
            assert await jobs.claim_next(now=due - timedelta(seconds=1)) is None
            now = due  # …and exactly when it has.
        else:
            assert failed.state == "dead"
            assert failed.last_error == "index down #3"
    assert delays[:2] == [10.0, 20.0]
    # Dead is final: never claimed again, however late.
    assert await jobs.claim_next(now=utcnow() + timedelta(days=365)) is None
    assert [j.job_id for j in await jobs.list(states=("dead",))] == [job.job_id]


async def test_permanent_failure_dead_letters_at_once_with_the_reason(jobs: Jobs) -> None:
    job = await enqueue(jobs)
    await jobs.claim_next()
    dead = await jobs.fail(job_id=job.job_id, error="The PDF could not be read", permanent=True)
    assert (dead.state, dead.attempts, dead.last_error) == ("dead", 1, "The PDF could not be read")


async def test_a_job_left_mid_way_by_a_crash_is_resumed_after_its_lease(jobs: Jobs) -> None:
    job = await enqueue(jobs)
    claimed = await jobs.claim_next()
    await jobs.advance(job_id=claimed.job_id, state="indexing", version="v1")
    # The worker dies here. While the lease runs nobody else takes the job…
    assert await jobs.claim_next() is None
    # …then it is runnable again, in its working state, with its version remembered.
    resumed = await jobs.claim_next(now=utcnow() + timedelta(minutes=11))
    assert resumed is not None and resumed.job_id == job.job_id
    assert (resumed.state, resumed.version, resumed.attempts) == ("indexing", "v1", 2)


async def test_releasing_leases_makes_a_crashed_workers_jobs_runnable_at_once_but_keeps_backoff(
        jobs: Jobs) -> None:
    running = await enqueue(jobs, "travel")
    claimed_only = await enqueue(jobs, "leave")  # claimed, then the worker died before its first step
    backing_off = await enqueue(jobs, "parking")
    waiting = await enqueue(jobs, "pets")
    for _ in range(3):
        await jobs.claim_next()
    await jobs.advance(job_id=running.job_id, state="embedding", version="v1")
    await jobs.fail(job_id=backing_off.job_id, error="ConnectionError: index went away")
    assert await jobs.claim_next(exclude=(waiting.job_id,)) is None  # leased or backing off

    assert await jobs.release_leases() == [running.job_id, claimed_only.job_id]
    assert await jobs.release_leases() == []  # idempotent
    resumed = await jobs.claim_next(exclude=(waiting.job_id,))
    assert resumed is not None and (resumed.job_id, resumed.state, resumed.version) == (
        running.job_id, "embedding", "v1")
    assert (await jobs.claim_next(exclude=(waiting.job_id,))).job_id == claimed_only.job_id
    assert await jobs.claim_next(exclude=(waiting.job_id,)) is None  # the failed job keeps its backoff


async def test_advance_tracks_outcome_and_clears_the_error_on_success(jobs: Jobs) -> None:
    job = await enqueue(jobs)
    await jobs.claim_next()
    await jobs.fail(job_id=job.job_id, error="boom", now=utcnow() - timedelta(hours=1))
    await jobs.claim_next()
    await jobs.advance(job_id=job.job_id, state="published", version="v2", outcome="scheduled")
    done = await jobs.get(job_id=job.job_id)
    assert (done.state, done.version, done.outcome, done.last_error) == ("published", "v2", "scheduled", None)
    assert done.state in FINAL_STATES
    with pytest.raises(ValueError, match="unknown job state"):
        await jobs.advance(job_id=job.job_id, state="exploded")
    with pytest.raises(LookupError):
        await jobs.fail(job_id="missing", error="x")


async def test_same_content_after_a_finished_job_runs_again(jobs: Jobs) -> None:
    """Reverting a document to older content (or retrying after a dead letter) must not be swallowed
    by the dedupe key of the job that already finished."""
    job = await enqueue(jobs, digest="v1-content")
    await jobs.claim_next()
    await jobs.advance(job_id=job.job_id, state="published", version="v1", outcome="published")
    again = await enqueue(jobs, digest="v1-content", requested_by="cli")
    assert again.job_id == job.job_id
    assert (again.state, again.attempts, again.version, again.outcome) == ("queued", 0, None, None)
    assert again.requested_by == "cli"
    assert (await jobs.claim_next()).job_id == job.job_id
    # A job still running is shared, not restarted.
    running = await enqueue(jobs, digest="v1-content")
    assert running.state == "queued" and running.attempts == 1


async def test_cancelling_a_documents_unfinished_jobs_is_final_and_sticky(jobs: Jobs) -> None:
    queued = await enqueue(jobs, "travel", digest="t1")
    running = await enqueue(jobs, "travel", digest="t2")
    retrying = await enqueue(jobs, "travel", digest="t3")
    done = await enqueue(jobs, "travel", digest="t4")
    other = await enqueue(jobs, "leave")
    for _ in range(3):
        await jobs.claim_next(exclude=(queued.job_id,))
    await jobs.advance(job_id=running.job_id, state="embedding", version="v2")
    await jobs.fail(job_id=retrying.job_id, error="ConnectionError: index went away")
    await jobs.advance(job_id=done.job_id, state="published", version="v1", outcome="published")

    cancelled = await jobs.cancel_unfinished(tenant_id="acme", doc_id="travel", reason="document withdrawn")
    assert [j.job_id for j in cancelled] == [queued.job_id, running.job_id, retrying.job_id]
    assert {(j.state, j.last_error) for j in cancelled} == {("cancelled", "document withdrawn")}
    assert "cancelled" in FINAL_STATES
    assert (await jobs.get(job_id=done.job_id)).state == "published"
    assert (await jobs.get(job_id=other.job_id)).state == "queued"
    # The worker still running one cannot move it on, nor turn it into a failure to retry.
    assert await jobs.advance(job_id=running.job_id, state="indexing") is False
    assert (await jobs.fail(job_id=running.job_id, error="RuntimeError: x")).state == "cancelled"
    assert (await jobs.get(job_id=running.job_id)).last_error == "document withdrawn"
    assert [j.job_id for j in await jobs.list(states=("queued", "embedding", "failed"))] == [other.job_id]
    assert (await jobs.claim_next(now=utcnow() + timedelta(days=1))).job_id == other.job_id
    assert await jobs.claim_next(now=utcnow() + timedelta(days=1)) is None
    # The same content uploaded again after the withdrawal runs again.
    again = await enqueue(jobs, "travel", digest="t1")
    assert (again.job_id, again.state, again.last_error) == (queued.job_id, "queued", None)


async def test_list_filters_by_requester_and_state(jobs: Jobs) -> None:
    mine = await enqueue(jobs, "a", requested_by="U1")
    await enqueue(jobs, "b", requested_by="U2")
    assert [j.job_id for j in await jobs.list(requested_by="U1")] == [mine.job_id]
    assert len(await jobs.list(states=("queued",))) == 2
    assert await jobs.list(states=("dead",)) == []
    await jobs.set_notify(job_id=mine.job_id, notify={"channel": "C1"})
    assert (await jobs.get(job_id=mine.job_id)).notify == {"channel": "C1"}
