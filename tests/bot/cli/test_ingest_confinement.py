"""`cairn ingest DIR` reads only regular files inside DIR: a symlink out of it (/etc/passwd) or a named pipe
gets its own line saying why, and nothing of it becomes searchable."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bot.cli.conftest import run
from tests.retrieval.test_source_confinement import SECRET, hostile_share


def test_cairn_ingest_dir_skips_links_out_with_a_line_each(cairn_home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    share = hostile_share(tmp_path)
    code, lines, _err = run(capsys, "ingest", str(share), "--json")
    by_path = {Path(line["path"]).relative_to(share).as_posix() if line["path"].startswith(str(share))
               else line["path"]: line for line in lines}
    for key in ("passwd.txt", "ops/etc.md", "pipe.md", "sock.md"):
        assert by_path[key]["status"] == "rejected", by_path
        assert "skipped: " in by_path[key]["message"]
    assert {line["doc_id"] for line in lines if line["status"] == "published"} == {"ops/parking", "ops/alias"}
    code, hits, _ = run(capsys, "search", "root x 0 0 secret-marker-7f3a hunter2", "--json")
    assert code == 0
    assert all(SECRET not in p["text"] for hit in hits for p in hit["passages"])
