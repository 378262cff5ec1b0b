"""`/slack/events` over HTTP: Bolt's request handler, behind a check that the body can be read.

Bolt reads the body before it verifies the signature, and a body it cannot read (`{not json` sent as
application/json, an interactive `payload=` that is not a JSON object, bytes that are not UTF-8)
raises inside it: a 500, which Slack retries. Here such a request gets what any request with a wrong
signature gets (401), and when it is correctly signed a 400. The signed ones are logged
(`slack.malformed_request`: content type, size and what is wrong; the body itself as `content`, kept
with CAIRN_LOG_CONTENT), so a request Slack sent is never dropped without a trace.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from urllib.parse import parse_qs, urlencode

from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp, AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from store import untrusted

log = logging.getLogger(__name__)


def unreadable(raw: bytes, headers: Mapping[str, str]) -> str | None:
    """Why Bolt could not make a request of this body, or None when it can."""
    bolt_headers: dict[str, str | Sequence[str]] = dict(headers)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    # Nesting is measured before anything parses it: Python's parser recurses until RecursionError.
    problem = untrusted.depth_problem(_json_part(text, headers))
    if problem:
        return problem
    try:
        AsyncBoltRequest(body=text, headers=bolt_headers)  # what Bolt's handler builds first
    except ValueError as exc:  # json.JSONDecodeError
        return f"not JSON: {exc}"
    except (AttributeError, TypeError):  # JSON, but not an object
        return "JSON, but not an object"
    except RecursionError:
        return "JSON nested too deep"
    return None


def _json_part(text: str, headers: Mapping[str, str]) -> str:
    """The JSON a body carries: the body itself, or an interactive request's `payload=` field."""
    if "application/x-www-form-urlencoded" in (headers.get("content-type") or ""):
        return " ".join(v for k, vs in parse_qs(text).items() if k == "payload" for v in vs)
    return text


async def clean_event_text(req: AsyncBoltRequest, next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse:
    """Bolt middleware (Socket Mode and HTTP alike): every string of the event made safe once, here
    (store/untrusted.py: a lone surrogate becomes U+FFFD), before any listener stores, logs or posts it.
    A question with `\\ud800` in it is then answered or escalated like any other."""
    cleaned = untrusted.clean(req.body)
    if cleaned != req.body:
        req.body = cleaned  # type: ignore[assignment]
        if req.mode == "http":  # the listener runs on a copy made from the raw body: it must say the same
            encoded = json.dumps(cleaned)
            req.raw_body = encoded if req.raw_body.lstrip().startswith("{") else urlencode({"payload": encoded})
    return await next()


class SlackEvents:
    """Bolt's Starlette handler for `/slack/events`, refusing with 400 a signed body it cannot read."""

    def __init__(self, app: AsyncApp, *, signing_secret: str | None) -> None:
        self._bolt = AsyncSlackRequestHandler(app)
        self._verifier = SignatureVerifier(signing_secret) if signing_secret else None

    async def handle(self, request: Request) -> Response:
        if request.method != "POST":
            return await self._bolt.handle(request)
        raw = await request.body()  # cached on the request: Bolt's handler reads the same bytes
        problem = unreadable(raw, request.headers)
        if problem is None:
            return await self._bolt.handle(request)
        if self._verifier is None or not self._verifier.is_valid_request(raw, request.headers):
            return JSONResponse({"error": "invalid request"}, status_code=401)  # as Bolt answers it
        content_type = request.headers.get("content-type")
        log.warning("slack.malformed_request", extra={
            "status": 400, "content_type": content_type, "bytes": len(raw), "problem": problem,
            "retry_num": request.headers.get("x-slack-retry-num"), "content": raw.decode("utf-8", "replace")})
        return JSONResponse({"error": "malformed_request", "detail": problem}, status_code=400)
