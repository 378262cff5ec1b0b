"""Document ids that differ only in letter case (`A/B` and `a/b`) would share their stored originals on a
case-insensitive file system (macOS, Windows volumes): the second is refused with the reason — from
an upload, a folder sync, or while the first is still queued."""

from __future__ import annotations

from pathlib import Path

from bot.services import Services
from retrieval.ingest import DocumentOptions
from retrieval.sync import SyncRunner, parse_duration
from store.sources import Sources

TENANT = "larkspur"
TEXT = b"# Leave\n\nEveryone gets 25 days of paid leave a year.\n"


async def test_a_case_twin_of_a_document_or_a_queued_job_is_refused(services: Services) -> None:
    options = DocumentOptions(tenant_id=TENANT)
    first = await services.ingestor.submit_bytes(TEXT, filename="leave.md", doc_id="HR/Leave", options=options)
    assert first.status == "queued"
    queued_twin = await services.ingestor.submit_bytes(TEXT + b"\nv2\n", filename="leave.md", doc_id="hr/leave",
                                                       options=options)
    assert queued_twin.status == "rejected" and "differs from the existing 'HR/Leave' only in letter case" in (
        queued_twin.message or "")
    await services.ingestor.run_pending()
    twin = await services.ingestor.submit_bytes(TEXT + b"\nv3\n", filename="leave.md", doc_id="hr/LEAVE",
                                                options=options)
    assert twin.status == "rejected" and "'HR/Leave'" in (twin.message or "")
    same = await services.ingestor.submit_bytes(TEXT + b"\nv4\n", filename="leave.md", doc_id="HR/Leave",
                                                options=options)
    assert same.status == "queued"  # the exact id still replaces its document
    other_tenant = await services.ingestor.submit_bytes(TEXT, filename="leave.md", doc_id="hr/leave",
                                                        options=DocumentOptions(tenant_id="harbor"))
    assert other_tenant.status == "queued"


async def test_folder_sync_refuses_the_second_spelling(services: Services, tmp_path: Path) -> None:
    share = tmp_path / "share"
    (share / "HR").mkdir(parents=True)
    (share / "hr").mkdir()
    (share / "HR" / "Leave.md").write_bytes(TEXT)
    (share / "hr" / "leave.md").write_bytes(TEXT.replace(b"25", b"30"))
    sources = Sources(services.db)
    await sources.setup()
    runner = SyncRunner(sources=sources, submitter=services.ingestor.submitter, catalog=services.catalog,
                        jobs=services.jobs, ingestor=services.ingestor)
    source = await sources.save(tenant_id=TENANT, kind="directory", location=str(share), groups=None, owner=None,
                                every_s=parse_duration("1h"))
    report = await runner.run(source)
    got = {item.key: (item.result, item.message or "") for item in report.items}
    assert got["HR/Leave.md"][0] == "new"
    assert got["hr/leave.md"][0] == "error" and "only in letter case" in got["hr/leave.md"][1]
    docs = {d.doc_id for d in await services.catalog.list_documents(tenant_id=TENANT)}
    assert "HR/Leave" in docs and "hr/leave" not in docs
