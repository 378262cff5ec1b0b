"""Website sync against a real handbook site on 127.0.0.1 (tests/handbook_site.py), with real ingestion,
index and search: first sync, conditional re-sync, an edit, a confirmed removal, the site going down."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.services import Services
from retrieval.sync import SyncRunner
from store.sources import SourceRecord, Sources
from tests.conftest import SHARED_DATA
from tests.handbook_site import FOOTER, HandbookSite
from tests.retrieval.test_docx import EXCEPTION, build_policy

BASECAMP = SHARED_DATA / "handbooks" / "basecamp"
PAGES = ["severance.md", "our-rituals.md", "managing-work-devices.md", "moonlighting.md"]
TENANT = "larkspur"
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@pytest.fixture
async def site() -> AsyncIterator[HandbookSite]:
    site = HandbookSite.from_markdown(BASECAMP, PAGES)
    await site.start()
    try:
        yield site
    finally:
        await site.stop()


async def mirror(svc: Services) -> tuple[Sources, SyncRunner]:
    sources = Sources(svc.db)
    await sources.setup()
    return sources, SyncRunner(sources=sources, submitter=svc.ingestor.submitter, catalog=svc.catalog,
                               jobs=svc.jobs, ingestor=svc.ingestor)


async def add_site(sources: Sources, site: HandbookSite, **settings: object) -> SourceRecord:
    return await sources.save(tenant_id=TENANT, kind="website", location=site.start_url, groups=None,
                              owner="#people-ops", every_s=None, settings={"delay_s": 0.0, **settings})


async def versions(svc: Services) -> dict[str, tuple[str | None, str]]:
    return {d.doc_id: (d.current_version, d.status) for d in await svc.catalog.list_documents(tenant_id=TENANT)}


async def test_first_sync_conditional_resync_edit_confirmed_removal_and_outage(services: Services,
                                                                              site: HandbookSite) -> None:
    # A Word file linked from a page is synced with the pages; a dead link is never requested.
    site.files["/handbook/forms/travel.docx"] = (DOCX_TYPE, build_policy())
    title, body = site.pages["/handbook/our-rituals/"]
    site.pages["/handbook/our-rituals/"] = (title, body + '<p>See the <a href="/handbook/forms/travel.docx">travel '
                                            'policy</a> and the <a href="/handbook/retired-page/">old page</a>.</p>')
    sources, runner = await mirror(services)
    source = await add_site(sources, site)
    pages = {"handbook", "handbook/severance", "handbook/our-rituals", "handbook/managing-work-devices",
             "handbook/moonlighting", "handbook/forms/travel.docx"}

    first = await runner.run(source)
    assert first.status == "ok", first.as_dict()
    assert first.counts == {"new": 6, "skipped": 1}, first.as_dict()  # the private page: robots.txt
    assert await versions(services) == {doc: ("v1", "active") for doc in pages}
    assert not [p for p, _ in site.requests if p.startswith("/handbook/private/")]
    docs = {d.doc_id: d for d in await services.catalog.list_documents(tenant_id=TENANT)}
    # Access and ownership from the source, never from the page's <meta> tags; the title from the <h1>.
    assert docs["handbook/moonlighting"].groups == ("everyone",)
    assert docs["handbook/moonlighting"].owner == "#people-ops"
    assert docs["handbook/moonlighting"].title == "A Note About Moonlighting"
    async with services.db.execute("SELECT text FROM chunks WHERE tenant_id=?", (TENANT,)) as cur:
        stored = "\n".join(r[0] for r in await cur.fetchall())
    assert "occasional side gig" in stored
    assert FOOTER not in stored and "Report an issue" not in stored  # the chrome is not content
    found = await services.searcher.search("can I do a side gig or speaking gig outside work?",
                                           services.access.resolve_cli(None))
    assert found.passages and found.passages[0].doc_id == "handbook/moonlighting"
    assert EXCEPTION in stored  # the linked Word file's footnote

    site.requests.clear()
    second = await runner.run(source)
    assert second.counts == {"not_modified": 6, "skipped": 1}, second.as_dict()
    page_requests = site.page_requests()
    assert len(page_requests) == 6 and all(tag for _, tag in page_requests)  # one conditional request each
    assert "/handbook/retired-page/" not in {p for p, _ in site.requests}
    assert await versions(services) == {doc: ("v1", "active") for doc in pages}

    title, body = site.pages["/handbook/moonlighting/"]
    site.pages["/handbook/moonlighting/"] = (title, body.replace("few hours a week", "five hours a week"))
    edited = await runner.run(source)
    assert edited.counts == {"changed": 1, "not_modified": 5, "skipped": 1}, edited.as_dict()
    assert (await versions(services))["handbook/moonlighting"] == ("v2", "active")

    # Removing a page also changes every other page's navigation: their main content is the same,
    # so they are fetched again (new ETags) but make no new version.
    del site.pages["/handbook/severance/"]
    removed = await runner.run(source)
    assert removed.counts == {"pending_removal": 1, "unchanged": 4, "not_modified": 1, "skipped": 1}, \
        removed.as_dict()
    assert (await versions(services))["handbook/severance"] == ("v1", "active")  # not yet: unconfirmed
    confirmed = await runner.run(source)
    assert confirmed.counts == {"withdrawn": 1, "not_modified": 5, "skipped": 1}, confirmed.as_dict()
    now = await versions(services)
    assert now["handbook/severance"] == (None, "withdrawn")
    assert now["handbook/moonlighting"] == ("v2", "active") and now["handbook/our-rituals"] == ("v1", "active")
    async with services.db.execute("SELECT COUNT(*) FROM chunks WHERE doc_id='handbook/severance'") as cur:
        assert (await cur.fetchone())[0] == 0  # text gone, as `cairn withdraw` leaves it

    await site.stop()
    down = await runner.run(source)
    assert down.status == "failed" and "could not be reached" in (down.error or ""), down.as_dict()
    assert down.items == []
    assert await versions(services) == now  # nothing withdrawn
    row = await sources.get(source_id=source.source_id)
    assert row is not None and row.last_status == "failed" and "nothing was withdrawn" in (row.last_error or "")
    assert row.running_since is None


async def test_without_a_sitemap_links_are_followed_and_page_errors_stay_per_page(services: Services) -> None:
    site = HandbookSite.from_markdown(BASECAMP, ["severance.md", "our-rituals.md"])
    site.use_sitemap = False
    site.pages["/handbook/old-rituals/"] = site.pages["/handbook/our-rituals/"]
    site.redirects["/handbook/old-rituals/"] = "/handbook/our-rituals/"
    site.redirects["/handbook/elsewhere/"] = "http://127.0.0.2:9/handbook/"  # never requested: off-site
    title, body = site.pages["/handbook/"]
    site.pages["/handbook/"] = (title, body + '<p><a href="/handbook/elsewhere/">Elsewhere</a>'
                                       '<a href="/handbook/old-rituals/">Old</a><a href="/handbook/broken/">'
                                       'Broken</a><a href="/outside/">Outside</a><a href="/handbook/slow/">Slow'
                                       '</a></p>')
    site.pages["/handbook/slow/"] = ("Slow", "<p>answers after the timeout</p>")
    site.stalls["/handbook/slow/"] = 3.0
    site.pages["/handbook/broken/"] = ("Broken", "<p>never served</p>")
    site.statuses["/handbook/broken/"] = 503
    await site.start()
    try:
        sources, runner = await mirror(services)
        source = await add_site(sources, site, timeout_s=0.5)
        report = await runner.run(source)
    finally:
        await site.stop()
    results = {item.key: (item.result, item.message) for item in report.items}
    assert results["/handbook/severance"][0] == "new" and results["/handbook/our-rituals"][0] == "new"
    assert results["/handbook/broken"] == ("error", "HTTP 503")
    assert results["/handbook/slow"] == ("error", "timed out after 0.5 s")
    assert results["/handbook/elsewhere"][0] == "error" and "outside the source" in str(results["/handbook/elsewhere"][1])
    # A link that redirects to a page of the source is that page, once; its old path never became a document.
    assert "/handbook/old-rituals" not in results
    assert [i.key for i in report.items].count("/handbook/our-rituals") == 1
    assert "/outside" not in results and "/handbook/private/salaries" not in results  # off-scope, robots.txt
    assert report.status == "partial"
    assert not [p for p, _ in site.requests if p.startswith(("/outside", "/handbook/private"))]
    assert set(await versions(services)) == {"handbook", "handbook/severance", "handbook/our-rituals"}
