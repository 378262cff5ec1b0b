"""`/v1/retrieve` latency over loopback: a real uvicorn server on 127.0.0.1 (a free port), 20
concurrent keep-alive clients, 400 requests (after 20 warm-up), plus a one-client baseline.

The server runs the real app over services of its own (the Larkspur sample handbook ingested
into a home inside the bench workspace, asked as `bob`), with a registered service credential and
a signed user context, so every request pays for authentication, context verification, scope
resolution, retrieval and serialisation. Client
and server share one process and the machine's 2 cores, so the numbers are an upper bound on
what the server alone would show. Budgets are lifted for the run (the point is latency, not 429s).

`python -m bench api` runs it as a section; `python -m bench.api_latency` or `run()` alone.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from bench.report import log, percentile, table
from bench.workspace import Doc, Workspace, make_settings
from bot.http.app import create_http_app
from bot.http.budgets import Budgets
from bot.services import Services, open_services
from store.credentials import CredentialStore, sign_user_context

CONCURRENCY = 20
N_REQUESTS = 400
N_WARMUP = 20
N_BASELINE = 40
SAMPLE = Path(__file__).resolve().parents[1] / "sample"
TENANT, USER = "larkspur", "bob"


def sample_docs() -> list[Doc]:
    from bot.cli.knowledge import plan_files

    root = SAMPLE / "handbook"
    return [Doc(doc_id=item.doc_id or "", filename=item.path.relative_to(root).as_posix(), data=item.path.read_bytes())
            for item in plan_files([root], None)]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _drive(client: httpx.AsyncClient, queries: list[str], headers: dict[str, str], *,
                 concurrency: int, top_k: int = 8) -> tuple[list[float], Counter[int], float]:
    queue: asyncio.Queue[str] = asyncio.Queue()
    for q in queries:
        queue.put_nowait(q)
    latencies: list[float] = []
    statuses: Counter[int] = Counter()

    async def worker() -> None:
        while True:
            try:
                q = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            t0 = time.perf_counter()
            r = await client.post("/v1/retrieve", json={"query": q, "topK": top_k}, headers=headers)
            latencies.append((time.perf_counter() - t0) * 1000)
            statuses[r.status_code] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, statuses, time.perf_counter() - started


async def section_api(ws: Workspace) -> None:
    # Its own home over the Larkspur sample (small enough to ingest in a minute), so the API acts
    # for real access-file users; the model is the workspace's, already loaded.
    settings = make_settings(ws.root / "api-home", SAMPLE / "access.yml")
    async with open_services(settings, embedder=ws.embedder) as services:
        ingested = await ws.ingest(sample_docs(), tenant=TENANT, services=services)
        log(f"sample handbook: {ingested.chunks} chunks in {ingested.seconds:.0f}s → tenant {TENANT}")
        await _measure(ws, services)


async def _measure(ws: Workspace, services: Services) -> None:
    store = CredentialStore(ws.root / "services.json", default_audience=services.settings.api_audience)
    _, secret = store.add("bench")
    app = create_http_app(services, credentials=store, budgets=Budgets(user_rpm=0, service_rpm=0), warm_up=False)
    headers = {"Authorization": f"Bearer {secret}",
               "X-User-Context": sign_user_context(credential=secret, service="bench", user=USER, tenant=TENANT,
                                                   audience=services.settings.api_audience,
                                                   ttl_s=services.settings.context_max_ttl_s)}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off", log_config=None))
    serving = asyncio.create_task(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError("uvicorn did not start")
        log(f"uvicorn on 127.0.0.1:{port}")
        questions = [str(json.loads(line)["question"])
                     for line in (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        pool = (questions * (1 + (N_REQUESTS + N_WARMUP) // max(1, len(questions))))
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=60) as client:
            await _drive(client, pool[:N_WARMUP], headers, concurrency=CONCURRENCY)
            base_ms, base_st, base_s = await _drive(client, pool[N_WARMUP:N_WARMUP + N_BASELINE], headers,
                                                    concurrency=1)
            ms, statuses, seconds = await _drive(client, pool[N_WARMUP:N_WARMUP + N_REQUESTS], headers,
                                                 concurrency=CONCURRENCY)
    finally:
        server.should_exit = True
        await serving
    rows: list[list[Any]] = []
    for label, values, st, secs in (("1 client", base_ms, base_st, base_s),
                                    (f"{CONCURRENCY} clients", ms, statuses, seconds)):
        rows.append([label, len(values), dict(sorted(st.items())), round(percentile(values, 50), 1),
                     round(percentile(values, 95), 1), round(percentile(values, 99), 1), round(max(values), 1),
                     round(len(values) / secs, 1)])
    table("POST /v1/retrieve over loopback (ms)", ["clients", "requests", "statuses", "p50", "p95", "p99", "max",
                                                   "req/s"], rows,
          note=f"client and server share the process and 2 cores; topK 8; sample handbook as {USER}")
    ws.results["api_latency"] = {"p50_ms": rows[1][3], "p95_ms": rows[1][4], "rps": rows[1][7]}
    print(f"/v1/retrieve at {CONCURRENCY} clients: p50 {rows[1][3]} ms, p95 {rows[1][4]} ms, {rows[1][7]} req/s",
          flush=True)


def run(*, keep: bool = False) -> None:
    """Standalone: a bench workspace (model loaded once), then the section; prints p50/p95."""

    async def main() -> None:
        ws = await Workspace.open(keep=keep)
        try:
            await section_api(ws)
        finally:
            await ws.close()

    asyncio.run(main())


if __name__ == "__main__":
    run()
