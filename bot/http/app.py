"""The HTTP app: `/v1/retrieve` for other services, `/healthz`, `/readyz`, `/metrics`, and
`/slack/events` when a Slack request handler is given.

`POST /v1/retrieve`, checked in this order, each refusal before any retrieval:
  401 missing_credential | invalid_credential      the service's bearer credential
  403 context_*                                    the signed user context (see store/credentials.py)
  422 invalid_request                              the JSON body
  503 paused                                       tools paused by an operator (Retry-After)
  429 budget_exceeded                              per-service / per-user budget (Retry-After)
  503 retrieval_unavailable                        no retrieval leg answered, a failure, or a timeout
  200 {"requestId", "topK", "gate", "passages": [...]}

`topK` defaults to 8; above CAIRN_API_MAX_TOP_K (20) it is capped, and the response says the
`topK` used. Passages are the chunks the user may read right now, best first. When the best score
is under the floor, they are still returned with their scores and `"gate": "below_score_floor"`:
the caller must not present them as an answer. Nothing eligible → an empty list, `"gate": null`.

At most CAIRN_API_CONCURRENCY (4) searches run at once; the others wait inside the request's
deadline (CAIRN_API_TIMEOUT, 10 s), so queueing never eats into a retrieval leg's own timeout.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from bot.http import operations, retrieve
from bot.http.budgets import Budgets
from bot.http.deps import HttpState, request_id
from bot.http.models import ApiError, ErrorBody
from bot.services import Services
from store.credentials import CredentialStore

log = logging.getLogger(__name__)

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

API_DESCRIPTION = """\
Retrieval over the approved, versioned, access-controlled policy collection: the passages a
user may read right now, with their sources. Cairn never writes an answer here.

**Authentication.** `Authorization: Bearer <service credential>` (from `cairn credentials add
NAME`; only its SHA-256 is stored, in `$CAIRN_HOME/services.json`) and `X-User-Context: <JWT>`,
HS256, claims `sub` (user: access-file name or Slack id), `tenant`, `aud` (this server's
audience, default `cairn`), `svc` (the calling service), `iat`, `exp` (at most 15 minutes after
`iat`). The signing key is `HMAC-SHA256(key=<service credential>, msg="cairn/user-context/v1")`.
The user's groups come from Cairn's access file, never from the request.

**Refusals**, in this order, all before any retrieval: 401 `missing_credential` /
`invalid_credential`; 403 `context_*` (missing, malformed, bad signature, expired, not yet valid,
too long-lived, other service, other audience, unknown user, tenant mismatch); 422
`invalid_request`; 503 `paused` (an operator paused the tools; `Retry-After`); 429
`budget_exceeded` (per-service or per-user requests per minute; `Retry-After`); 503
`retrieval_unavailable` (no retrieval leg answered, or a failure or timeout).

**topK** defaults to 8; above the server's cap (20 by default) it is capped (the response's `topK` says what was used).
**gate** is `below_score_floor` when the passages do not clear the answerability floor: they are
returned with their scores for transparency and must not be presented as an answer. Nothing the
user may read → `passages: []`.
"""


class SlackRequestHandler(Protocol):
    async def handle(self, request: Request) -> Any: ...


class _SlackEventsFirst:
    """POST /slack/events goes straight to Bolt's handler. Slack retries an event it has not seen
    acknowledged within 3 s, and under a burst FastAPI's routing and the request-id middleware
    cost as much per event as Bolt itself (the route stays declared for other methods and tests).
    Exceptions still reach Starlette's outer error middleware: a plain 500, never a trace."""

    def __init__(self, app: Any, handler: SlackRequestHandler) -> None:
        self.app, self.handler = app, handler

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/slack/events":
            response = await self.handler.handle(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_http_app(services: Services, *, slack_handler: SlackRequestHandler | None = None,
                    credentials: CredentialStore | None = None, budgets: Budgets | None = None,
                    warm_up: bool = True) -> FastAPI:
    """The routers of bot/http/ over `services`; `credentials` / `budgets` default to ones from settings."""
    settings = services.settings
    state = HttpState(
        services=services, metrics=services.metrics, controls=services.controls,
        credentials=credentials or CredentialStore(settings.services_path, default_audience=settings.api_audience),
        budgets=budgets or Budgets.from_settings(settings),
        search_slots=asyncio.Semaphore(max(1, settings.api_concurrency)))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Load the model in the background: liveness answers at once, readiness once it is loaded.
        task = asyncio.create_task(_load_model(state)) if warm_up else None
        try:
            yield
        finally:
            if task is not None and not task.done():
                task.cancel()

    app = FastAPI(title="Cairn", version="1", lifespan=lifespan, description=API_DESCRIPTION)
    app.state.cairn = state
    app.include_router(operations.router)
    app.include_router(retrieve.router)
    app.middleware("http")(_request_id_and_errors)
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    if slack_handler is not None:
        async def slack_events(request: Request) -> Any:
            return await slack_handler.handle(request)

        app.add_api_route("/slack/events", slack_events, methods=["POST"], include_in_schema=False)
        # Added last, so it runs first: see _SlackEventsFirst.
        app.add_middleware(_SlackEventsFirst, handler=slack_handler)
    app.middleware("http")(_count_api_requests)
    return app


async def _load_model(state: HttpState) -> None:
    try:
        await asyncio.to_thread(state.services.embedder.warm_up)
    except Exception as exc:
        state.load_errors.append(f"error: {type(exc).__name__}")
        log.exception("http.model_load_failed")


async def _request_id_and_errors(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    given = request.headers.get("x-request-id", "")
    rid = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
    request.state.request_id = rid
    try:
        response = await call_next(request)
    except Exception:
        # Never a stack trace or a half answer on the wire.
        log.exception("http.unhandled", extra={"request_id": rid, "path": request.url.path})
        response = error_response(rid, ApiError(500, "internal_error", "unexpected server error"))
    response.headers["X-Request-Id"] = rid
    return response


async def _count_api_requests(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    response = await call_next(request)
    if request.url.path.startswith("/v1/"):
        # The route template, not the raw path: a label per made-up URL would grow without bound.
        route = getattr(request.scope.get("route"), "path", "unmatched")
        request.app.state.cairn.metrics.api_request(route, response.status_code)
    return response


async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
    return error_response(request_id(request), exc)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    return error_response(request_id(request), ApiError(422, "invalid_request", "the request is not valid",
                                                        detail=retrieve.plain_errors(exc.errors())))


def error_response(rid: str, exc: ApiError) -> JSONResponse:
    body = ErrorBody(error=exc.error, message=exc.message, requestId=rid, detail=exc.detail)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=exc.status, headers=exc.headers)
