"""Reliability under load: CLI wall times, and Slack acks while the server ingests a 20 MB upload.

- CLI: `cairn --help` and `cairn docs` (targets ≤ 2 s: neither needs a model) and a cold
  `cairn ask` (reported; target ≤ 8 s), each a fresh process over a home holding the sample handbook.
- Ack under ingestion: the real Bolt app behind the real HTTP app on a loopback port (as in the
  slack_ack section) while the same process's ingestion worker takes a 19.9 MB Markdown upload;
  bursts of signed events arrive from another process the whole time (target p95 ≤ 100 ms). Then
  what became of the big upload (refused by its passage limit, or published) and how long a small
  upload queued behind it waited.
- A 16,000-deep HTML file: how long until it is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import uvicorn

if TYPE_CHECKING:
    from bench.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
BURST = 20
QUIET_BURSTS = 5
BIG_MB = 19.9


def _cairn(home: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "CAIRN_HOME": str(home), "CAIRN_ACCESS_FILE": str(ROOT / "sample" / "access.yml")}
    env.pop("QDRANT_URL", None)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "import sys; from bot.cli.main import main; sys.exit(main())",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - t0, done


def _big_markdown(megabytes: float) -> bytes:
    section = ("## Procedure {n}\n\n" + "Staff follow procedure {n} when they book travel, claim expenses and "
               "record approvals in the finance system before the end of the month. " * 12 + "\n\n")
    out, n, limit = ["# Operations manual\n\n"], 0, int(megabytes * 1_000_000)
    size = len(out[0])
    while size < limit:
        block = section.format(n=n)
        out.append(block)
        size += len(block)
        n += 1
    return "".join(out).encode()[:limit]


async def _cli_times(ws: Workspace) -> list[list[object]]:
    from bench.report import target

    home = ws.root / "cli-home"
    ingest_s, done = await asyncio.to_thread(_cairn, home, "ingest", str(ROOT / "sample" / "handbook"),
                                             "--tenant", "larkspur", "--json")
    if done.returncode != 0:
        raise RuntimeError(f"cairn ingest failed: {done.stderr[-500:]}")
    rows: list[list[object]] = [["cairn ingest sample/handbook (cold)", round(ingest_s, 1), "report"]]
    for label, args, goal in ((["cairn --help"], ("--help",), 2.0), (["cairn docs"], ("docs",), 2.0),
                              (["cairn ask (cold)"], ("ask", "What is the hotel limit per night?", "--json"), 8.0)):
        seconds, done = await asyncio.to_thread(_cairn, home, *args)
        if done.returncode != 0:
            raise RuntimeError(f"{label[0]} failed: {done.stderr[-500:]}")
        note = ""
        if args[0] == "ask":
            turn = json.loads(done.stdout)
            note = f" (route {turn['route']}, reason {turn['reason']})"
        rows.append([label[0] + note, round(seconds, 2), target(seconds, goal, higher=False, digits=2)])
    return rows


async def _acks_while_ingesting(ws: Workspace) -> None:
    from bench.report import log, percentile, table, target
    from bench.slack_ack import (
        SECRET,
        TEAM,
        _ensure_sample_handbook,
        _post,
        _send_from_another_process,
        _timed,
    )
    from bench.workspace import ACK_TENANT
    from bot.server import _Server, bind, build_http, ingestion_pass, settle_heap
    from bot.slack.app import create_app
    from bot.slack.context import WorkTracker
    from retrieval.ingest import DocumentOptions
    from tests.fake_slack import FakeSlack

    await _ensure_sample_handbook(ws)
    fake = FakeSlack(team_id=TEAM)
    await fake.start()
    for n in range(2000):
        fake.add_user(f"U{n:05d}", name=f"bench{n}")
    settings = ws.settings.model_copy(update={"slack_bot_token": "xoxb-bench", "slack_signing_secret": SECRET,
                                              "slack_api_url": fake.url, "escalation_channel": "C0BENCHESC"})
    await settle_heap(ws.services)
    work = WorkTracker()
    app = create_app(settings, ws.services, work=work)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server_ms: list[float] = []
    server = _Server(uvicorn.Config(_timed(build_http(ws.services, app), server_ms), log_config=None,
                                    lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    big = _big_markdown(BIG_MB)
    ingestor = ws.services.ingestor
    acks: list[float] = []
    try:
        while not server.started:  # noqa: ASYNC110 (uvicorn exposes only a flag)
            await asyncio.sleep(0.01)
        import httpx

        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            await _post(client, 1999)  # the first request pays auth.test and lazy imports
        await work.wait_idle()
        quiet: list[float] = []  # the same bursts with nothing ingested: what the machine's load alone costs
        for _ in range(QUIET_BURSTS):
            quiet.extend(await _send_from_another_process(port, BURST))
            await work.wait_idle()
        options = DocumentOptions(tenant_id=ACK_TENANT)
        big_job = await ingestor.submit_bytes(big, filename="ops/manual.md", doc_id="bench/big-manual",
                                              options=options)
        small_job = await ingestor.submit_bytes(b"# Dock\n\nDeliveries use the back dock from 7 to 11.\n",
                                                filename="ops/dock.md", doc_id="bench/dock", options=options)
        t0 = time.perf_counter()
        worker = asyncio.create_task(ingestion_pass(ws.services))
        bursts = 0
        while not worker.done():
            acks.extend(await _send_from_another_process(port, BURST))
            bursts += 1
            await work.wait_idle()
        done = await worker
        ingest_s = time.perf_counter() - t0
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await serving
        await fake.stop()
        with contextlib.suppress(OSError):
            sock.close()
    outcome = {r.job_id: r for r in done}
    big_result, small_result = outcome.get(big_job.job_id), outcome.get(small_job.job_id)
    small_row = await ws.services.jobs.get(job_id=small_job.job_id or "")
    log(f"{BIG_MB} MB Markdown upload: {big_result.status if big_result else '?'} after {ingest_s:.1f} s"
        f" ({(big_result.message or '')[:120] if big_result else ''}); the small upload behind it: "
        f"{small_result.status if small_result else '?'} (finished {small_row.updated_at if small_row else '?'})")
    rows = []
    for name, values in ((f"while a {BIG_MB} MB upload is ingested ({bursts} bursts)", acks),
                         (f"nothing ingested ({QUIET_BURSTS} bursts, same machine)", quiet)):
        rows.append([name, len(values), round(percentile(values, 50), 1),
                     target(percentile(values, 95), 100, higher=False, digits=1),
                     target(max(values), 3000, higher=False, digits=1)])
    table(f"Slack ack latency (ms, as the sender saw it), bursts of {BURST} signed events",
          ["server", "events", "p50", "p95", "max"], rows,
          note="Parsing runs in a worker process, chunking on a thread, embedding in batches on threads, all "
               "under the job's time budget; the acks share the server process with the latter two.")
    ws.results["robustness_acks"] = {"sender_ms": acks, "quiet_ms": quiet, "ingest_s": ingest_s}


def _nested_html_refusal() -> tuple[float, str]:
    from retrieval.parse import ParseError, parse_bytes

    data = ("<html><body>" + "<div>" * 16_000 + "<p>Deep.</p>" + "</div>" * 16_000 + "</body></html>").encode()
    t0 = time.perf_counter()
    try:
        parse_bytes(data, filename="deep.html")
        return time.perf_counter() - t0, "parsed (not refused)"
    except ParseError as exc:
        return time.perf_counter() - t0, str(exc)[:80]


async def section_robustness(ws: Workspace) -> None:
    from bench.report import table, target

    seconds, reason = _nested_html_refusal()
    table("16,000-deep HTML upload", ["outcome", "seconds"], [[reason, target(seconds, 1.0, higher=False)]])
    rows = await _cli_times(ws)
    table("CLI wall time (s), each a new process", ["command", "seconds", "target"], rows,
          note="--help and docs load no model (target 2 s); a cold ask loads both models and the index and "
               "warms them before the question (target 8 s).")
    await _acks_while_ingesting(ws)
