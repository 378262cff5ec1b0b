"""The website crawler under budgets, through the real sync against a hostile site on 127.0.0.1: a page
that never ends is cut at the byte cap, a 150 MB PDF is refused from its Content-Length without being
downloaded, a page that drips a byte a second is cut at the request's time limit, a loop of generated
pages stops at the page limit, and a run stops at its time limit — each with a clear message, the rest
of the run going on and nothing unvisited withdrawn."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from bot.services import Services
from retrieval.sync import SyncRunner
from store.sources import Sources
from tests.bombs import HostileSite

TENANT = "larkspur"
CAP = 2 * 1024 * 1024


@pytest.fixture
async def hostile() -> AsyncIterator[HostileSite]:
    site = HostileSite()
    await site.start("endless", "slow", "big.pdf", "loop/0")
    try:
        yield site
    finally:
        await site.stop()


async def mirror(svc: Services, site: HostileSite, **settings: object) -> tuple[SyncRunner, object]:
    sources = Sources(svc.db)
    await sources.setup()
    submitter = svc.ingestor.submitter
    submitter.max_bytes = CAP
    runner = SyncRunner(sources=sources, submitter=submitter, catalog=svc.catalog, jobs=svc.jobs,
                        ingestor=svc.ingestor)
    source = await sources.save(tenant_id=TENANT, kind="website", location=site.start_url, groups=None, owner=None,
                                every_s=None, settings={"delay_s": 0.0, **settings})
    return runner, source


async def test_every_trap_is_refused_with_its_limit_and_the_run_goes_on(services: Services,
                                                                       hostile: HostileSite) -> None:
    runner, source = await mirror(services, hostile, fetch_s=3, max_pages=12)
    started = time.monotonic()
    report = await runner.run(source)  # type: ignore[arg-type]
    took = time.monotonic() - started
    items = {item.key: item for item in report.items}
    assert items["/site"].result == "new"  # the start page itself is a policy page
    endless = items["/site/endless"]
    assert endless.result == "error" and f"over the {CAP:,}-byte limit" in (endless.message or "")
    assert hostile.sent["endless"] < CAP + 8 * 1024 * 1024  # stopped near the cap, not at 1.3 GB
    big = items["/site/big.pdf"]
    assert big.result == "error" and "157,286,400 bytes declared" in (big.message or "")
    assert "not downloaded" in (big.message or "")
    assert hostile.sent.get("big.pdf", 0) < 32 * 1024 * 1024
    slow = items["/site/slow"]
    assert slow.result == "error" and "no complete answer within 3 s" in (slow.message or "")
    assert hostile.sent["slow"] <= 5
    crawl = items["(crawl)"]
    assert "the crawl stopped at 12 pages (the limit per run)" in (crawl.message or "")
    assert sum(1 for key in items if key.startswith("/site/loop/")) <= 12
    assert took < 60
    assert report.status == "partial"


async def test_a_run_stops_at_its_time_limit_and_withdraws_nothing_unvisited(services: Services,
                                                                            hostile: HostileSite) -> None:
    runner, source = await mirror(services, hostile, fetch_s=3, max_pages=40)
    first = await runner.run(source)  # type: ignore[arg-type]
    visited = {i.key for i in first.items if i.key.startswith("/site/loop/") and i.result == "new"}
    assert len(visited) >= 20
    hostile.page_delay_s = 0.5
    runner2, source2 = await mirror(services, hostile, fetch_s=3, max_pages=40, max_run_s=2, concurrency=1)
    started = time.monotonic()
    second = await runner2.run(source2)  # type: ignore[arg-type]
    assert time.monotonic() - started < 2 + 3 + 10  # the limit, one request in flight, the rest
    notes = [i.message or "" for i in second.items if i.key == "(crawl)"]
    assert any("reached its time limit of 2 s" in note for note in notes), second.as_dict()
    assert not any(i.result in ("withdrawn", "pending_removal") for i in second.items)
    docs = {d.doc_id: d.status for d in await services.catalog.list_documents(tenant_id=TENANT)}
    assert all(docs[f"site/loop/{key.rsplit('/', 1)[1]}"] == "active" for key in visited)
