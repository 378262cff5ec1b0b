"""`POST /v1/retrieve`: the passages a user may read right now, for another service.

Checked in this order, each refusal before any retrieval: 401 (the service's credential), 403 (the
signed user context), 422 (the body), 503 `paused`, 429 (budgets), then 503 `retrieval_unavailable`
when no leg answered, a failure or a timeout. See bot/http/app.py for the whole contract.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError

from bot.http.deps import HttpState, http_state, request_id
from bot.http.models import (
    ApiError,
    Policy,
    RetrievedPassage,
    RetrieveRequest,
    RetrieveResponse,
    Source,
    error_responses,
)
from retrieval.search import Passage, SearchResult
from store import untrusted
from store.credentials import (
    ContextError,
    CredentialFileError,
    ServicePrincipal,
    UserContext,
    scope_for_context,
    verify_user_context,
)
from store.records import Scope

log = logging.getLogger(__name__)

PAUSED_RETRY_AFTER_S = 60
UNAVAILABLE_RETRY_AFTER_S = 5

router = APIRouter(tags=["retrieval"])
bearer = HTTPBearer(auto_error=False, scheme_name="serviceCredential",
                    description="A service credential from `cairn credentials add NAME`.")
context_header = APIKeyHeader(name="X-User-Context", auto_error=False, scheme_name="userContext",
                              description="A short-lived HS256 JWT naming the user (see above).")
State = Annotated[HttpState, Depends(http_state)]
Caller = tuple[ServicePrincipal, UserContext, Scope]


async def authenticate(request: Request, state: State,
                       auth: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
                       context_token: Annotated[str | None, Depends(context_header)]) -> Caller:
    """The calling service (401) and the user it acts for (403); the scope comes from the access file."""
    settings = state.services.settings
    if auth is None or not auth.credentials:
        raise ApiError(401, "missing_credential", "a service credential is required (Authorization: Bearer)",
                       headers={"WWW-Authenticate": "Bearer"})
    try:
        principal = state.credentials.authenticate(auth.credentials)
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
        state.services.access.refresh()  # an edit of the access file applies to the next request
        scope = scope_for_context(state.services.access, context)
    except ContextError as exc:
        raise ApiError(403, exc.code, exc.message) from None
    return principal, context, scope


@router.post(
    "/v1/retrieve", response_model=RetrieveResponse, summary="Passages the user may read that bear on the query",
    responses=error_responses(401, 403, 422, 429, 503),
    openapi_extra={"requestBody": {"required": True, "content": {
        "application/json": {"schema": RetrieveRequest.model_json_schema()}}},
        # Both proofs at once (FastAPI would list them as alternatives).
        "security": [{"serviceCredential": [], "userContext": []}]},
)
async def retrieve(request: Request, state: State, who: Annotated[Caller, Depends(authenticate)]) -> JSONResponse:
    # The body is parsed here, after authentication, so that an anonymous caller learns nothing and the
    # order of refusals is fixed: 401, 403, 422.
    started = time.perf_counter()
    principal, _context, scope = who
    settings, metrics = state.services.settings, state.metrics
    rid = request_id(request)
    body = await _parse_body(request)
    if await state.controls.is_paused("tools"):
        raise ApiError(503, "paused", "retrieval is paused by an operator",
                       headers={"Retry-After": str(PAUSED_RETRY_AFTER_S)})
    decision = state.budgets.acquire(service=principal.name, user=f"{scope.tenant_id}:{scope.user_id}")
    if not decision.allowed:
        metrics.budget_rejected(decision.scope or "unknown")
        raise ApiError(429, "budget_exceeded", f"the {decision.scope} request budget is used up",
                       headers={"Retry-After": str(decision.retry_after_s)})
    top_k = min(body.topK, settings.api_max_top_k)
    result = await _search(state, body.query, scope, top_k=top_k, rid=rid)
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


async def _search(state: HttpState, query: str, scope: Scope, *, top_k: int, rid: str) -> SearchResult:
    try:
        # Admission: a bounded number of searches run at once and the rest wait their turn here, inside
        # the request's deadline. Without it, twenty concurrent searches queue in the thread pool and
        # that wait counts against each retrieval leg's own timeout.
        async with asyncio.timeout(state.services.settings.api_timeout_s), state.search_slots:
            result = await state.services.searcher.search(query, scope, top_k=top_k)
    except Exception as exc:
        log.warning("api.retrieve_failed", extra={"request_id": rid, "error": type(exc).__name__},
                    exc_info=not isinstance(exc, TimeoutError))
        state.metrics.count("retrieve_failed", type(exc).__name__)
        raise ApiError(503, "retrieval_unavailable", "retrieval failed; try again shortly",
                       headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)}) from None
    if _outage(result):
        raise ApiError(503, "retrieval_unavailable", "no retrieval leg answered; try again shortly",
                       headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)})
    return result


def plain_errors(errors: Any) -> list[dict[str, Any]]:
    """Validation errors without the offending input (it may be the user's question)."""
    return [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in errors]


async def _parse_body(request: Request) -> RetrieveRequest:
    """The body made safe first (store/untrusted.py: invalid UTF-8 and lone surrogates replaced, nesting
    and numbers bounded), then validated; anything else is a 422 that does not echo the input."""
    raw = await request.body()
    try:
        value = untrusted.loads(raw or b"null")
    except ValueError as exc:  # not JSON, too deep, a number out of range
        reason = str(exc) if isinstance(exc, untrusted.UntrustedInput) else "the body is not JSON"
        raise ApiError(422, "invalid_request", "the request body is not valid",
                       detail=[{"loc": ["body"], "msg": reason, "type": "json_invalid"}]) from None
    try:
        return RetrieveRequest.model_validate(value)
    except ValidationError as exc:
        raise ApiError(422, "invalid_request", "the request body is not valid",
                       detail=plain_errors(exc.errors(include_input=False))) from None


def _outage(result: SearchResult) -> bool:
    """An outage is no leg answering; a scope with nothing to find is an empty answer, not a 503."""
    if result.gate != "retrieval_unavailable":
        return False
    statuses = [leg.status for leg in result.legs.values()]
    return bool(statuses) and "ok" not in statuses and not all(s == "skipped" for s in statuses)


def _wire_passage(p: Passage) -> RetrievedPassage:
    return RetrievedPassage(
        chunkId=p.chunk_id, text=p.text, score=round(float(p.score), 4),
        source=Source(documentId=p.doc_id, version=p.version, page=p.page, title=p.title, path=p.source_path,
                      heading=p.heading),
        policy=Policy(id=p.policy_id, revision=p.version))
