"""Cairn's Slack app under test: a copy of the ingested handbook, the fake Web API (tests/fake_slack.py)
and signed requests into the real HTTP app (`/slack/events`, mounted exactly as `cairn serve --http`
does). Only the network edge is fake."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from bot.server import build_http
from bot.services import Services, open_services
from bot.settings import Settings
from bot.slack.app import create_app
from bot.slack.context import WorkTracker
from retrieval.embed import Embedder
from tests.conftest import copy_home, make_settings, serving
from tests.fake_slack import FakeSlack
from tests.slack_rules import slack_encoded

SIGNING_SECRET = "secret"
TEAM = "T0LARKSPUR"
ESCALATION_CHANNEL = "C0ESCALATE"
ADMIN = "U0ADMIN"
BOB = "U0BOB"

# Everyone in sample/access.yml, as Slack knows them.
ACCESS_USERS = {"U0BOB": "bob", "U0ALICE": "alice", "U0ERIN": "erin", "U0HANA": "hana", "U0IVAN": "ivan",
                "U0ADMIN": "adam", "U0OLIVIA": "olivia", "U0EVAN": "evan", "U0RITA": "rita", "U0CARLA": "carla"}


def sign(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    """Slack's v0 request signature: HMAC-SHA256 of `v0:{timestamp}:{body}` with the signing secret."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}


