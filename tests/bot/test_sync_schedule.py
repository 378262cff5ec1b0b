"""`cairn serve`'s cairn.sources job: due sources are synced, their jobs run by the ingestion worker (as
any upload's are), and the next run is scheduled `--every` later."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.scheduler import build_context, sync_due_sources
from bot.server import ingestion_pass
from bot.services import Services


async def test_due_sources_are_synced_through_the_worker_and_rescheduled(services: Services, tmp_path: Path) -> None:
    folder = tmp_path / "share"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nEveryone gets 25 days of paid leave a year.\n")
    sources = services.store.sources
    due = await sources.save(tenant_id="larkspur", kind="directory", location=str(folder), groups=None,
                             owner="#people-ops", every_s=3600)
    await sources.save(tenant_id="larkspur", kind="directory", location=str(tmp_path / "manual"), groups=None,
                       owner=None, every_s=None)  # on demand only: never run by the schedule
    stop = asyncio.Event()

    async def worker() -> None:  # what `cairn serve` runs beside the scheduler
        while not stop.is_set():
            await ingestion_pass(services)
            await asyncio.sleep(0.05)

    task = asyncio.create_task(worker())
    try:
        ctx = build_context(services)
        [report] = await sync_due_sources(ctx)
        assert report.source_id == due.source_id and report.counts == {"new": 1}, report.as_dict()
        assert await sync_due_sources(ctx) == []  # next run an hour later
    finally:
        stop.set()
        await task
    [job] = await services.jobs.list(requested_by=f"sync:{due.source_id}")
    assert job.state == "published" and job.doc_id == "leave"
    row = await sources.get(source_id=due.source_id)
    assert row is not None and row.next_run_at is not None and row.last_finished_at is not None
    assert row.next_run_at > row.last_finished_at
