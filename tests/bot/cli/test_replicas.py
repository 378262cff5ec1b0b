"""`cairn serve` replicas on one PostgreSQL database: three over HTTP, as behind a load balancer, and
two in Socket Mode, a connection each.

Each replica is a process of its own with a home of its own. The state (sessions, Slack event ids,
escalations, relays, the graph's checkpoints) is the one database they share. The index is either a
copy of the same ingested handbook in each home (embedded Qdrant Edge is owned by one process), or,
where `QDRANT_URL` reaches a Qdrant server, one collection on it that all replicas read (skipped,
with that reason, where none does: no Qdrant server can be installed where this suite usually runs).

The fake Slack sends every question to one replica and Slack's retry of it to another; an escalation's
admin reply goes to a third and again to the first; every replica's scheduler finds the week's digest
due a minute after it starts. Each question is answered once, each reply is relayed once, the digest is
posted once. In Socket Mode, Slack sends each event to one connection and its retry to the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from bot.services import open_services
from bot.slack.views import PLACEHOLDER_TEXT
from retrieval.embed import Embedder
from tests.bot.cli.test_serve import free_port
from tests.bot.conftest import ACCESS_USERS, ADMIN, BOB, ESCALATION_CHANNEL, SIGNING_SECRET, TEAM, sign
from tests.conftest import ROOT, SAMPLE_ACCESS, ingest_sample, make_settings, serving
from tests.escalations.slack_files import FakeSlackWithFiles
from tests.fake_slack import FakeSlack

REPLICAS = 3
QUESTIONS = ["What is the nightly hotel limit in London?", "What is the per diem for meals?",
             "How many days of annual leave do I get?", "Can I expense a taxi to the airport?",
             "How do I report a lost laptop?"]
ASKED = 50  # from the ten people of the access file, five each (under the per-person rate limit)
ASKERS = sorted(ACCESS_USERS)
DIGEST_CHANNEL = "C0DIGEST"
ESCALATING = "What is our policy on bringing pets to the Tokyo office?"  # in no document: it escalates
QDRANT_SERVER = os.environ.get("QDRANT_URL", "")
SOCKET_ASKED = 20


def _event(text: str, *, ts: str, user: str = BOB, channel: str = "D0BOB", channel_type: str = "im",
           thread_ts: str | None = None, parent_user_id: str | None = None, event_id: str) -> str:
    event = {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
             "channel_type": channel_type, "team": TEAM}
    if thread_ts:
        event["thread_ts"] = thread_ts
    if parent_user_id:  # Slack names the thread root's author on a reply
        event["parent_user_id"] = parent_user_id
    return json.dumps({"token": "legacy", "team_id": TEAM, "api_app_id": "A0CAIRN", "type": "event_callback",
                       "event_id": event_id, "event_time": int(time.time()), "event": event})


async def _deliver(client: httpx.AsyncClient, body: str, *, retry: int | None = None) -> None:
    headers = {"Content-Type": "application/json", **sign(body)}
    if retry:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    response = await client.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 200, response.text


@contextlib.asynccontextmanager
async def replicas(homes: list[Path], database_url: str, fake: FakeSlack, index: dict[str, str], *,
                   mode: str = "http") -> AsyncIterator[list[httpx.AsyncClient]]:
    """`cairn serve --http` (or `--socket`: a Socket Mode connection each) in a process per home, all on
    `database_url` (and on the Qdrant server and collection `index` names, if any); a client for each,
    once healthy."""
    processes, clients = [], []
    due = datetime.now(UTC) - timedelta(hours=1)  # the digest's time an hour ago: due, and caught up at start
    try:
        for home in homes:
            port = free_port()
            env = {**os.environ, "CAIRN_HOME": str(home), "CAIRN_ACCESS_FILE": str(SAMPLE_ACCESS),
                   "CAIRN_DATABASE_URL": database_url, "SLACK_BOT_TOKEN": "xoxb-test",
                   "SLACK_SIGNING_SECRET": SIGNING_SECRET, "SLACK_API_URL": fake.url,
                   "CAIRN_ESCALATION_CHANNEL": ESCALATION_CHANNEL, "HF_HUB_OFFLINE": "1",
                   "CAIRN_DIGEST_CHANNEL": DIGEST_CHANNEL, "CAIRN_TIMEZONE": "UTC",
                   "CAIRN_DIGEST_DAY": due.strftime("%a").lower(), "CAIRN_DIGEST_TIME": due.strftime("%H:%M")}
            for name in ("QDRANT_URL", "QDRANT_COLLECTION", "CAIRN_CHAT_MODEL", "SLACK_APP_TOKEN"):
                env.pop(name, None)
            env.update(index)
            if mode == "socket":
                env["SLACK_APP_TOKEN"] = "xapp-test"
            log = (home.parent / f"{home.name}.log").open("wb")
            processes.append(await asyncio.create_subprocess_exec(
                sys.executable, "-c", "import sys; from bot.cli.main import main; sys.exit(main())",
                "serve", f"--{mode}", "--port", str(port), cwd=ROOT, env=env, stdout=log, stderr=log))
            clients.append(httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60))
        async with asyncio.timeout(240):
            for process, client, home in zip(processes, clients, homes, strict=True):
                while True:
                    if process.returncode is not None:
                        raise AssertionError((home.parent / f"{home.name}.log").read_text(errors="replace")[-3000:])
                    with contextlib.suppress(httpx.TransportError):
                        if (await client.get("/healthz")).status_code == 200:
                            break
                    await asyncio.sleep(0.2)
        yield clients
    finally:
        for client in clients:
            await client.aclose()
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                await asyncio.wait_for(process.wait(), 60)
            except TimeoutError:
                process.kill()
                await process.wait()


def _dm(user: str) -> str:
    return "D" + user.removeprefix("U")


def _bot_messages(fake: FakeSlack, channel: str, thread_ts: str) -> list[dict]:
    return [m for m in fake.messages.get(channel, {}).values() if m.get("thread_ts") == thread_ts]


async def _settled(fake: FakeSlack, asked: list[tuple[str, str]], *, within: float) -> None:
    """Until every question's thread holds a bot message that is no longer the placeholder."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(any(m.get("text") != PLACEHOLDER_TEXT for m in _bot_messages(fake, channel, ts))
               for channel, ts in asked):
            return
        await asyncio.sleep(0.25)


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlackWithFiles]:
    """The fake Web API with file uploads (the digest's chart), knowing the access file's people."""
    fake = FakeSlackWithFiles(team_id=TEAM)
    for user_id, name in ACCESS_USERS.items():
        fake.add_user(user_id, name=name)
    async with serving(fake):
        yield fake


