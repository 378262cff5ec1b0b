"""A folder source reads only regular files inside the folder: a symlink to a file outside it (/etc/passwd,
another tenant's home), a named pipe, a socket are skipped with a reason per file — by `cairn sync` and by
`cairn ingest DIR` alike — and nothing of them becomes searchable."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from bot.services import Services
from retrieval.parse import SUPPORTED_SUFFIXES
from retrieval.sync import SyncRunner, parse_duration
from retrieval.sync.files import OutsideSource, list_source_files, read_source_file
from store.sources import Sources

TENANT = "larkspur"
SECRET = "root x 0 0 secret-marker-7f3a the admin password is hunter2"
POLICY = "# Parking\n\nStaff park in lot B for USD 5 a day.\n"


def hostile_share(tmp_path: Path) -> Path:
    """A share with one real policy, and links and special files someone with write access planted."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "passwd.txt").write_text(f"PASSWD\n\n{SECRET}\n")
    (outside / "secrets").mkdir()
    (outside / "secrets" / "keys.md").write_text(f"# Keys\n\n{SECRET}\n")
    share = tmp_path / "share"
    (share / "ops").mkdir(parents=True)
    (share / "ops" / "parking.md").write_text(POLICY)
    (share / "passwd.txt").symlink_to(outside / "passwd.txt")  # a file symlink out of the folder
    (share / "ops" / "etc.md").symlink_to("/etc/passwd")
    (share / "linked").symlink_to(outside / "secrets", target_is_directory=True)  # a directory symlink out
    (share / "ops" / "alias.md").symlink_to(share / "ops" / "parking.md")  # inside: allowed
    os.mkfifo(share / "pipe.md")  # a reader would block forever
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(share / "sock.md"))
    return share


def test_only_regular_files_inside_the_folder_are_listed(tmp_path: Path) -> None:
    share = hostile_share(tmp_path)
    files, skipped = list_source_files(share, SUPPORTED_SUFFIXES)
    assert [f.relative_to(share).as_posix() for f in files] == ["ops/alias.md", "ops/parking.md"]
    reasons = {s.path.relative_to(share).as_posix(): s.reason for s in skipped}
    assert set(reasons) == {"passwd.txt", "ops/etc.md", "pipe.md", "sock.md"}
    assert "symlink to" in reasons["passwd.txt"] and "outside the folder" in reasons["passwd.txt"]
    assert "outside the folder" in reasons["ops/etc.md"]
    assert "named pipe" in reasons["pipe.md"] and "socket" in reasons["sock.md"]


def test_a_file_swapped_for_a_symlink_after_listing_is_not_read(tmp_path: Path) -> None:
    share = hostile_share(tmp_path)
    target = share / "ops" / "parking.md"
    assert read_source_file(share, target, max_bytes=1000).decode() == POLICY
    target.unlink()
    target.symlink_to(tmp_path / "elsewhere" / "passwd.txt")
    with pytest.raises(OutsideSource, match="outside the folder"):
        read_source_file(share, target, max_bytes=1000)
    (share / "big.md").write_text(POLICY)
    assert read_source_file(share, share / "big.md", max_bytes=3) == POLICY.encode()[:4]  # bounded read


async def test_folder_sync_skips_links_out_and_special_files(services: Services, tmp_path: Path) -> None:
    share = hostile_share(tmp_path)
    sources = Sources(services.db)
    await sources.setup()
    runner = SyncRunner(sources=sources, submitter=services.ingestor.submitter, catalog=services.catalog,
                        jobs=services.jobs, ingestor=services.ingestor)
    source = await sources.save(tenant_id=TENANT, kind="directory", location=str(share), groups=None, owner=None,
                                every_s=parse_duration("1h"))
    report = await runner.run(source)
    got = {item.key: (item.result, item.message or "") for item in report.items}
    assert got["ops/parking.md"][0] == "new" and got["ops/alias.md"][0] == "new"
    for key in ("passwd.txt", "ops/etc.md", "pipe.md", "sock.md"):
        assert got[key][0] == "skipped" and got[key][1].startswith("skipped: "), got[key]
    assert not any(key.startswith("linked/") for key in got)
    docs = {d.doc_id for d in await services.catalog.list_documents(tenant_id=TENANT)}
    assert docs == {"ops/parking", "ops/alias"}
    # A synced file later replaced by a link out of the folder is withdrawn, never re-read.
    (share / "ops" / "parking.md").unlink()
    (share / "ops" / "parking.md").symlink_to(tmp_path / "elsewhere" / "passwd.txt")
    again = {item.key: item.result for item in (await runner.run(source)).items}
    assert again["ops/parking.md"] == "withdrawn"
    parking = await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/parking")
    assert parking is not None and parking.status != "active"
