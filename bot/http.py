"""The HTTP app: `/v1/retrieve` for other services, `/healthz`, `/readyz`, `/metrics`, and
`/slack/events` when a Slack request handler is given.

`POST /v1/retrieve`, checked in this order, each refusal before any retrieval:
  401 missing_credential | invalid_credential      the service's bearer credential
  403 context_*                                    the signed user context (see bot/api_auth.py)
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

# No `from __future__ import annotations`: FastAPI reads the dependency annotations at runtime,
# and they name closures.
import asyncio
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, Protocol

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from bot.api_auth import (
    ContextError,
    CredentialFileError,
    CredentialStore,
    ServicePrincipal,
    UserContext,
    scope_for_context,
    verify_user_context,
)
from bot.budgets import Budgets
from bot.controls import KINDS, Controls
from bot.metrics import CONTENT_TYPE, Metrics
from store.disk import disk_status
from store.records import Scope

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
DEFAULT_TOP_K = 8
PAUSED_RETRY_AFTER_S = 60
UNAVAILABLE_RETRY_AFTER_S = 5
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


# -- wire models (camelCase on the wire, as the issue specifies) -----------------------------------


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: StrictStr = Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S",
                             description="The question, as the user asked it.")
    topK: StrictInt = Field(default=DEFAULT_TOP_K, ge=1,
                            description="How many passages at most; values above the server's cap are capped.")


class Source(BaseModel):
    documentId: str
    version: str
    page: int | None
    title: str
    path: str
    heading: str


class Policy(BaseModel):
    id: str | None
    revision: str


class RetrievedPassage(BaseModel):
    chunkId: str
    text: str
    score: float
    source: Source
    policy: Policy


class RetrieveResponse(BaseModel):
    requestId: str
    topK: int = Field(description="The topK used after capping.")
    gate: Literal["below_score_floor"] | None = Field(
        description="Set when the passages do not clear the answerability floor: do not answer from them.")
    passages: list[RetrievedPassage]


class ErrorBody(BaseModel):
    error: str
    message: str
    requestId: str
    detail: list[dict[str, Any]] | None = None


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, str]
    paused: list[str]


class ApiError(Exception):
    def __init__(self, status: int, error: str, message: str, *, headers: dict[str, str] | None = None,
                 detail: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status, self.error, self.message, self.headers, self.detail = status, error, message, headers, detail


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in codes}


# -- the app ---------------------------------------------------------------------------------------------


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


def create_http_app(services: Any, *, slack_handler: SlackRequestHandler | None = None,
                    credentials: CredentialStore | None = None, budgets: Budgets | None = None,
                    warm_up: bool = True) -> FastAPI:
    """`services`: bot.services.Services. `credentials` / `budgets` default to ones built from settings."""
    settings = services.settings
    metrics: Metrics = getattr(services, "metrics", None) or Metrics()
    controls: Controls = getattr(services, "controls", None) or Controls(
        services.db, env_paused=settings.paused_kinds, cache_s=settings.controls_cache_s)
    credentials = credentials or CredentialStore(settings.services_path, default_audience=settings.api_audience)
    budgets = budgets or Budgets.from_settings(settings)
    search_slots = asyncio.Semaphore(max(1, settings.api_concurrency))
    load_error: list[str] = []

    async def load_model() -> None:
        try:
            await asyncio.to_thread(services.embedder.warm_up)
        except Exception as exc:
            load_error.append(f"error: {type(exc).__name__}")
            log.exception("http.model_load_failed")

    def model_status() -> str:
        if load_error:
            return load_error[-1]
        # Embedder.model is a cached_property: present in the instance dict once loaded.
        return "ok" if "model" in vars(services.embedder) else "loading"

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        # Load the model in the background: liveness answers at once, readiness once it is loaded.
        task = asyncio.create_task(load_model()) if warm_up else None
        try:
            yield
        finally:
            if task is not None and not task.done():
                task.cancel()

    app = FastAPI(title="Cairn", version="1", lifespan=lifespan, description=API_DESCRIPTION)
    app.state.services, app.state.metrics, app.state.controls = services, metrics, controls
    app.state.credentials, app.state.budgets = credentials, budgets

    bearer = HTTPBearer(auto_error=False, scheme_name="serviceCredential",
                        description="A service credential from `cairn credentials add NAME`.")
    context_header = APIKeyHeader(name="X-User-Context", auto_error=False, scheme_name="userContext",
                                  description="A short-lived HS256 JWT naming the user (see above).")

    @app.middleware("http")
    async def request_id_and_errors(request: Request, call_next: Callable[[Request], Awaitable[Response]]):
        given = request.headers.get("x-request-id", "")
        rid = given if _REQUEST_ID.match(given) else uuid.uuid4().hex
        request.state.request_id = rid
        try:
            response = await call_next(request)
        except Exception:
            # Never a stack trace or a half answer on the wire.
            log.exception("http.unhandled", extra={"request_id": rid, "path": request.url.path})
            response = _error_response(rid, ApiError(500, "internal_error", "unexpected server error"))
        response.headers["X-Request-Id"] = rid
        return response

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _error_response(_rid(request), exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error_response(_rid(request), ApiError(422, "invalid_request", "the request is not valid",
                                                       detail=_plain_errors(exc.errors())))

    # -- operations ------------------------------------------------------------------------------

    @app.get("/healthz", response_model=Health, tags=["operations"], summary="Liveness")
    async def healthz() -> Health:
        return Health(status="ok")

    @app.get("/readyz", response_model=Readiness, tags=["operations"], summary="Readiness",
             responses={503: {"model": Readiness}})
    async def readyz() -> JSONResponse:
        checks = {"store": await _check_store(services.db), "index": await _check_index(services.index),
                  "model": model_status(),
                  "disk": disk_status(services.settings.cairn_home, services.settings.min_free_disk_mb)}
        ready = all(v == "ok" for v in checks.values())
        paused: list[str] = [k for k in KINDS if await controls.is_paused(k)]
        body = Readiness(status="ready" if ready else "not_ready", checks=checks, paused=paused)
        return JSONResponse(body.model_dump(), status_code=200 if ready else 503)

    @app.get("/metrics", tags=["operations"], summary="Prometheus metrics",
             responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
    async def metrics_endpoint() -> Response:
        await metrics.refresh(services.db, paused=[(k, await controls.is_paused(k)) for k in KINDS])
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    if slack_handler is not None:
        @app.post("/slack/events", include_in_schema=False)
        async def slack_events(request: Request) -> Any:
            return await slack_handler.handle(request)

        # Added last, so it runs first: see _SlackEventsFirst.
        app.add_middleware(_SlackEventsFirst, handler=slack_handler)

    # -- /v1/retrieve ----------------------------------------------------------------------------

    async def authenticate(
        request: Request,
        auth: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        context_token: Annotated[str | None, Depends(context_header)],
    ) -> tuple[ServicePrincipal, UserContext, Scope]:
        if auth is None or not auth.credentials:
            raise ApiError(401, "missing_credential", "a service credential is required (Authorization: Bearer)",
                           headers={"WWW-Authenticate": "Bearer"})
        try:
            principal = credentials.authenticate(auth.credentials)
        except CredentialFileError as exc:
            log.error("http.credentials_unreadable", extra={"error": str(exc)})
            raise ApiError(503, "credentials_unavailable", "service credentials cannot be read",
                           headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)}) from None
        if principal is None:
            raise ApiError(401, "invalid_credential", "the service credential is not valid",
                           headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        request.state.service = principal.name
        try:
            context = verify_user_context(context_token, credential=auth.credentials, principal=principal,
                                          audience=settings.api_audience, max_ttl_s=settings.context_max_ttl_s)
            scope = scope_for_context(services.access, context)
        except ContextError as exc:
            raise ApiError(403, exc.code, exc.message) from None
        return principal, context, scope

    @app.post(
        "/v1/retrieve", response_model=RetrieveResponse, tags=["retrieval"],
        summary="Passages the user may read that bear on the query",
        responses=_errors(401, 403, 422, 429, 503),
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": RetrieveRequest.model_json_schema()}}},
            # Both proofs at once (FastAPI would list them as alternatives).
            "security": [{"serviceCredential": [], "userContext": []}]},
    )
    async def retrieve(request: Request,
                       who: Annotated[tuple[ServicePrincipal, UserContext, Scope], Depends(authenticate)]
                       ) -> JSONResponse:
        # The body is parsed here, after authentication, so that an anonymous caller learns nothing
        # and the order of refusals is fixed: 401, 403, 422.
        started = time.perf_counter()
        principal, _context, scope = who
        rid = _rid(request)
        body = await _parse_body(request)
        if await controls.is_paused("tools"):
            raise ApiError(503, "paused", "retrieval is paused by an operator",
                           headers={"Retry-After": str(PAUSED_RETRY_AFTER_S)})
        decision = budgets.acquire(service=principal.name, user=f"{scope.tenant_id}:{scope.user_id}")
        if not decision.allowed:
            metrics.budget_rejected(decision.scope or "unknown")
            raise ApiError(429, "budget_exceeded", f"the {decision.scope} request budget is used up",
                           headers={"Retry-After": str(decision.retry_after_s)})
        top_k = min(body.topK, settings.api_max_top_k)
        try:
            # Admission: a bounded number of searches run at once and the rest wait their turn here,
            # inside the request's deadline. Without it, twenty concurrent searches queue in the
            # thread pool and that wait counts against each retrieval leg's own timeout.
            async with asyncio.timeout(settings.api_timeout_s), search_slots:
                result = await services.searcher.search(body.query, scope, top_k=top_k)
        except Exception as exc:
            log.warning("api.retrieve_failed", extra={"request_id": rid, "error": type(exc).__name__},
                        exc_info=not isinstance(exc, TimeoutError))
            metrics.count("retrieve_failed", type(exc).__name__)
            raise ApiError(503, "retrieval_unavailable", "retrieval failed; try again shortly",
                           headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)}) from None
        if _outage(result):
            raise ApiError(503, "retrieval_unavailable", "no retrieval leg answered; try again shortly",
                           headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)})
        gate: Literal["below_score_floor"] | None = (
            "below_score_floor" if result.passages and result.gate == "below_score_floor" else None)
        payload = RetrieveResponse(requestId=rid, topK=top_k, gate=gate,
                                   passages=[_wire_passage(p) for p in result.passages])
        elapsed = time.perf_counter() - started
        metrics.observe_latency("api_retrieve", elapsed)
        log.info("api.retrieve", extra={"request_id": rid, "service": principal.name, "key_id": principal.key_id,
                                        "tenant": scope.tenant_id, "user": scope.user_id,
                                        "passages": len(payload.passages), "gate": gate,
                                        "ms": round(elapsed * 1000, 1)})
        return JSONResponse(payload.model_dump())

    @app.middleware("http")
    async def count_api_requests(request: Request, call_next: Callable[[Request], Awaitable[Response]]):
        response = await call_next(request)
        if request.url.path.startswith("/v1/"):
            # The route template, not the raw path: a label per made-up URL would grow without bound.
            route = getattr(request.scope.get("route"), "path", "unmatched")
            metrics.api_request(route, response.status_code)
        return response

    return app


# -- helpers -----------------------------------------------------------------------------------------------


def _rid(request: Request) -> str:
    return getattr(request.state, "request_id", None) or uuid.uuid4().hex


def _error_response(rid: str, exc: ApiError) -> JSONResponse:
    body = ErrorBody(error=exc.error, message=exc.message, requestId=rid, detail=exc.detail)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=exc.status, headers=exc.headers)


def _plain_errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors without the offending input (it may be the user's question)."""
    return [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in errors]


