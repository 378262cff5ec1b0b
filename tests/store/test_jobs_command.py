"""`cairn jobs` lists what the ingestion queue holds and `cairn jobs cancel ID` takes a job out of it for
good (it works while the server holds the index); on either engine, and with CAIRN_DATABASE_URL naming
PostgreSQL, no SQLite file is written."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli.main import main
from store.db import open_db
from store.jobs import Jobs
from tests.conftest import SAMPLE_ACCESS


async def _enqueue(db_path: Path | str, doc_id: str) -> str:
    db = await open_db(db_path)
    try:
        job, _ = await Jobs(db).enqueue(tenant_id="larkspur", doc_id=doc_id, source_path=f"{doc_id}.md",
                                        raw_path=f"/nowhere/{doc_id}.md", content_hash=f"h-{doc_id}", options={})
        return job.job_id
    finally:
        await db.close()


async def _claimable(db_path: Path | str) -> list[str]:
    db = await open_db(db_path)
    try:
        jobs, found = Jobs(db), []
        while (job := await jobs.claim_next(exclude=found)) is not None:
            found.append(job.job_id)
        return found
    finally:
        await db.close()


def _cairn(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_jobs_lists_the_queue_and_cancel_takes_a_job_out_for_good(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        engine: str, database_target: Path | str) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("CAIRN_ACCESS_FILE", str(SAMPLE_ACCESS))
    db_path = home / "cairn.db" if engine == "sqlite" else database_target
    if engine == "postgresql":
        monkeypatch.setenv("CAIRN_DATABASE_URL", str(database_target))
    poison = asyncio.run(_enqueue(db_path, "ops/poison"))
    other = asyncio.run(_enqueue(db_path, "ops/dock"))

    code, out, _ = _cairn(capsys, "jobs", "--json")
    listed = {row["job_id"]: row for row in map(json.loads, out.splitlines())}
    assert code == 0 and set(listed) == {poison, other}
    assert listed[poison]["state"] == "queued" and listed[poison]["doc_id"] == "ops/poison"

    code, out, _ = _cairn(capsys, "jobs", "cancel", poison[:10])
    assert code == 0 and f"cancelled {poison}" in out
    assert asyncio.run(_claimable(db_path)) == [other]  # no worker will ever take it

    code, out, _ = _cairn(capsys, "jobs", "--json")
    assert [json.loads(line)["job_id"] for line in out.splitlines()] == [other]  # the cancelled one is done
    code, out, _ = _cairn(capsys, "jobs", "--all", "--json")
    states = {row["job_id"]: row["state"] for row in map(json.loads, out.splitlines())}
    assert states[poison] == "cancelled"

    code, _, err = _cairn(capsys, "jobs", "cancel", poison)
    assert code != 0 and "already finished (cancelled)" in err
    code, _, err = _cairn(capsys, "jobs", "cancel", "feedface")
    assert code != 0 and "no job 'feedface'" in err
    assert (home / "cairn.db").exists() == (engine == "sqlite")
