"""Files that would stall or kill the worker: refused with a reason, dead-lettered after their
attempts, and never in the way of the other uploads."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

from bot.services import Services
from retrieval.ingest import DocumentOptions, FileOutcome, Ingestor
from store.jobs import ABANDONED
from tests.conftest import ROOT

TENANT = "larkspur"
GOOD = b"# Loading dock\n\nDeliveries use the loading dock at the back from 7 to 11 in the morning.\n"
NESTED = ("<html><body>" + "<div>" * 16_000 + "<p>Deep.</p>" + "</div>" * 16_000 + "</body></html>").encode()


async def submit(svc: Services, data: bytes, doc_id: str, filename: str) -> FileOutcome:
    outcome = await svc.ingestor.submit_bytes(data, filename=filename, doc_id=doc_id,
                                              options=DocumentOptions(tenant_id=TENANT))
    assert outcome.status == "queued", outcome
    return outcome


def long_markdown(sections: int) -> bytes:
    body = "".join(f"## Rule {i}\n\n" + f"Rule {i} says staff follow procedure {i} on every shift. " * 40 + "\n\n"
                   for i in range(sections))
    return f"# Procedures\n\n{body}".encode()


async def test_deeply_nested_html_fails_at_once_and_the_next_upload_still_publishes(services: Services) -> None:
    await submit(services, NESTED, "web/deep", "deep.html")
    await submit(services, GOOD, "ops/dock", "dock.md")
    results = {r.doc_id: r for r in await services.ingestor.run_pending()}
    assert results["web/deep"].status == "failed"
    assert "nests elements more than 400 deep" in (results["web/deep"].message or "")
    assert results["ops/dock"].status == "published"
    job = await services.jobs.get(job_id=results["web/deep"].job_id or "")
    assert job is not None and job.state == "dead" and job.attempts == 1


async def test_a_document_over_the_passage_limit_is_refused_with_the_limit_named(services: Services) -> None:
    ingestor: Ingestor = dataclasses.replace(services.ingestor, max_chunks=5)
    await submit(services, long_markdown(4), "ops/procedures", "procedures.md")
    await submit(services, long_markdown(60), "ops/manual", "manual.md")  # far over: refused before chunking
    await submit(services, GOOD, "ops/dock", "dock.md")
    results = {r.doc_id: r for r in await ingestor.run_pending()}
    for doc_id in ("ops/procedures", "ops/manual"):
        assert results[doc_id].status == "failed"
        assert "over the limit of 5 per document (CAIRN_MAX_CHUNKS)" in (results[doc_id].message or "")
    assert "would make 8 passages" in (results["ops/procedures"].message or "")  # counted
    assert "would make about" in (results["ops/manual"].message or "")  # estimated, never chunked
    assert results["ops/dock"].status == "published"
    assert await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/procedures") is None


async def test_a_job_over_its_time_budget_fails_for_good_with_the_reason(services: Services) -> None:
    ingestor: Ingestor = dataclasses.replace(services.ingestor, job_timeout_s=0.001)
    await submit(services, long_markdown(200), "ops/manual", "manual.md")
    [result] = await ingestor.run_pending()
    assert result.status == "failed" and "CAIRN_JOB_TIMEOUT" in (result.message or "")
    job = await services.jobs.get(job_id=result.job_id or "")
    assert job is not None and job.state == "dead"


CLAIM_AND_DIE = textwrap.dedent("""
    import asyncio, os, signal, sys
    from pathlib import Path
    from store.db import open_db
    from store.jobs import Jobs

    async def main() -> None:
        db = await open_db(sys.argv[1])
        jobs = Jobs(db, max_attempts=3)
        await jobs.reclaim_dead_leases()
        job = await jobs.claim_next(only=[sys.argv[2]])
        print(job.attempts if job else "none", flush=True)
        if job:
            os.kill(os.getpid(), signal.SIGKILL)  # the file takes its worker down, as a poison file does

    asyncio.run(main())
""")


def worker_that_dies(svc: Services, job_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CLAIM_AND_DIE, str(svc.settings.database), job_id], cwd=ROOT,
                          env={**os.environ}, capture_output=True, text=True, timeout=120)


async def test_a_job_that_kills_its_worker_is_dead_lettered_after_its_attempts(services: Services) -> None:
    poison = await submit(services, GOOD, "ops/poison", "poison.md")
    for attempt in (1, 2, 3):
        died = worker_that_dies(services, poison.job_id or "")
        # Each new worker takes the job over at once: the dead worker's lease does not hold it.
        assert (died.returncode, died.stdout.strip()) == (-9, str(attempt)), died.stderr
    other = await submit(services, GOOD.replace(b"dock", b"gate"), "ops/gate", "gate.md")
    results = await services.ingestor.run_pending()
    assert [(r.job_id, r.status) for r in results] == [(other.job_id, "published")]
    job = await services.jobs.get(job_id=poison.job_id or "")
    assert job is not None and job.state == "dead"
    assert job.last_error == ABANDONED.format(n=3)
    assert await services.ingestor.run_pending() == []  # and it stays dead


async def test_asking_again_after_the_workers_died_gives_one_more_attempt(services: Services) -> None:
    """`cairn ingest` run again after three killed runs (a deploy, an OOM kill): the request is the
    user's, so the file is tried once more instead of dead-lettered unseen; a file that kills that
    worker too ends in the dead letter."""
    job = await submit(services, GOOD, "ops/dock", "dock.md")
    for _ in range(3):
        assert worker_that_dies(services, job.job_id or "").returncode == -9
    again = await submit(services, GOOD, "ops/dock", "dock.md")
    assert again.job_id == job.job_id
    results = await services.ingestor.run_pending()
    assert [(r.job_id, r.status) for r in results] == [(job.job_id, "published")]
    poison = await submit(services, GOOD.replace(b"dock", b"gate"), "ops/gate", "gate.md")
    for _ in range(3):
        worker_that_dies(services, poison.job_id or "")
    await submit(services, GOOD.replace(b"dock", b"gate"), "ops/gate", "gate.md")
    assert worker_that_dies(services, poison.job_id or "").stdout.strip() == "3"  # its one more attempt
    assert await services.ingestor.run_pending() == []
    dead = await services.jobs.get(job_id=poison.job_id or "")
    assert dead is not None and dead.state == "dead"


async def test_a_live_workers_lease_is_kept(services: Services) -> None:
    job = await submit(services, GOOD, "ops/dock", "dock.md")
    claimed = await services.jobs.claim_next()
    assert claimed is not None and claimed.job_id == job.job_id
    assert await services.jobs.reclaim_dead_leases() == []  # this process is alive: its lease stands
    assert await services.jobs.claim_next() is None