async def _parse_body(request: Request) -> RetrieveRequest:
    raw = await request.body()
    try:
        return RetrieveRequest.model_validate_json(raw or b"null")
    except ValidationError as exc:
        raise ApiError(422, "invalid_request", "the request body is not valid",
                       detail=_plain_errors(exc.errors(include_input=False))) from None


def _outage(result: Any) -> bool:
    """An outage is no leg answering; a scope with nothing to find is an empty answer, not a 503."""
    if result.gate != "retrieval_unavailable":
        return False
    statuses = [leg.status for leg in result.legs.values()]
    return bool(statuses) and "ok" not in statuses and not all(s == "skipped" for s in statuses)


def _wire_passage(p: Any) -> RetrievedPassage:
    return RetrievedPassage(
        chunkId=p.chunk_id, text=p.text, score=round(float(p.score), 4),
        source=Source(documentId=p.doc_id, version=p.version, page=p.page, title=p.title, path=p.source_path,
                      heading=p.heading),
        policy=Policy(id=p.policy_id, revision=p.version))


async def _check_store(db: Any) -> str:
    try:
        async with db.execute("SELECT 1") as cur:
            await cur.fetchone()
        return "ok"
    except Exception as exc:
        return f"error: {type(exc).__name__}"


async def _check_index(index: Any) -> str:
    try:
        await asyncio.wait_for(asyncio.to_thread(index.count), timeout=2.0)
        return "ok"
    except Exception as exc:
        return f"error: {type(exc).__name__}"
