"""The server's real logging setup: `cairn serve` writes JSON lines to stderr, with no message text and
no user ids (hashed) unless CAIRN_LOG_CONTENT=true, checked on a real server answering a real request."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from store.credentials import CredentialStore, sign_user_context
from tests.conftest import ROOT, SAMPLE_ACCESS, copy_home

SECRET_WORDS = "zebracorn-budget"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_and_ask(home: Path) -> tuple[str, int]:
    _, secret = CredentialStore(home / "services.json", default_audience="cairn").add("helpdesk")
    port = free_port()
    env = {**os.environ, "CAIRN_HOME": str(home), "CAIRN_ACCESS_FILE": str(SAMPLE_ACCESS)}
    for name in ("QDRANT_URL", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "CAIRN_LOG_CONTENT"):
        env.pop(name, None)
    server = subprocess.Popen([sys.executable, "-c", "import sys; from bot.cli.main import main; sys.exit(main())",
                               "serve", "--port", str(port)], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        context = sign_user_context(credential=secret, service="helpdesk", user="bob", tenant="larkspur",
                                    audience="cairn")
        status = httpx.post(f"{base}/v1/retrieve", json={"query": f"What is the hotel limit for {SECRET_WORDS}?"},
                            headers={"Authorization": f"Bearer {secret}", "X-User-Context": context},
                            timeout=120).status_code
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            _, err = server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            _, err = server.communicate()
    return err, status


def test_the_server_logs_json_lines_without_message_text_or_user_ids(tmp_path: Path, handbook_template: Path) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    err, status = serve_and_ask(home)
    assert status == 200, err[-2000:]
    # Every line is one JSON object, but the start-up banner printed for the operator.
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("cairn serve: ")]
    assert [line for line in lines if not line.startswith("{")] == []
    records = [json.loads(line) for line in lines]
    [retrieve] = [r for r in records if r.get("event") == "api.retrieve"]
    assert retrieve["user"].startswith("u:") and retrieve["service"] == "helpdesk"
    assert SECRET_WORDS not in err and '"bob"' not in err
