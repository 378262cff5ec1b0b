"""`cairn serve`: the real process loop in this process — server.json while it runs, Slack over HTTP
(signed) and over Socket Mode, the ingestion worker taking CLI hand-overs, a clean stop on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from bot import server as server_process
from bot.cli import serve as serve_command
from bot.cli.common import CommandError
from bot.cli.main import build_parser
from bot.services import running_server, server_file
from retrieval.embed import Embedder
from retrieval.ingest import DocumentOptions
from tests.bot.conftest import SIGNING_SECRET, TEAM, Cairn, sign
from tests.conftest import copy_home, make_settings
from tests.fake_slack import FakeSlack


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dm_event(text: str, ts: str) -> dict:
    return {"token": "legacy", "team_id": TEAM, "api_app_id": "A0CAIRN", "type": "event_callback",
            "event_id": f"Ev{ts}", "event_time": int(time.time()),
            "event": {"type": "message", "channel_type": "im", "user": "U0BOB", "channel": "D0BOB", "ts": ts,
                      "text": text, "team": TEAM}}


async def wait_healthy(client: httpx.AsyncClient, server: asyncio.Task) -> None:
    async with asyncio.timeout(120):
        while True:
            if server.done():
                server.result()  # raises what stopped it
                raise AssertionError("cairn serve stopped before it was healthy")
            try:
                if (await client.get("/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)


async def test_serve_http(tmp_path: Path, handbook_template: Path, embedder: Embedder, fake_slack: FakeSlack,
                          capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    settings = make_settings(home, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                             SLACK_API_URL=fake_slack.url, CAIRN_ESCALATION_CHANNEL="C0ESCALATE")
    port = free_port()
    args = build_parser().parse_args(["serve", "--http", "--port", str(port)])
    server = asyncio.create_task(args.handler(args, settings))
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        await wait_healthy(client, server)
        assert json.loads(server_file(settings).read_text()) == {"pid": os.getpid(), "port": port, "slack": "http"}
        assert running_server(settings) is not None

        body = json.dumps(dm_event("What is the per diem for meals?", "1699000001.000100"))
        assert (await client.post("/slack/events", content=body,
                                  headers={"Content-Type": "application/json", **sign(body)})).status_code == 200
        await fake_slack.wait_for("chat.update", lambda c: c.channel == "D0BOB" and "[1]" in c.text, within=60)
        bad = {"Content-Type": "application/json", **sign(body, secret="wrong")}
        assert (await client.post("/slack/events", content=body, headers=bad)).status_code == 401
        malformed = {"Content-Type": "application/json", **sign("{not json")}
        assert (await client.post("/slack/events", content="{not json", headers=malformed)).status_code == 400

        # The server owns the index: `cairn ingest` hands the file over and its worker publishes it.
        doc = tmp_path / "pets.md"
        doc.write_text("# Pets at work\n\nDogs are welcome in the Tokyo office on Fridays if they are "
                       "registered with facilities.\n", encoding="utf-8")
        ingest = build_parser().parse_args(["ingest", str(doc), "--tenant", "larkspur", "--json"])
        capsys.readouterr()
        assert await asyncio.wait_for(ingest.handler(ingest, settings), 120) == 0
        assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "published"

    os.kill(os.getpid(), signal.SIGTERM)  # serve's handler turns it into a clean stop
    await asyncio.wait_for(server, 60)
    assert not server_file(settings).exists()


async def test_serve_socket_mode(cairn: Cairn) -> None:
    settings = cairn.settings.model_copy(update={"slack_app_token": "xapp-test", "digest_channel": "C0DIGEST"})
    cairn.fake.reject_channel("C0DIGEST", "not_in_channel")
    stop = asyncio.Event()
    port = free_port()
    server = asyncio.create_task(server_process.run_server(settings, cairn.services, mode="socket",
                                                          host="127.0.0.1", port=port, stop=stop))
    try:
        await cairn.fake.wait_for("apps.connections.open")
        # The preflight at start found the digest channel the bot is not in, and says so on /readyz.
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            await wait_healthy(client, server)
            ready = (await client.get("/readyz")).json()
        assert any("C0DIGEST" in p and "/invite @Cairn" in p for p in ready["slack"]), ready
        envelope = await cairn.fake.send_socket_event(dm_event("What is the per diem for meals?",
                                                               "1699000002.000100"))
        await cairn.fake.wait_for("socket_ack", lambda c: c.params.get("envelope_id") == envelope)
        answer = await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0BOB" and "[1]" in c.text,
                                           within=60)
        assert answer.token == "xoxb-test"
    finally:
        stop.set()
        await asyncio.wait_for(server, 60)


async def test_a_restarted_server_resumes_a_job_its_crashed_predecessor_left_running_at_once(
        cairn: Cairn) -> None:
    services = cairn.services
    submitted = await services.ingestor.submit_bytes(
        b"# Pets at work\n\nDogs are welcome in the Tokyo office on Fridays if they are registered.\n",
        filename="pets.md", doc_id="ops/pets", options=DocumentOptions(tenant_id="larkspur"))
    # The real worker dies mid-job (as the process would): the row stays "embedding", leased for minutes.
    worker: asyncio.Task[None]

    def die_while_embedding(job: object, state: str) -> None:
        if state == "embedding":
            worker.cancel()

    worker = asyncio.create_task(server_process.ingestion_worker(services, notifier=die_while_embedding))  # type: ignore[arg-type]
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(worker, 60)
    left = await services.jobs.get(job_id=submitted.job_id)
    assert (left.state, left.attempts) == ("embedding", 1)
    assert await services.jobs.claim_next() is None  # the dead worker's lease holds it

    await cairn.restart()  # a new process over the same CAIRN_HOME
    stop = asyncio.Event()
    server = asyncio.create_task(server_process.run_server(cairn.settings, cairn.services, mode=None,
                                                          host="127.0.0.1", port=free_port(), stop=stop))
    try:
        async with asyncio.timeout(60):  # the lease had ten minutes to run
            while (job := await cairn.services.jobs.get(job_id=submitted.job_id)).state != "published":
                assert not server.done(), server
                await asyncio.sleep(0.1)
        assert (job.attempts, job.version) == (2, "v1")
        doc = await cairn.services.catalog.get_document(tenant_id="larkspur", doc_id="ops/pets")
        assert (doc.status, doc.current_version) == ("active", "v1")
    finally:
        stop.set()
        await asyncio.wait_for(server, 60)


def test_serve_refuses_a_mode_without_its_credentials(tmp_path: Path) -> None:
    parser = build_parser()
    no_slack = make_settings(tmp_path)
    assert serve_command.slack_mode(parser.parse_args(["serve"]), no_slack) is None  # HTTP API only
    with pytest.raises(CommandError, match="SLACK_BOT_TOKEN"):
        serve_command.slack_mode(parser.parse_args(["serve", "--socket"]), no_slack)
    bot_only = make_settings(tmp_path, SLACK_BOT_TOKEN="xoxb-test")
    with pytest.raises(CommandError, match="SLACK_APP_TOKEN"):
        serve_command.slack_mode(parser.parse_args(["serve", "--socket"]), bot_only)
    with pytest.raises(CommandError, match="SLACK_SIGNING_SECRET"):
        serve_command.slack_mode(parser.parse_args(["serve", "--http"]), bot_only)
    both = make_settings(tmp_path, SLACK_BOT_TOKEN="xoxb-test", SLACK_APP_TOKEN="xapp-test")
    assert serve_command.slack_mode(parser.parse_args(["serve"]), both) == "socket"


def test_a_busy_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(server_process.ServeError, match="cannot listen"):
            server_process.bind("127.0.0.1", taken.getsockname()[1])


def closed_port_url() -> str:
    """A local Web API base URL nothing listens on: every Slack call is refused at once."""
    return f"http://127.0.0.1:{free_port()}/api/"


async def test_serve_http_keeps_serving_while_slack_is_unreachable(
        tmp_path: Path, handbook_template: Path, embedder: Embedder) -> None:
    from bot.checks import Check
    from store.credentials import CredentialStore, sign_user_context

    home = tmp_path / "home"
    copy_home(handbook_template, home)
    settings = make_settings(home, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                             SLACK_API_URL=closed_port_url(), CAIRN_ESCALATION_CHANNEL="C0ESCALATE")
    secret = CredentialStore(settings.services_path, default_audience="cairn").add("helpdesk")[1]
    context = sign_user_context(credential=secret, service="helpdesk", user="bob", tenant="larkspur",
                                audience="cairn", ttl_s=300)
    attempts: list[list[Check]] = []
    retried = asyncio.Event()
    checks = server_process.slack_checks

    async def counted(*args: object, **kwargs: object) -> list[Check]:
        found = await checks(*args, **kwargs)  # type: ignore[arg-type]
        attempts.append(found)
        if len(attempts) >= 2:
            retried.set()
        return found

    port = free_port()
    args = build_parser().parse_args(["serve", "--http", "--port", str(port)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_process, "SLACK_RETRY_FIRST_S", 0.2)
        patch.setattr(server_process, "slack_checks", counted)
        server = asyncio.create_task(args.handler(args, settings))
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                await wait_healthy(client, server)
                # Slack is tried again, with backoff, while everything else runs.
                await asyncio.wait_for(retried.wait(), 60)
                assert all(any(c.name == "slack" and c.status == "fail" for c in found) for found in attempts[:2])
                ready = (await client.get("/readyz")).json()
                assert any(p.startswith("slack: cannot reach the Slack Web API") for p in ready["slack"]), ready
                found = await client.post("/v1/retrieve", json={"query": "What is the hotel limit in Boston?"},
                                          headers={"Authorization": f"Bearer {secret}", "X-User-Context": context})
                assert found.status_code == 200, found.text
                assert found.json()["passages"], found.json()
                assert not server.done()
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(server, 60)
    assert not server_file(settings).exists()


async def test_socket_mode_is_retried_until_slack_lets_it_connect(cairn: Cairn) -> None:
    settings = cairn.settings.model_copy(update={"slack_app_token": "xapp-test"})
    cairn.fake.fail_next("apps.connections.open", error="internal_error", times=2)
    stop = asyncio.Event()
    port = free_port()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_process, "SLACK_RETRY_FIRST_S", 0.1)
        server = asyncio.create_task(server_process.run_server(settings, cairn.services, mode="socket",
                                                              host="127.0.0.1", port=port, stop=stop))
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                await wait_healthy(client, server)
                # Two refusals, then the third attempt connects; the server served all along.
                await cairn.fake.wait_for("apps.connections.open", count=3, within=60)
                assert (await client.get("/healthz")).status_code == 200
            envelope = await cairn.fake.send_socket_event(dm_event("hello", "1699000003.000100"))
            await cairn.fake.wait_for("socket_ack", lambda c: c.params.get("envelope_id") == envelope)
        finally:
            stop.set()
            await asyncio.wait_for(server, 60)
