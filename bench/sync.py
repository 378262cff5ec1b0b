"""Website sync throughput: the GitLab handbook rendered to HTML (tests/handbook_site.py: site chrome,
robots.txt, sitemap, ETags) and served on 127.0.0.1, synced into a home of its own on disk.

The first run fetches, extracts and ingests every page (embedding dominates); the unchanged re-run sends
one conditional request per page and gets 304s. Both run at the source defaults (4 requests at a time,
0.025 s between request starts) and, to show what the pacing costs, the re-run again without the pause.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from bench import datasets as ds
from bench.report import log, table, target
from bench.workspace import DEFAULT_TENANT, Workspace, make_settings
from bot.services import open_services
from retrieval.sync import SyncReport, SyncRunner
from store.sources import Sources
from tests.handbook_site import HandbookSite

GOAL_RATIO = 20.0


async def section_sync(ws: Workspace) -> None:
    site = HandbookSite.from_markdown(ds.HANDBOOKS / "gitlab")
    await site.start()
    disk = Path(tempfile.mkdtemp(prefix="cairn-bench-sync-"))
    try:
        async with open_services(make_settings(disk / "home", ws.access_file), embedder=ws.embedder) as svc:
            sources = Sources(svc.db)
            await sources.setup()
            runner = SyncRunner(sources=sources, submitter=svc.ingestor.submitter, catalog=svc.catalog,
                                jobs=svc.jobs, ingestor=svc.ingestor)
            source = await sources.save(tenant_id=DEFAULT_TENANT, kind="website", location=site.start_url,
                                        groups=None, owner=None, every_s=None)
            runs: list[tuple[str, SyncReport, float]] = []
            with ws.memo_recording_only():  # every chunk is really embedded: no vectors reused from other sections
                for label in ("first run", "unchanged re-run"):
                    started = time.perf_counter()
                    runs.append((label, await runner.run(source), time.perf_counter() - started))
            paced = runs[-1][2]
            source = await sources.save(tenant_id=DEFAULT_TENANT, kind="website", location=site.start_url,
                                        groups=None, owner=None, every_s=None, settings={"delay_s": 0.0})
            started = time.perf_counter()
            runs.append(("unchanged re-run, no pause", await runner.run(source), time.perf_counter() - started))
    finally:
        await site.stop()
        shutil.rmtree(disk, ignore_errors=True)
    pages = len(site.pages)
    rows = []
    for label, report, seconds in runs:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts.items()))
        rows.append((label, report.status, counts, report.requests, f"{seconds:.2f}", f"{pages / seconds:.2f}"))
    table(f"Website sync: GitLab handbook, {pages} pages on 127.0.0.1", ["run", "status", "pages", "requests",
                                                                          "s", "pages/s"], rows,
          note="requests include robots.txt and the sitemap; a 304 costs one request per page")
    first, again = runs[0][2], paced
    log(f"sync: re-run vs first run {target(first / again, GOAL_RATIO, digits=1)} faster at the default pacing; "
        f"{first / runs[2][2]:.1f}x without the pause")
