"""Turn-trace retention, and the operator commands (kill switch, credentials, user contexts)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.services import Services
from store.credentials import CredentialStore, ServicePrincipal, hash_credential, verify_user_context
from store.db import iso
from store.retention import purge_old_turns

NOW = datetime(2026, 6, 1, tzinfo=UTC)


async def _turn(db, turn_id: str, age_days: float) -> None:
    await db.execute(
        "INSERT INTO turns (turn_id, session_id, user_id, tenant_id, question, created_at) VALUES (?,?,?,?,?,?)",
        (turn_id, "s", "U0BOB", "larkspur", "q", iso(NOW - timedelta(days=age_days))))


async def test_purge_removes_old_turns_but_keeps_those_an_open_escalation_needs(handbook: Services) -> None:
    db = handbook.db
    for turn_id, age in (("new", 1), ("edge", 89.9), ("old", 91), ("old-escalated", 120), ("old-closed", 120)):
        await _turn(db, turn_id, age)
    for esc, turn_id, status in (("e1", "old-escalated", "open"), ("e2", "old-closed", "resolved")):
        await db.execute("INSERT INTO escalations (escalation_id, session_id, turn_id, tenant_id, user_id, question,"
                         " reason, status, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
                         (esc, "s", turn_id, "larkspur", "U0BOB", "q", "below_score_floor", status, iso(NOW)))
    assert await purge_old_turns(db, older_than_days=90, now=NOW) == 2
    async with db.execute("SELECT turn_id FROM turns ORDER BY turn_id") as cur:
        assert [r[0] for r in await cur.fetchall()] == ["edge", "new", "old-escalated"]
    assert await purge_old_turns(db, older_than_days=90, now=NOW) == 0
    with pytest.raises(ValueError):
        await purge_old_turns(db, older_than_days=0, now=NOW)


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("CAIRN_HOME", str(home))
    for var in ("CAIRN_PAUSE", "CAIRN_SERVICE_CREDENTIAL", "CAIRN_SERVICES_FILE", "CAIRN_API_AUDIENCE"):
        monkeypatch.delenv(var, raising=False)
    return home


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_pause_unpause_and_controls_commands(cli_home: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    state = _json(capsys, ["pause", "tools", "--reason", "reindex", "--json"])
    tools = next(c for c in state["controls"] if c["kind"] == "tools")
    assert tools["paused"] and tools["source"] == "admin" and tools["reason"] == "reindex"
    assert next(c for c in _json(capsys, ["controls", "--json"])["controls"] if c["kind"] == "tools")["paused"]
    state = _json(capsys, ["unpause", "tools", "--json"])
    assert not any(c["paused"] for c in state["controls"])
    monkeypatch.setenv("CAIRN_PAUSE", "llm")
    state = _json(capsys, ["controls", "--json"])
    assert [c["source"] for c in state["controls"]] == ["env", None]


def test_credentials_add_prints_once_and_stores_only_the_hash(cli_home: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    added = _json(capsys, ["credentials", "add", "helpdesk", "--json"])
    secret = added["credential"]
    stored = (cli_home / "services.json").read_text()
    assert secret not in stored and hash_credential(secret) in stored
    listed = _json(capsys, ["credentials", "list", "--json"])
    assert listed["services"][0]["service"] == "helpdesk" and secret not in json.dumps(listed)
    assert CredentialStore(cli_home / "services.json").authenticate(secret).name == "helpdesk"
    assert main(["credentials", "add", "Bad Name!"]) == 2
    assert _json(capsys, ["credentials", "revoke", "helpdesk", "--json"])["revoked"] == 1
    assert main(["credentials", "revoke", "helpdesk"]) == 2


def test_context_sign_makes_a_context_the_server_accepts(cli_home: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = _json(capsys, ["credentials", "add", "helpdesk", "--json"])["credential"]
    monkeypatch.setenv("CAIRN_SERVICE_CREDENTIAL", secret)
    signed = _json(capsys, ["context", "sign", "--service", "helpdesk", "--user", "bob", "--tenant", "larkspur",
                            "--audience", "cairn", "--ttl", "300", "--json"])
    principal = CredentialStore(cli_home / "services.json").authenticate(secret)
    assert isinstance(principal, ServicePrincipal)
    context = verify_user_context(signed["context"], credential=secret, principal=principal, audience="cairn",
                                  max_ttl_s=900)
    assert (context.user, context.tenant, context.service) == ("bob", "larkspur", "helpdesk")
    assert main(["context", "sign", "--service", "helpdesk", "--user", "bob", "--tenant", "larkspur",
                 "--ttl", "100000"]) == 2
    monkeypatch.setenv("CAIRN_SERVICE_CREDENTIAL", "csk_wrong")
    assert main(["context", "sign", "--service", "helpdesk", "--user", "bob", "--tenant", "larkspur"]) == 2
