"""`cairn sync` and `cairn sources` through `bot.cli.main`, in-process (no server running)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.main import main
from tests.bot.cli.conftest import run


def policies(root: Path) -> Path:
    folder = root / "share"
    (folder / "hr").mkdir(parents=True)
    (folder / "hr" / "leave.md").write_text("# Leave\n\nEveryone gets 25 days of paid leave a year.\n")
    (folder / "hr" / "sick.md").write_text("# Sick days\n\nTell your manager before 10:00.\n")
    return folder


def test_sync_registers_the_source_runs_it_and_keeps_its_settings(cairn_home: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = policies(tmp_path)
    code, [report], _ = run(capsys, "sync", str(folder), "--groups", "everyone", "--owner", "#people-ops",
                            "--every", "1h", "--json")
    assert code == 0 and report["status"] == "ok" and report["counts"] == {"new": 2}, report
    assert {i["doc_id"] for i in report["items"]} == {"hr/leave", "hr/sick"}

    (folder / "hr" / "sick.md").unlink()
    code, [again], _ = run(capsys, "sync", str(folder), "--json")  # no flags: the saved settings stay
    assert code == 0 and again["counts"] == {"not_modified": 1, "withdrawn": 1}, again

    code, [listed], _ = run(capsys, "sources", "--json")
    [source] = listed
    assert source["location"] == str(folder.resolve()) and source["kind"] == "directory"
    assert source["every_s"] == 3600 and source["owner"] == "#people-ops" and source["groups"] == ["everyone"]
    assert source["status"] == "ok" and source["counts"] == {"not_modified": 1, "withdrawn": 1}
    assert source["next_run"] is not None

    code, [docs], _ = run(capsys, "docs", "--json")
    assert {(d["doc_id"], d["status"]) for d in docs} == {("hr/leave", "active"), ("hr/sick", "withdrawn")}

    capsys.readouterr()
    assert main(["sources"]) == 0
    out = capsys.readouterr().out
    assert str(folder.resolve()) in out and "every 60 min" in out and "1 withdrawn" in out


def test_a_site_that_cannot_be_reached_fails_and_bad_flags_are_refused(cairn_home: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, [report], _ = run(capsys, "sync", "http://127.0.0.1:9/handbook/", "--json")
    assert code == 1 and report["status"] == "failed" and "could not be reached" in report["error"]
    folder = policies(tmp_path)
    code, _, err = run(capsys, "sync", str(folder), "--every", "5s")
    assert code == 2 and "shorter than a minute" in err
    code, _, err = run(capsys, "sync", str(folder), "--groups", "no-such-group")
    assert code == 2 and "not defined" in err
    code, _, err = run(capsys, "sync", "ftp://example/")
    assert code == 2 and "folder or an http(s) URL" in err
    code, _, err = run(capsys, "sync", str(tmp_path / "typo"))
    assert code == 2 and "no folder at" in err
    code, [listed], _ = run(capsys, "sources", "--json")
    assert [s["location"] for s in listed] == ["http://127.0.0.1:9/handbook/"]  # refused ones were not saved
