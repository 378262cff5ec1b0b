"""A real local HTTP server standing in for the Slack Web API (SLACK_API_URL), as bolt-python's own
tests/mock_web_api_server does: it records every call and answers the methods Cairn uses.

    fake = FakeSlack()
    await fake.start()                       # http://127.0.0.1:<port>/api/
    settings = make_settings(home, SLACK_API_URL=fake.url, ...)
    call = await fake.wait_for("chat.update", lambda c: "[1]" in c.text)
    await fake.stop()

Messages posted are kept per channel, so chat.update, conversations.replies, conversations.history
(newest first, paged with a cursor; a message's `metadata` only with include_all_metadata, as Slack
does) and chat.getPermalink behave like Slack's. Message ts count up from `ts_base` (a Unix time). Failures can be injected per method (`fail_next`) or per channel
(`reject_channel`), including 429 with Retry-After for the retry handlers. Files added with
`add_file` are described by files.info and downloadable from `url_private_download` on this server,
with the bot token only (without it, like Slack, a sign-in page comes back). Like Slack it refuses a
method the manifest's scopes do not cover (`missing_scope`) and blocks over Block Kit's limits
(`invalid_blocks`); tests/slack_rules.py:slack_encoded is how it would have encoded a person's text.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from tests.slack_rules import manifest_scopes, message_problems, missing_scope, view_problems


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None = None

    @property
    def text(self) -> str:
        """Everything a person would read: the `text` and every text inside the blocks."""
        parts = [str(self.params.get("text") or "")]
        blocks = self.params.get("blocks")
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        parts.extend(_texts(blocks or []))
        parts.extend(_texts(self.params.get("view") or {}))
        return "\n".join(parts)

    @property
    def channel(self) -> str | None:
        return self.params.get("channel")

    @property
    def thread_ts(self) -> str | None:
        return self.params.get("thread_ts")

    def action_ids(self) -> list[str]:
        blocks = self.params.get("blocks") or []
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        return [e.get("action_id") for b in blocks if b.get("type") == "actions" for e in b.get("elements", [])]


def _texts(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                out.append(value)
            else:
                out.extend(_texts(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(_texts(item))
    return out


@dataclass
class Failure:
    status: int = 200
    error: str = "internal_error"
    headers: dict[str, str] = field(default_factory=dict)


class FakeSlack:
    def __init__(self, *, team_id: str = "T0LARKSPUR", bot_user_id: str = "U0CAIRN", bot_id: str = "B0CAIRN",
                 domain: str = "larkspur") -> None:
        self.team_id, self.bot_user_id, self.bot_id, self.domain = team_id, bot_user_id, bot_id, domain
        self.calls: list[Call] = []
        self.users: dict[str, dict[str, Any]] = {}
        self.usergroups: dict[str, list[str]] = {}
        self.messages: dict[str, dict[str, dict[str, Any]]] = {}  # channel → ts → message
        self.rejected_channels: dict[str, str] = {}
        self.slow_channels: dict[str, float] = {}
        self.scopes: frozenset[str] = manifest_scopes()  # what installing manifest.yml grants the bot
        self.channels: dict[str, dict[str, Any]] = {}  # conversations.info overrides (default: by the id's letter)
        self.members: dict[str, list[str]] = {}  # conversations.members
        self.files: dict[str, dict[str, Any]] = {}  # file id → files.info entry plus "data"/"download_status"
        self._views = itertools.count(1)
        self._failures: dict[str, list[Failure]] = {}
        self._ts = itertools.count(1)
        self.ts_base = 1_700_000_000  # the first message is 1700000001.000100; set it to place messages in time
        self._changed = asyncio.Condition()
        self._socket_envelopes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()  # for whichever connection
        self.socket_connections: list[asyncio.Queue[dict[str, Any]]] = []  # each connection's own, in order
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle)
        app.router.add_route("POST", "/response/{key}", self._response_url)
        app.router.add_get("/socket", self._socket_mode)
        app.router.add_get("/files-pri/{file_id}/{name}", self._download)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, key: str = "r1") -> str:
        return f"http://127.0.0.1:{self.port}/response/{key}"

    # -- configuration -----------------------------------------------------------------------------

    def add_user(self, user_id: str, *, name: str | None = None, team_id: str | None = None,
                 is_restricted: bool = False, is_ultra_restricted: bool = False, is_stranger: bool = False,
                 is_bot: bool = False) -> None:
        name = name or user_id.lower()
        self.users[user_id] = {
            "id": user_id, "team_id": team_id or self.team_id, "name": name, "real_name": name.title(),
            "is_restricted": is_restricted, "is_ultra_restricted": is_ultra_restricted, "is_bot": is_bot,
            "profile": {"display_name": name.title(), "real_name": name.title()},
            **({"is_stranger": True} if is_stranger else {})}

    def fail_next(self, method: str, *, error: str = "internal_error", status: int = 200, times: int = 1,
                  headers: dict[str, str] | None = None) -> None:
        """The next `times` calls of `method` fail (status 429 + Retry-After exercises the retry handler)."""
        self._failures.setdefault(method, []).extend(
            Failure(status=status, error=error, headers=headers or {}) for _ in range(times))

    def reject_channel(self, channel: str, error: str = "not_in_channel") -> None:
        self.rejected_channels[channel] = error

    def slow_channel(self, channel: str, seconds: float) -> None:
        """A post in `channel` shows there at once and is answered `seconds` later (a slow or distant
        caller: people in the channel can reply under it before its poster knows its ts)."""
        self.slow_channels[channel] = seconds

    def add_file(self, file_id: str, name: str, data: bytes, *, filetype: str | None = None,
                 size: int | None = None, download_status: int = 200, user: str | None = None) -> None:
        """A file someone shared: files.info describes it, its url_private_download serves `data`."""
        self.files[file_id] = {
            "id": file_id, "name": name, "title": name, "size": len(data) if size is None else size,
            "filetype": filetype or name.rsplit(".", 1)[-1], "mimetype": "application/octet-stream",
            "user": user, "data": data, "download_status": download_status}

    # -- inspection --------------------------------------------------------------------------------

    def calls_to(self, method: str, predicate: Callable[[Call], bool] | None = None) -> list[Call]:
        return [c for c in self.calls if c.method == method and (predicate is None or predicate(c))]

    def posts_in(self, channel: str, thread_ts: str | None = None) -> list[Call]:
        """chat.postMessage and chat.update calls that landed in a channel (and thread)."""
        out = []
        for c in self.calls:
            if c.method not in ("chat.postMessage", "chat.update") or c.channel != channel:
                continue
            if thread_ts is not None:
                ts = c.thread_ts if c.method == "chat.postMessage" else self._thread_of(channel, c.params.get("ts"))
                if ts != thread_ts:
                    continue
            out.append(c)
        return out

    def _thread_of(self, channel: str, ts: str | None) -> str | None:
        msg = self.messages.get(channel, {}).get(str(ts))
        return (msg or {}).get("thread_ts") or ts

    async def wait_for(self, method: str, predicate: Callable[[Call], bool] | None = None, *,
                       within: float = 20.0, count: int = 1) -> Call:
        """The `count`-th call of `method` matching `predicate`, waiting up to `within` seconds."""
        async def ready() -> Call:
            async with self._changed:
                while True:
                    found = self.calls_to(method, predicate)
                    if len(found) >= count:
                        return found[count - 1]
                    await self._changed.wait()
        try:
            return await asyncio.wait_for(ready(), within)
        except TimeoutError:
            seen = "\n".join(f"  {c.method} {json.dumps(c.params, default=str)[:300]}" for c in self.calls)
            raise AssertionError(f"no {method} call (#{count}) matched within {within}s; calls:\n{seen}") from None

    # -- the server --------------------------------------------------------------------------------

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            raw = await request.read()
            ctype = request.headers.get("Content-Type", "")
            if "json" in ctype:
                params.update(json.loads(raw or b"{}"))
            elif raw:
                params.update(dict(parse_qsl(raw.decode())))
        return params

    async def _record(self, call: Call) -> None:
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()

    async def _response_url(self, request: web.Request) -> web.Response:
        await self._record(Call("response_url", await self._params(request)))
        return web.Response(text="ok")

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.get("token")
        await self._record(Call(method, params, token))
        queued = self._failures.get(method)
        if queued:
            failure = queued.pop(0)
            return web.json_response({"ok": False, "error": failure.error}, status=failure.status,
                                     headers=failure.headers)
        if not token:
            return web.json_response({"ok": False, "error": "not_authed"})
        refusal = missing_scope(method, self.scopes) or self._block_refusal(method, params)
        if refusal is not None:
            return web.json_response(refusal)
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        body: dict[str, Any] = handler(params) if handler else {"ok": True}
        if method == "chat.postMessage" and body.get("channel") in self.slow_channels:
            await asyncio.sleep(self.slow_channels[body["channel"]])
        return web.json_response(body, headers={"x-oauth-scopes": ",".join(sorted(self.scopes))})

    @staticmethod
    def _block_refusal(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """Block Kit's limits, as Slack checks them before posting anything."""
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            return message_problems(params)
        if method in ("views.publish", "views.open", "views.update"):
            view = params.get("view") or {}
            return view_problems(json.loads(view) if isinstance(view, str) else view)
        return None

    def _next_ts(self) -> str:
        return f"{self.ts_base + next(self._ts)}.000100"

    # -- methods -----------------------------------------------------------------------------------

    def _m_apps_connections_open(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    # -- Socket Mode: a WebSocket that says hello, pushes envelopes, and records the acks ------------

    async def send_socket_event(self, body: dict[str, Any], *, envelope_type: str = "events_api",
                                connection: int | None = None, retry_attempt: int = 0) -> str:
        """Push an envelope to one open connection: the `connection`-th to have opened, or whichever
        takes it first. A retry (`retry_attempt` > 0) is the same payload again, as Slack sends it to
        any of an app's connections when the first was not acknowledged in time."""
        envelope_id = f"env-{next(self._ts)}"
        queue = self._socket_envelopes if connection is None else self.socket_connections[connection]
        await queue.put({"envelope_id": envelope_id, "type": envelope_type, "payload": body,
                         "accepts_response_payload": envelope_type != "events_api",
                         "retry_attempt": retry_attempt, "retry_reason": "timeout" if retry_attempt else ""})
        return envelope_id

    async def _socket_mode(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "num_connections": 1,
                            "connection_info": {"app_id": "A0CAIRN"}, "debug_info": {"host": "fake"}})

        own: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.socket_connections.append(own)

        async def push(queue: asyncio.Queue[dict[str, Any]]) -> None:
            while True:
                await ws.send_json(await queue.get())

        pushers = [asyncio.create_task(push(self._socket_envelopes)), asyncio.create_task(push(own))]
        await self._record(Call("socket_open", {"connection": len(self.socket_connections) - 1}))
        try:
            async for msg in ws:
                if msg.type == web.WSMsgType.TEXT:
                    await self._record(Call("socket_ack", json.loads(msg.data)))
        finally:
            for pusher in pushers:
                pusher.cancel()
        return ws

    def _m_auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": f"https://{self.domain}.slack.com/", "team": self.domain.title(), "user": "cairn",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id,
                "is_enterprise_install": False}

    def _m_chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel"))
        if channel in self.rejected_channels:
            return {"ok": False, "error": self.rejected_channels[channel]}
        if channel.startswith("#"):  # a channel name: Slack resolves it to the id
            channel = "C" + channel[1:].upper().replace("-", "")
        ts = self._next_ts()
        message = {"ts": ts, "text": p.get("text"), "blocks": p.get("blocks"), "thread_ts": p.get("thread_ts"),
                   "user": self.bot_user_id, "bot_id": self.bot_id}
        metadata = p.get("metadata")
        if metadata:
            message["metadata"] = json.loads(metadata) if isinstance(metadata, str) else metadata
        self.messages.setdefault(channel, {})[ts] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _m_chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        channel, ts = str(p.get("channel")), str(p.get("ts"))
        message = self.messages.get(channel, {}).get(ts)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message.update(text=p.get("text"), blocks=p.get("blocks"))
        return {"ok": True, "channel": channel, "ts": ts, "text": p.get("text")}

    def _m_chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "message_ts": self._next_ts()}

    def _m_chat_getPermalink(self, p: dict[str, Any]) -> dict[str, Any]:
        channel, ts = p.get("channel"), str(p.get("message_ts"))
        return {"ok": True, "channel": channel,
                "permalink": f"https://{self.domain}.slack.com/archives/{channel}/p{ts.replace('.', '')}"}

    def _m_conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        channel, root = str(p.get("channel")), str(p.get("ts"))
        msgs = [m for m in self.messages.get(channel, {}).values() if m["ts"] == root or m.get("thread_ts") == root]
        return {"ok": True, "messages": sorted(msgs, key=lambda m: m["ts"]), "has_more": False}

    def _m_conversations_history(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel"))
        if channel in self.rejected_channels:
            return {"ok": False, "error": self.rejected_channels[channel]}
        oldest, latest = float(p.get("oldest") or 0), float(p.get("latest") or "inf")
        with_metadata = str(p.get("include_all_metadata")).lower() in ("1", "true")
        found = sorted((m for m in self.messages.get(channel, {}).values()
                        if not m.get("thread_ts") or m["thread_ts"] == m["ts"]
                        if oldest < float(m["ts"]) < latest), key=lambda m: float(m["ts"]), reverse=True)
        start, limit = int(p.get("cursor") or 0), min(int(p.get("limit") or 100), 999)
        page = [m if with_metadata else {k: v for k, v in m.items() if k != "metadata"}
                for m in found[start:start + limit]]
        more = start + limit < len(found)
        return {"ok": True, "messages": page, "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _m_conversations_open(self, p: dict[str, Any]) -> dict[str, Any]:
        users = str(p.get("users") or "")
        return {"ok": True, "channel": {"id": "D" + users.split(",")[0].removeprefix("U")}}

    def _m_conversations_info(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel"))
        default = {"id": channel, "is_channel": channel.startswith("C"), "is_private": channel.startswith("G"),
                   "is_im": channel.startswith("D"), "is_mpim": False, "is_shared": False, "is_ext_shared": False,
                   "is_member": channel not in self.rejected_channels}
        return {"ok": True, "channel": {**default, **self.channels.get(channel, {})}}

    def _m_conversations_join(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel"))
        info = {**self._m_conversations_info(p)["channel"], "is_member": True}
        if info.get("is_archived"):
            return {"ok": False, "error": "is_archived"}
        if not channel.startswith("C") or info.get("is_private"):
            return {"ok": False, "error": "method_not_supported_for_channel_type"}
        self.rejected_channels.pop(channel, None)
        return {"ok": True, "channel": info}

    def _m_conversations_members(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = str(p.get("channel"))
        if channel not in self.members:
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "members": self.members[channel], "response_metadata": {"next_cursor": ""}}

    def _m_users_info(self, p: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(p.get("user")))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    def _m_usergroups_list(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "usergroups": [{"id": g, "users": u} for g, u in self.usergroups.items()]}

    def _m_usergroups_users_list(self, p: dict[str, Any]) -> dict[str, Any]:
        group = str(p.get("usergroup"))
        if group not in self.usergroups:
            return {"ok": False, "error": "no_such_subteam"}
        return {"ok": True, "users": self.usergroups[group]}

    def _m_views_publish(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "view": {"id": "V1", **(p.get("view") or {})}}

    def _m_reactions_add(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    def _m_files_info(self, p: dict[str, Any]) -> dict[str, Any]:
        file = self.files.get(str(p.get("file")))
        if file is None:
            return {"ok": True, "file": {"id": p.get("file"), "name": "file.txt", "mimetype": "text/plain"}}
        url = f"http://127.0.0.1:{self.port}/files-pri/{file['id']}/{file['name']}"
        info = {k: v for k, v in file.items() if k not in ("data", "download_status")}
        return {"ok": True, "file": {**info, "url_private": url, "url_private_download": url}}

    async def _download(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None
        await self._record(Call("file.download", {"file": file_id}, token))
        file = self.files.get(file_id)
        if file is None:
            return web.Response(status=404, text="not found")
        if not token:  # Slack answers an unauthenticated download with its sign-in page
            return web.Response(text="<html><body>Sign in to Slack</body></html>", content_type="text/html")
        if file["download_status"] != 200:
            return web.Response(status=file["download_status"], text="error")
        return web.Response(body=file["data"], content_type="application/octet-stream")

    def _m_views_open(self, p: dict[str, Any]) -> dict[str, Any]:
        view = p.get("view") or {}
        view = json.loads(view) if isinstance(view, str) else view
        return {"ok": True, "view": {"id": f"V{next(self._views):04d}", **view}}

    def _m_views_update(self, p: dict[str, Any]) -> dict[str, Any]:
        view = p.get("view") or {}
        view = json.loads(view) if isinstance(view, str) else view
        return {"ok": True, "view": {"id": p.get("view_id") or f"V{next(self._views):04d}", **view}}