@pytest.mark.parametrize("index", ["copies", pytest.param("server", marks=pytest.mark.skipif(
    not QDRANT_SERVER.startswith(("http://", "https://")),
    reason="QDRANT_URL reaches no Qdrant server here: the replicas share an index only through one"))])
async def test_three_replicas_answer_each_question_once_relay_each_reply_once_and_post_one_digest(
        tmp_path: Path, embedder: Embedder, fake_slack: FakeSlackWithFiles, pg_database_url: str, index: str) -> None:
    shared = ({"QDRANT_URL": QDRANT_SERVER, "QDRANT_COLLECTION": f"cairn_replicas_{uuid.uuid4().hex[:12]}"}
              if index == "server" else {})
    first = tmp_path / "replica-0"
    async with open_services(make_settings(first, CAIRN_DATABASE_URL=pg_database_url, QDRANT_URL=shared.get("QDRANT_URL"),
                                           QDRANT_COLLECTION=shared.get("QDRANT_COLLECTION", "cairn")),
                             embedder=embedder) as svc:
        await ingest_sample(svc)
    homes = [first, *(tmp_path / f"replica-{n}" for n in range(1, REPLICAS))]
    for home in homes[1:]:
        if not shared:
            shutil.copytree(first, home)  # the same index in each home; the state stays in the one database

    async with replicas(homes, pg_database_url, fake_slack, shared) as clients:
        asked = []
        for n in range(ASKED):
            ts, user = f"1700000{n:03d}.000100", ASKERS[n % len(ASKERS)]
            body = _event(QUESTIONS[n % len(QUESTIONS)], ts=ts, user=user, channel=_dm(user), event_id=f"EvQ{n:03d}")
            # Slack delivers to one replica, then retries on another before the first ack reaches it.
            await asyncio.gather(_deliver(clients[n % REPLICAS], body),
                                 _deliver(clients[(n + 1) % REPLICAS], body, retry=1))
            asked.append((_dm(user), ts))
        escalated_ts = "1700001000.000100"
        await _deliver(clients[0], _event(ESCALATING, ts=escalated_ts, event_id="EvCat"))
        await fake_slack.wait_for("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL, within=120)
        thread = next(iter(fake_slack.messages[ESCALATION_CHANNEL]))  # the escalation thread's root
        reply = _event("Only certified assistance dogs are allowed in the Tokyo office.", ts="1700002000.000100",
                       user=ADMIN, channel=ESCALATION_CHANNEL, channel_type="channel", thread_ts=thread,
                       parent_user_id=fake_slack.bot_user_id, event_id="EvAdmin")
        await asyncio.gather(_deliver(clients[2], reply), _deliver(clients[0], reply, retry=1))
        await fake_slack.wait_for("chat.postMessage", lambda c: c.channel == "D0BOB"
                                  and "certified assistance dogs" in c.text, within=120)
        await _settled(fake_slack, asked, within=300)
        await fake_slack.wait_for("chat.postMessage", lambda c: c.channel == DIGEST_CHANNEL, within=180)
        await asyncio.sleep(5)  # a second answer, relay or digest, were there one, would land by now

    for channel, ts in asked:
        messages = _bot_messages(fake_slack, channel, ts)
        assert len(messages) == 1, (channel, ts, messages)  # one answer, not one per replica
        assert messages[0]["text"] != PLACEHOLDER_TEXT, (channel, ts, messages)
    relays = [m for m in _bot_messages(fake_slack, "D0BOB", escalated_ts) if "certified assistance dogs" in m["text"]]
    assert len(relays) == 1, relays
    assert len(fake_slack.calls_to("chat.postMessage", lambda c: c.channel == ESCALATION_CHANNEL
                                   and not c.thread_ts)) == 1  # one escalation thread
    assert len(fake_slack.calls_to("chat.postMessage", lambda c: c.channel == DIGEST_CHANNEL
                                   and not c.thread_ts)) == 1  # one digest, not one per replica


async def test_socket_mode_replicas_answer_a_question_slack_sends_to_each_connection_once(
        tmp_path: Path, embedder: Embedder, fake_slack: FakeSlackWithFiles, pg_database_url: str) -> None:
    """Two replicas in Socket Mode, a connection each: Slack sends every event to one connection, and
    its retry of it to the other before the first acknowledgement counted; each is answered once."""
    first = tmp_path / "replica-0"
    async with open_services(make_settings(first, CAIRN_DATABASE_URL=pg_database_url, QDRANT_URL=None),
                             embedder=embedder) as svc:
        await ingest_sample(svc)
    shutil.copytree(first, tmp_path / "replica-1")
    asked = []
    async with replicas([first, tmp_path / "replica-1"], pg_database_url, fake_slack, {}, mode="socket"):
        await fake_slack.wait_for("socket_open", count=2, within=120)
        for n in range(SOCKET_ASKED):
            ts, user = f"1700003{n:03d}.000100", ASKERS[n % len(ASKERS)]
            body = json.loads(_event(QUESTIONS[n % len(QUESTIONS)], ts=ts, user=user, channel=_dm(user),
                                     event_id=f"EvS{n:03d}"))
            await fake_slack.send_socket_event(body, connection=n % 2)
            await fake_slack.send_socket_event(body, connection=(n + 1) % 2, retry_attempt=1)
            asked.append((_dm(user), ts))
        await _settled(fake_slack, asked, within=300)
        await asyncio.sleep(5)  # a second answer, were there one, would land by now

    for channel, ts in asked:
        messages = _bot_messages(fake_slack, channel, ts)
        assert len(messages) == 1, (channel, ts, messages)
        assert messages[0]["text"] != PLACEHOLDER_TEXT, (channel, ts, messages)
    assert len(fake_slack.calls_to("socket_ack")) == 2 * SOCKET_ASKED  # every delivery acknowledged