class Cairn:
    """Drives the app the way Slack does: signed event callbacks, block actions and slash commands."""

    def __init__(self, *, home: Path, fake: FakeSlack, embedder: Embedder, overrides: dict[str, object]) -> None:
        self.home, self.fake, self.embedder, self.overrides = home, fake, embedder, overrides
        self._ids = itertools.count(1)
        self._ts = itertools.count(1)
        self._stack: AsyncExitStack | None = None
        self.settings: Settings
        self.services: Services
        self.work: WorkTracker
        self.http: httpx.AsyncClient

    async def open(self) -> Cairn:
        self.settings = make_settings(self.home, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING_SECRET,
                                      SLACK_API_URL=self.fake.url, CAIRN_ESCALATION_CHANNEL=ESCALATION_CHANNEL,
                                      **self.overrides)
        self._stack = AsyncExitStack()
        self.services = await self._stack.enter_async_context(open_services(self.settings, embedder=self.embedder))
        self.work = WorkTracker()
        app = create_app(self.settings, self.services, work=self.work)
        transport = httpx.ASGITransport(app=build_http(self.services, app))
        self.http = await self._stack.enter_async_context(
            httpx.AsyncClient(transport=transport, base_url="http://cairn.test"))
        return self

    async def close(self) -> None:
        await self.settle()
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None

    async def restart(self) -> None:
        """A new process over the same CAIRN_HOME: nothing survives but SQLite (and the index)."""
        await self.close()
        await self.open()

    async def settle(self) -> None:
        """Wait (up to a minute) until every lazy listener started so far has finished."""
        async with asyncio.timeout(60):
            for _ in range(3):
                await asyncio.sleep(0.05)
                await self.work.wait_idle()

    # -- requests ----------------------------------------------------------------------------------

    def new_ts(self) -> str:
        return f"1699999{next(self._ts):03d}.000200"

    async def post(self, body: str, *, content_type: str, headers: dict[str, str] | None = None,
                   signed: bool = True, timestamp: int | None = None, secret: str = SIGNING_SECRET) -> httpx.Response:
        all_headers = {"Content-Type": content_type, **(sign(body, secret=secret, timestamp=timestamp) if signed else {}),
                       **(headers or {})}
        return await self.http.post("/slack/events", content=body, headers=all_headers)

    async def event(self, event: dict[str, Any], *, event_id: str | None = None, retry_num: int | None = None,
                    team_id: str = TEAM, **kw: Any) -> httpx.Response:
        body = json.dumps({"token": "legacy", "team_id": team_id, "api_app_id": "A0CAIRN", "event": event,
                           "type": "event_callback", "event_id": event_id or f"Ev{next(self._ids):06d}",
                           "event_time": int(time.time()),
                           "authorizations": [{"team_id": team_id, "user_id": self.fake.bot_user_id,
                                               "is_bot": True, "is_enterprise_install": False}]})
        headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"} if retry_num else None
        return await self.post(body, content_type="application/json", headers=headers, **kw)

    def message(self, text: str, *, user: str = BOB, channel: str = "D0BOB", channel_type: str = "im",
                thread_ts: str | None = None, ts: str | None = None, **extra: Any) -> dict[str, Any]:
        event = {"type": "message", "user": user, "text": slack_encoded(text), "ts": ts or self.new_ts(),
                 "channel": channel,
                 "channel_type": channel_type, "team": TEAM, "event_ts": ts, **extra}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return event

    def mention(self, text: str, *, user: str = BOB, channel: str = "C0GENERAL", thread_ts: str | None = None,
                ts: str | None = None, **extra: Any) -> dict[str, Any]:
        event = {"type": "app_mention", "user": user, "text": slack_encoded(f"<@{self.fake.bot_user_id}> {text}"),
                 "ts": ts or self.new_ts(), "channel": channel, "team": TEAM, **extra}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return event

    async def click(self, action_id: str, value: str, *, user: str, channel: str, message_ts: str,
                    thread_ts: str | None = None, **kw: Any) -> httpx.Response:
        payload = {
            "type": "block_actions", "team": {"id": TEAM, "domain": "larkspur"},
            "user": {"id": user, "username": ACCESS_USERS.get(user, user), "team_id": TEAM},
            "api_app_id": "A0CAIRN", "token": "legacy", "trigger_id": f"trig-{next(self._ids)}",
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
            "channel": {"id": channel, "name": "channel"},
            "message": {"type": "message", "ts": message_ts, "text": "", **({"thread_ts": thread_ts} if thread_ts else {})},
            "response_url": self.fake.response_url(),
            "actions": [{"action_id": action_id, "block_id": "b", "type": "button", "value": value,
                         "action_ts": str(time.time())}]}
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, content_type="application/x-www-form-urlencoded", **kw)

    async def interact(self, payload: dict[str, Any], *, user: str = BOB, **kw: Any) -> httpx.Response:
        """Any interactive payload (view_submission, block_suggestion, shortcut…), as Slack posts it."""
        payload = {"team": {"id": TEAM, "domain": "larkspur"}, "api_app_id": "A0CAIRN", "token": "legacy",
                   "user": {"id": user, "username": ACCESS_USERS.get(user, user), "team_id": TEAM}, **payload}
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, content_type="application/x-www-form-urlencoded", **kw)

    async def command(self, text: str, *, user: str = BOB, channel: str = "C0GENERAL") -> httpx.Response:
        body = urlencode({"token": "legacy", "team_id": TEAM, "team_domain": "larkspur", "channel_id": channel,
                          "channel_name": "general", "user_id": user, "user_name": ACCESS_USERS.get(user, user),
                          "command": "/cairn", "text": slack_encoded(text), "api_app_id": "A0CAIRN",
                          "response_url": self.fake.response_url(), "trigger_id": f"trig-{next(self._ids)}"})
        return await self.post(body, content_type="application/x-www-form-urlencoded")


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack(team_id=TEAM)
    for user_id, name in ACCESS_USERS.items():
        fake.add_user(user_id, name=name)
    fake.usergroups.update({"S0FINANCE": [], "S0HR": [], "S0ENG": [], "S0EVENTS": [], "S0EXEC": []})
    async with serving(fake):
        yield fake


@pytest.fixture
def slack_settings() -> dict[str, object]:
    """Settings overrides for the app under test (a test may replace it with its own fixture)."""
    return {}


@pytest.fixture
async def cairn(tmp_path: Path, handbook_template: Path, embedder: Embedder, fake_slack: FakeSlack,
                slack_settings: dict[str, object]) -> AsyncIterator[Cairn]:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    driver = await Cairn(home=home, fake=fake_slack, embedder=embedder, overrides=slack_settings).open()
    try:
        yield driver
    finally:
        await driver.close()
