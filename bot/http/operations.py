"""`/healthz` (liveness), `/readyz` (store, index, model and disk), `/metrics` (Prometheus)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import aiosqlite
from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response

from bot.http.deps import HttpState, http_state
from bot.http.models import Health, Readiness
from bot.metrics import CONTENT_TYPE
from retrieval.index import VectorIndex
from store.controls import KINDS
from store.disk import disk_status

router = APIRouter(tags=["operations"])
State = Annotated[HttpState, Depends(http_state)]


@router.get("/healthz", response_model=Health, summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, summary="Readiness", responses={503: {"model": Readiness}})
async def readyz(state: State) -> JSONResponse:
    services = state.services
    checks = {"store": await _check_store(services.db), "index": await _check_index(services.index),
              "model": state.model_status(),
              "disk": disk_status(services.settings.cairn_home, services.settings.min_free_disk_mb)}
    ready = all(v == "ok" for v in checks.values())
    paused: list[str] = [k for k in KINDS if await state.controls.is_paused(k)]
    body = Readiness(status="ready" if ready else "not_ready", checks=checks, paused=paused,
                     slack=state.slack_problems)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get("/metrics", summary="Prometheus metrics",
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
async def metrics_endpoint(state: State) -> Response:
    await state.metrics.refresh(state.services.db, paused=[(k, await state.controls.is_paused(k)) for k in KINDS])
    return Response(state.metrics.render(), media_type=CONTENT_TYPE)


async def _check_store(db: aiosqlite.Connection) -> str:
    try:
        async with db.execute("SELECT 1") as cur:
            await cur.fetchone()
        return "ok"
    except Exception as exc:
        return f"error: {type(exc).__name__}"


async def _check_index(index: VectorIndex) -> str:
    try:
        await asyncio.wait_for(asyncio.to_thread(index.count), timeout=2.0)
        return "ok"
    except Exception as exc:
        return f"error: {type(exc).__name__}"
