"""A question asked while a replacement is published sees exactly one version: the old one until
the publication commits, the new one after — never none, never both.

The publication is held at its critical statement by SQLite's own trace hook (on the connection
that runs it) while the question is asked, so the interleaving that used to expose half a
publication happens every time instead of once in a while; and it holds under a CPU hog.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from bot.services import Services
from retrieval.ingest import DocumentOptions
from retrieval.search import SearchResult
from store.records import Scope
from tests.load import cpu_hog

TENANT = "larkspur"
V1 = b"# Parking\n\nStaff park in lot B. A monthly staff parking permit costs USD 15.\n"
V2 = b"# Parking\n\nStaff park in lot C. A monthly staff parking permit costs USD 22.\n"
QUESTION = "How much does a monthly staff parking permit cost?"
ELIGIBILITY = "d.current_version=c.version"  # the catalog's eligibility statement
WAIT_S = 120.0  # a bound for a broken test, never reached when it works


def versions(result: SearchResult) -> set[str]:
    return {p.version for p in result.passages if p.doc_id == "ops/parking"}


async def submit(svc: Services, data: bytes) -> None:
    outcome = await svc.ingestor.submit_bytes(data, filename="ops/parking.md", doc_id="ops/parking",
                                              options=DocumentOptions(tenant_id=TENANT))
    assert outcome.status == "queued", outcome


def hook(when: Callable[[str], bool], action: Callable[[], None]) -> Callable[[str], None]:
    """A trace callback that runs `action` (in SQLite's thread, before the statement) the first time
    a statement matches."""
    fired = threading.Event()

    def trace(sql: str) -> None:
        if not fired.is_set() and when(sql):
            fired.set()
            action()

    trace.fired = fired  # type: ignore[attr-defined]
    return trace


@pytest.mark.sqlite_only("steps in between two reads through SQLite's trace callback")
async def test_replace_never_shows_zero_or_two_versions_to_a_question_asked_meanwhile(services: Services) -> None:
    svc = services
    scope: Scope = svc.access.resolve_cli(None)
    await submit(svc, V1)
    await svc.ingestor.run_pending()
    assert versions(await svc.searcher.search(QUESTION, scope)) == {"v1"}
    await submit(svc, V2)

    loop = asyncio.get_running_loop()
    asked: list[asyncio.Task[SearchResult]] = []
    answered = threading.Event()

    def ask_now() -> None:
        # The old version is retired and the new one not yet current: the gap a reader inside
        # this transaction would see. Ask, and hold the publication until the answer is in.
        def start() -> None:
            task = loop.create_task(svc.searcher.search(QUESTION, scope))
            task.add_done_callback(lambda _: answered.set())
            asked.append(task)
        loop.call_soon_threadsafe(start)
        answered.wait(WAIT_S)

    trace = hook(lambda sql: "SET state='retired'" in sql, ask_now)
    await svc.db.writer.set_trace_callback(trace)
    try:
        with cpu_hog():
            results = await svc.ingestor.run_pending()
    finally:
        await svc.db.writer.set_trace_callback(None)
    assert trace.fired.is_set() and asked  # type: ignore[attr-defined]
    assert [r.status for r in results] == ["published"]
    meanwhile = await asked[0]
    assert meanwhile.gate is None and versions(meanwhile) == {"v1"}, meanwhile.gate
    assert versions(await svc.searcher.search(QUESTION, scope)) == {"v2"}


@pytest.mark.sqlite_only("steps in between two reads through SQLite's trace callback")
async def test_a_publication_between_the_searchers_two_fetches_never_returns_both_versions(
        services: Services) -> None:
    """The new version is indexed but not yet current, so the search refuses its chunks and fetches
    again; the publication commits between that search's two eligibility checks."""
    svc = services
    scope: Scope = svc.access.resolve_cli(None)
    await submit(svc, V1)
    await svc.ingestor.run_pending()
    await submit(svc, V2)

    loop = asyncio.get_running_loop()
    asked: list[asyncio.Task[SearchResult]] = []
    first_check_done = threading.Event()
    published = threading.Event()

    def ask_before_publishing() -> None:
        loop.call_soon_threadsafe(lambda: asked.append(loop.create_task(svc.searcher.search(QUESTION, scope))))
        first_check_done.wait(WAIT_S)

    checks = 0

    def second_check_after_publication(sql: str) -> None:
        nonlocal checks
        if ELIGIBILITY in sql:
            checks += 1
            if checks == 2:
                first_check_done.set()
                published.wait(WAIT_S)

    def on_progress(job: object, state: str) -> None:
        if state == "published":
            published.set()

    publish = hook(lambda sql: "SET state='published'" in sql, ask_before_publishing)
    await svc.db.writer.set_trace_callback(publish)
    await svc.db.reader.set_trace_callback(second_check_after_publication)
    try:
        results = await svc.ingestor.run_pending(on_progress=on_progress)
        meanwhile = await asked[0]
    finally:
        await svc.db.writer.set_trace_callback(None)
        await svc.db.reader.set_trace_callback(None)
    assert [r.status for r in results] == ["published"]
    assert checks >= 2, "the search did not fetch twice"
    assert versions(meanwhile) == {"v2"}, versions(meanwhile)  # the later snapshot, alone
