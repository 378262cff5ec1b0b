"""Folder sync with real ingestion: add, edit, delete and rename between runs give exactly the expected
versions and withdrawals; a missing or emptied folder withdraws nothing."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bot.services import Services
from retrieval.sync import SyncRunner, parse_duration
from store.sources import SourceRecord, Sources
from tests.retrieval.test_docx import EXCEPTION, build_policy

TENANT = "larkspur"
PARKING = "---\ngroups: [executives]\nowner: '#from-the-file'\n---\n# Parking\n\nStaff park in lot B for USD 5 a day.\n"


async def mirror(svc: Services) -> tuple[Sources, SyncRunner]:
    sources = Sources(svc.db)
    await sources.setup()
    await sources.setup()  # idempotent: every start calls it
    return sources, SyncRunner(sources=sources, submitter=svc.ingestor.submitter, catalog=svc.catalog,
                               jobs=svc.jobs, ingestor=svc.ingestor)


async def state(svc: Services) -> dict[str, tuple[str | None, str]]:
    return {d.doc_id: (d.current_version, d.status) for d in await svc.catalog.list_documents(tenant_id=TENANT)}


def results(report: object) -> dict[str, str]:
    return {item.key: item.result for item in report.items}  # type: ignore[attr-defined]


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


async def test_add_edit_delete_rename_between_runs(services: Services, tmp_path: Path) -> None:
    folder = tmp_path / "policies"
    write(folder / "ops" / "parking.md", PARKING)
    write(folder / "hr" / "leave.txt", "LEAVE\n\nEveryone gets 25 days of paid leave a year.\n")
    write(folder / "finance" / "travel.docx", build_policy())
    write(folder / "it" / "devices.md", "# Devices\n\nLaptops are replaced every three years.\n")
    write(folder / ".git" / "HEAD.md", "# not a policy\n\nref: refs/heads/main\n")  # hidden: never synced
    write(folder / "logo.png", b"\x89PNG\r\n")  # not a policy format: ignored
    sources, runner = await mirror(services)
    source: SourceRecord = await sources.save(tenant_id=TENANT, kind="directory", location=str(folder), groups=None,
                                              owner=None, every_s=parse_duration("1h"))

    first = await runner.run(source)
    assert results(first) == {"ops/parking.md": "new", "hr/leave.txt": "new", "finance/travel.docx": "new",
                              "it/devices.md": "new"}, first.as_dict()
    assert await state(services) == {d: ("v1", "active") for d in ("ops/parking", "hr/leave", "finance/travel",
                                                                    "it/devices")}
    parking = await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/parking")
    assert parking is not None and parking.groups == ("everyone",)  # the source decides, not front matter
    found = await services.searcher.search("hotel limit for Zurich employees during trade fairs",
                                           services.access.resolve_cli(None))
    assert found.passages and EXCEPTION.split(" may")[0] in found.passages[0].text

    again = await runner.run(source)
    assert set(results(again).values()) == {"not_modified"}, again.as_dict()

    write(folder / "ops" / "parking.md", PARKING.replace("USD 5", "USD 7"))  # edit
    write(folder / "hr" / "sick.md", "# Sick days\n\nTell your manager before 10:00.\n")  # add
    (folder / "it" / "devices.md").unlink()  # delete
    (folder / "finance" / "travel.docx").rename(folder / "finance" / "travel-2025.docx")  # rename
    stamp = (folder / "hr" / "leave.txt").stat().st_mtime_ns + 5_000_000_000
    os.utime(folder / "hr" / "leave.txt", ns=(stamp, stamp))  # touched, same bytes
    changed = await runner.run(source)
    assert results(changed) == {"ops/parking.md": "changed", "hr/sick.md": "new", "hr/leave.txt": "unchanged",
                                "finance/travel-2025.docx": "new", "it/devices.md": "withdrawn",
                                "finance/travel.docx": "withdrawn"}, changed.as_dict()
    assert await state(services) == {"ops/parking": ("v2", "active"), "hr/leave": ("v1", "active"),
                                     "hr/sick": ("v1", "active"), "finance/travel-2025": ("v1", "active"),
                                     "finance/travel": (None, "withdrawn"), "it/devices": (None, "withdrawn")}
    row = await sources.get(source_id=source.source_id)
    assert row is not None and row.last_status == "ok" and row.last_counts["withdrawn"] == 2
    assert row.next_run_at is not None and row.next_run_at > (row.last_finished_at or "")

    write(folder / "it" / "devices.md", "# Devices\n\nLaptops are replaced every three years.\n")  # back again
    back = await runner.run(source)
    assert results(back)["it/devices.md"] == "new"
    assert (await state(services))["it/devices"] == ("v2", "active")
    assert {r for k, r in results(back).items() if k != "it/devices.md"} == {"not_modified"}


async def test_a_missing_or_emptied_folder_withdraws_nothing(services: Services, tmp_path: Path) -> None:
    folder = tmp_path / "share"
    write(folder / "a.md", "# A\n\nRule A applies to everyone.\n")
    sources, runner = await mirror(services)
    source = await sources.save(tenant_id=TENANT, kind="directory", location=str(folder), groups=["everyone"],
                                owner="#ops", every_s=None)
    assert results(await runner.run(source)) == {"a.md": "new"}

    (folder / "a.md").rename(tmp_path / "a.md")  # the share looks empty, as an unmounted one does
    empty = await runner.run(source)
    assert empty.status == "failed" and "empty" in (empty.error or "") and empty.items == []
    folder.rmdir()
    missing = await runner.run(source)
    assert missing.status == "failed" and "does not exist" in (missing.error or "")
    assert await state(services) == {"a": ("v1", "active")}
    doc = await services.catalog.get_document(tenant_id=TENANT, doc_id="a")
    assert doc is not None and doc.owner == "#ops"


async def test_a_document_id_kept_by_another_source_is_not_taken_over(services: Services, tmp_path: Path) -> None:
    for name in ("one", "two"):
        write(tmp_path / name / "rules.md", f"# Rules\n\nThe {name} rules apply.\n")
    sources, runner = await mirror(services)
    one = await sources.save(tenant_id=TENANT, kind="directory", location=str(tmp_path / "one"), groups=None,
                             owner=None, every_s=None)
    two = await sources.save(tenant_id=TENANT, kind="directory", location=str(tmp_path / "two"), groups=None,
                             owner=None, every_s=None)
    assert results(await runner.run(one)) == {"rules.md": "new"}
    clash = await runner.run(two)
    assert results(clash) == {"rules.md": "error"} and clash.status == "partial"
    assert "already kept in sync by another source" in (clash.items[0].message or "")
    assert await sources.owner_of(tenant_id=TENANT, doc_id="rules") == one.source_id
    assert await sources.items(source_id=two.source_id) == {}  # the refused source claims nothing
    assert results(await runner.run(one)) == {"rules.md": "not_modified"}  # the first source keeps it
    assert results(await runner.run(two)) == {"rules.md": "error"}
    assert [s.location for s in await sources.list_sources()] == sorted([str(tmp_path / "one"),
                                                                         str(tmp_path / "two")])


async def test_with_the_index_held_elsewhere_a_worker_runs_the_jobs_and_cleans_up(services: Services,
                                                                               tmp_path: Path) -> None:
    """The runner as a CLI uses it while `cairn serve` holds the index: it only queues and follows jobs,
    and a withdrawal revokes eligibility at once; the worker (here a task on the same database) does the rest."""
    folder = tmp_path / "share"
    write(folder / "a.md", "# A\n\nRule A applies to everyone.\n")
    write(folder / "b.md", "# B\n\nRule B applies to contractors.\n")
    sources = Sources(services.db)
    await sources.setup()
    handed = SyncRunner(sources=sources, submitter=services.ingestor.submitter, catalog=services.catalog,
                        jobs=services.jobs, ingestor=None, run_jobs=False, poll_s=0.05)
    source = await sources.save(tenant_id=TENANT, kind="directory", location=str(folder), groups=None, owner=None,
                                every_s=None)
    stop = asyncio.Event()

    async def worker() -> None:
        while not stop.is_set():
            await services.ingestor.run_pending()
            await asyncio.sleep(0.05)

    task = asyncio.create_task(worker())
    try:
        assert results(await handed.run(source)) == {"a.md": "new", "b.md": "new"}
        (folder / "b.md").unlink()
        assert results(await handed.run(source)) == {"a.md": "not_modified", "b.md": "withdrawn"}
        assert (await state(services))["b"] == (None, "withdrawn")  # eligibility revoked by the runner itself
        for _ in range(100):
            async with services.db.execute("SELECT COUNT(*) FROM chunks WHERE doc_id='b'") as cur:
                if (await cur.fetchone())[0] == 0:
                    break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the worker's cleanup never removed the withdrawn text")
    finally:
        stop.set()
        await task
