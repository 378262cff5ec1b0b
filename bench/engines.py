"""The state store on PostgreSQL next to SQLite, in one run on one machine (the `engines` section).

Each engine gets a home of its own beside the workspace, opened with the workspace's models: on
SQLite the state is the home's cairn.db and checkpoints.db; on PostgreSQL (`CAIRN_DATABASE_URL`,
a schema of its own on a PostgreSQL 15 server started here by tests/pg.py) every table and the
LangGraph checkpoints live in the server. The index is embedded Qdrant Edge under each home either
way. Durability costs neither engine anything: the test server runs with fsync and synchronous
commits off, and the SQLite homes sit under the workspace (memory-backed /dev/shm by default).

1. Warm offline turns (`ConversationRunner.ask`, what bench/latency.py times): the Larkspur sample
   handbook's open pages in the default tenant, asked as the CLI's local member. Every question is
   asked once on each engine before the timed pass, so the model caches (query vectors, judge
   scores) are warm for both and the difference left is the engine's; the timed pass alternates
   which engine goes first, question by question, so the machine's load drifts over both alike.
2. Slack acks: bench/slack_ack.py's measurement (`measure_acks`) over each engine's services, two
   bursts per engine in the order SQLite, PostgreSQL, PostgreSQL, SQLite, pooled.
3. Ingest rate: the same GitLab handbook pages through the real hand-over and worker into fresh
   homes, one lane against two. Two worker *processes* on one PostgreSQL database would need one
   index they can both write, and embedded Qdrant Edge is owned by one process (GUIDE §1); without a
   Qdrant server (QDRANT_URL) two processes cannot share it, so what is measured is two lanes in one
   worker (`Ingestor.lanes`, two jobs claimed and run at once) against one, on each engine.

Without PostgreSQL binaries (tests.pg.unavailable_reason) the section says why and prints the
SQLite numbers alone.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.report import log, percentile, table
from bench.slack_ack import CONCURRENT, QUESTIONS, WARMUP, AckRun, measure_acks, sample_docs
from bench.workspace import DEFAULT_TENANT, Doc, IngestRun, Workspace, make_settings
from bot.services import Services, open_services

N_TURNS = int(os.environ.get("CAIRN_BENCH_ENGINE_TURNS", "30"))
N_TURN_WARMUP = 5
ACK_BURSTS = 2  # per engine
ACK_CONCURRENT = CONCURRENT  # events per burst, as the slack_ack section sends
INGEST_MAX_BYTES = 10_000  # GitLab handbook pages up to this size, every other one (22 pages)
INGEST_EVERY = 2
REUSED_REPEATS = 5  # the runs with embeddings reused take under a second each: the median of this many
SQLITE, POSTGRES = "SQLite", "PostgreSQL"


class PgServer(Protocol):
    """What this section uses of tests/pg.py's PgServer."""

    port: int

    def new_database_url(self) -> str: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Engine:
    name: str
    url: str | None = None  # CAIRN_DATABASE_URL (None: SQLite under the home)


@dataclass
class TurnRun:
    ms: list[float] = field(default_factory=list)
    routes: dict[str, int] = field(default_factory=dict)
    stages: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestRate:
    pages: int
    chunks: int
    seconds: float

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.seconds


# -- the pieces, each taking the services (and so the engine) it measures ---------------------------


@asynccontextmanager
async def engine_services(ws: Workspace, engine: Engine, home: Path, *, warm: bool = True) -> AsyncIterator[Services]:
    """Services over `home` with the state on `engine`, sharing the workspace's models."""
    settings = make_settings(home, ws.access_file, CAIRN_DATABASE_URL=engine.url, CAIRN_CHAT_MODEL=None)
    async with open_services(settings, embedder=ws.embedder, warm=warm) as svc:
        yield svc


def turn_questions(n: int) -> list[str]:
    """English questions written for the sample handbook (bench/questions/sample.jsonl and its labels)."""
    from bench.answers import sample_cases

    return [c.question for c in sample_cases() if c.lang == "en"][:n]


async def prepare_turns(svc: Services, questions: Sequence[str]) -> int:
    """What `cairn serve` does after ingestion, for the chunks these questions reach: their answer
    sentences' vectors (bench/latency.py does the same before its turns). Returns how many chunks."""
    from graph.answerers.extractive import prepare_answer_vectors

    scope = svc.access.resolve_cli(None)
    reached = {p.chunk_id for q in questions for p in (await svc.searcher.search(q, scope, top_k=4)).passages}
    prepared = 0
    while batch := await prepare_answer_vectors(svc.catalog, svc.embedder, limit=64, chunk_ids=sorted(reached)):
        prepared += batch
    return prepared


async def timed_turn(svc: Services, question: str, session_id: str, into: TurnRun) -> None:
    """One full offline turn in a new conversation, as the CLI's local member of the default tenant."""
    from bench.latency import _stages

    t0 = time.perf_counter()
    out = await svc.runner.ask(session_id=session_id, scope=svc.access.resolve_cli(None), question=question)
    into.ms.append((time.perf_counter() - t0) * 1000)
    into.routes[out.route] = into.routes.get(out.route, 0) + 1
    for k, v in _stages(out.timings).items():
        into.stages.setdefault(k, []).append(v)


async def measure_turns(engines: dict[str, Services], questions: Sequence[str], warmup: Sequence[str]) -> dict[
        str, TurnRun]:
    """Every question once per engine untimed (warm-up first), then the timed pass, engines alternating
    which goes first question by question."""
    run = uuid.uuid4().hex[:8]  # new conversations even in a kept home
    for svc in engines.values():
        for i, q in enumerate([*warmup, *questions]):
            await svc.runner.ask(session_id=f"bench-engines-warm-{run}-{i}", scope=svc.access.resolve_cli(None),
                                 question=q)
    runs = {name: TurnRun() for name in engines}
    order = list(engines)
    for i, q in enumerate(questions):
        for name in order if i % 2 == 0 else order[::-1]:
            await timed_turn(engines[name], q, f"bench-engines-{run}-{i}", runs[name])
    return runs


async def measure_ack_bursts(engines: dict[str, Services], *, bursts: int,
                             concurrent: int) -> dict[str, list[AckRun]]:
    """bench/slack_ack.py's burst against each engine's services, `bursts` times each in the order
    A, B, B, A, A, B, … so neither engine always runs first; every burst from new people in new DMs."""
    out: dict[str, list[AckRun]] = {name: [] for name in engines}
    order = list(engines)
    for b in range(bursts):
        for name in order if b % 2 == 0 else order[::-1]:
            svc = engines[name]
            out[name].append(await measure_acks(svc.settings, svc, concurrent=concurrent,
                                                first=b * (concurrent + WARMUP)))
    return out


def ingest_docs() -> list[Doc]:
    from bench import datasets as ds

    pages = [d for d in ds.handbook_docs(("gitlab",)) if len(d.data) <= INGEST_MAX_BYTES]
    return pages[::INGEST_EVERY]


async def ingest_rate(ws: Workspace, engine: Engine, docs: Sequence[Doc], *, lanes: int,
                      fresh_database: Callable[[], str] | None = None, computed: bool = True) -> IngestRate:
    """Ingest `docs` into a fresh home (and, on PostgreSQL, a fresh database from `fresh_database`)
    with `lanes` jobs at a time; `computed`: every chunk really embedded, else embeddings reused
    from the workspace's memo (what is left is parse, chunk, catalog, jobs, index)."""
    home = Path(tempfile.mkdtemp(prefix="engines-ingest-", dir=ws.root))
    url = fresh_database() if engine.url is not None and fresh_database is not None else engine.url
    try:
        async with engine_services(ws, Engine(engine.name, url), home / "home", warm=False) as svc:
            svc.ingestor.lanes = lanes
            if computed:
                with ws.memo_recording_only():
                    run = await ws.ingest(docs, tenant=DEFAULT_TENANT, services=svc)
            else:
                run = await ws.ingest(docs, tenant=DEFAULT_TENANT, services=svc)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    _check(run, len(docs))
    return IngestRate(pages=len(docs), chunks=run.chunks, seconds=run.seconds)


def _check(run: IngestRun, pages: int) -> None:
    if run.statuses() != {"published": pages}:
        raise RuntimeError(f"ingest: expected {pages} published, got {run.statuses()}")


# -- the section ----------------------------------------------------------------------------------


async def _postgres() -> tuple[PgServer | None, str | None]:
    """A PostgreSQL 15 server for this section (tests/pg.py), or why there is none."""
    pg = importlib.import_module("tests.pg")  # by name: the type checker stays out of tests/

    reason = pg.unavailable_reason()
    if reason is not None:
        return None, str(reason)
    try:
        return await asyncio.to_thread(pg.PgServer.start), None
    except Exception as exc:  # a server that does not come up is reported, the SQLite numbers still printed
        return None, f"the PostgreSQL server did not start: {str(exc)[:300]}"


def _ratio(values: dict[str, float]) -> str:
    if SQLITE not in values or POSTGRES not in values or not values[SQLITE]:
        return "n/a"
    return f"{values[POSTGRES] / values[SQLITE]:.2f}"


def _difference(values: dict[str, float]) -> str:
    if SQLITE not in values or POSTGRES not in values:
        return "n/a"
    return f"{values[POSTGRES] - values[SQLITE]:+.1f}"


def _row(what: str, values: dict[str, float], names: Sequence[str], digits: int = 1, *,
         difference: bool = False) -> list[object]:
    return [what, *(f"{values[n]:.{digits}f}" if n in values else "n/a" for n in names), _ratio(values),
            *([_difference(values)] if difference else [])]


async def section_engines(ws: Workspace) -> None:
    server, reason = await _postgres()
    names = [SQLITE, POSTGRES]
    if server is None:
        log(f"PostgreSQL not measured, SQLite only: {reason}")
    else:
        log(f"PostgreSQL 15 test server on 127.0.0.1:{server.port} (fsync and synchronous_commit off)")
    root = Path(tempfile.mkdtemp(prefix="engines-", dir=ws.root))
    try:
        engines = [Engine(SQLITE)]
        if server is not None:
            engines.append(Engine(POSTGRES, await asyncio.to_thread(server.new_database_url)))
        turns, acks = await _turns_and_acks(ws, engines, root)
        rates = await _ingest_rates(ws, engines, server)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if server is not None:
            await asyncio.to_thread(server.stop)
    _print(turns, acks, rates, names, reason)


async def _turns_and_acks(ws: Workspace, engines: list[Engine], root: Path) -> tuple[
        dict[str, TurnRun], dict[str, list[AckRun]]]:
    from contextlib import AsyncExitStack

    questions = turn_questions(N_TURN_WARMUP + N_TURNS)
    warmup, measured = questions[:N_TURN_WARMUP], questions[N_TURN_WARMUP:]
    async with AsyncExitStack() as stack:
        opened: dict[str, Services] = {}
        for engine in engines:
            svc = await stack.enter_async_context(engine_services(ws, engine, root / engine.name.lower()))
            ran = await ws.ingest(sample_docs(), tenant=DEFAULT_TENANT, services=svc)
            prepared = await prepare_turns(svc, [*questions, *QUESTIONS])
            log(f"{engine.name}: sample handbook ingested ({ran.chunks} chunks); answer sentences prepared for "
                f"{prepared} chunks the questions reach")
            opened[engine.name] = svc
        t0 = time.perf_counter()
        turns = await measure_turns(opened, measured, [*warmup, *QUESTIONS])
        log(f"turns: {len(measured)} per engine after {len(warmup) + len(QUESTIONS) + len(measured)} untimed, "
            f"{time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        acks = await measure_ack_bursts(opened, bursts=ACK_BURSTS, concurrent=ACK_CONCURRENT)
        log(f"Slack acks: {ACK_BURSTS} bursts of {ACK_CONCURRENT} per engine, {time.perf_counter() - t0:.0f} s")
    return turns, acks


async def _ingest_rates(ws: Workspace, engines: list[Engine], server: PgServer | None) -> dict[
        tuple[str, bool, int], IngestRate]:
    docs = ingest_docs()

    def fresh() -> str:
        assert server is not None
        return server.new_database_url()

    rates: dict[tuple[str, bool, int], IngestRate] = {}
    for computed in (True, False):  # the computed runs fill the memo the reused ones read
        runs: dict[tuple[str, bool, int], list[IngestRate]] = {}
        for k in range(2 * (1 if computed else REUSED_REPEATS)):
            lanes = 1 + k % 2
            for engine in engines if k % 4 in (0, 3) else engines[::-1]:  # SQLite, PG, PG, SQLite, …
                rate = await ingest_rate(ws, engine, docs, lanes=lanes, computed=computed,
                                         fresh_database=fresh if server is not None else None)
                runs.setdefault((engine.name, computed, lanes), []).append(rate)
        for key, got in runs.items():
            rates[key] = sorted(got, key=lambda r: r.seconds)[len(got) // 2]
            log(f"ingest on {key[0]}, {key[2]} lane(s), embeddings {'computed' if computed else 'reused'}: "
                f"{got[0].pages} pages, {got[0].chunks} chunks in " + ", ".join(f"{r.seconds:.2f}" for r in got)
                + " s")
    return rates


def _print(turns: dict[str, TurnRun], acks: dict[str, list[AckRun]], rates: dict[tuple[str, bool, int], IngestRate],
           names: list[str], reason: str | None) -> None:
    header = ["what", *names, "PostgreSQL / SQLite"]
    timed = [*header, "PostgreSQL − SQLite"]
    absent = f" PostgreSQL not measured: {reason}." if reason else ""

    def each(f: Callable[[TurnRun], float]) -> dict[str, float]:
        return {n: f(r) for n, r in turns.items()}

    rows = [_row("turn p50 ms", each(lambda r: percentile(r.ms, 50)), names, difference=True),
            _row("turn p95 ms", each(lambda r: percentile(r.ms, 95)), names, difference=True),
            _row("turn max ms", each(lambda r: max(r.ms)), names, difference=True)]
    for stage in ("checkpoint writes", "graph overhead", "runner", "legs+fuse"):
        rows.append(_row(f"  {stage} p50 ms", {n: percentile(r.stages[stage], 50) for n, r in turns.items()}, names,
                         difference=True))
    rows.append(["routes", *(", ".join(f"{k} {v}" for k, v in sorted(turns[n].routes.items())) if n in turns
                             else "n/a" for n in names), "", ""])
    n = len(next(iter(turns.values())).ms)
    table(f"Warm offline turns, {n} per engine (one new conversation per question)", timed, rows,
          note="ConversationRunner.ask on the sample handbook's open pages, as the CLI's local member; every "
               "question asked once on each engine before, so the models' caches (query vectors, judge scores) "
               "are warm for both: what is left is mostly the engine's part, so the ratio is over a small base "
               "and the difference (ms) is what a turn of the latency section would gain. Stages "
               "from TurnOutcome.timings (bench/latency.py): checkpoint writes are the LangGraph saver's puts; "
               "runner is the session lookup, reading the final state and the turn record; legs+fuse includes "
               "the catalog reads of the search. 1-minute load average when done: "
               f"{os.getloadavg()[0]:.2f}." + absent)

    def pooled(f: Callable[[AckRun], list[float]]) -> dict[str, list[float]]:
        return {name: [v for run in runs for v in f(run)] for name, runs in acks.items()}

    sender, inside = pooled(lambda r: r.sender_ms), pooled(lambda r: r.server_ms)
    answered = {name: sum(r.answered_s for r in runs) / len(runs) for name, runs in acks.items()}
    rows = [_row("ack p50 ms (sender)", {k: percentile(v, 50) for k, v in sender.items()}, names, difference=True),
            _row("ack p95 ms (sender)", {k: percentile(v, 95) for k, v in sender.items()}, names, difference=True),
            _row("ack max ms (sender)", {k: max(v) for k, v in sender.items()}, names, difference=True),
            _row("ack p95 ms (inside the server)", {k: percentile(v, 95) for k, v in inside.items()}, names,
                 difference=True),
            _row(f"all {ACK_CONCURRENT} answered, s (mean of bursts)", answered, names, difference=True)]
    bursts = len(next(iter(acks.values())))
    table(f"Slack event ack latency, {bursts} bursts of {ACK_CONCURRENT} concurrent signed message.im events per "
          "engine (pooled)", timed, rows,
          note="bench/slack_ack.py's measurement over each engine's services: Bolt app behind the HTTP app on a "
               "loopback port, a fake Slack Web API, pre-signed events from a separate sender process; answers run "
               "lazily in the same process (placeholder, then chat.update). Bursts ran in the order SQLite, "
               "PostgreSQL, PostgreSQL, SQLite, each from new people in new DMs." + absent)

    rows = []
    pages = chunks = 0
    for computed in (True, False):
        label = "embeddings computed" if computed else "embeddings reused"
        for lanes in (1, 2):
            got = {name: rates[(name, computed, lanes)] for name in names if (name, computed, lanes) in rates}
            if not got:
                continue
            pages, chunks = next(iter(got.values())).pages, next(iter(got.values())).chunks
            rows.append(_row(f"{label}, {lanes} lane{'s' if lanes > 1 else ''}: pages/s",
                             {k: v.pages_per_s for k, v in got.items()}, names, 2))
            rows.append(_row(f"{label}, {lanes} lane{'s' if lanes > 1 else ''}: chunks/s",
                             {k: v.chunks_per_s for k, v in got.items()}, names, 1))
        speedup = {name: rates[(name, computed, 1)].seconds / rates[(name, computed, 2)].seconds
                   for name in names if (name, computed, 1) in rates and (name, computed, 2) in rates}
        rows.append(_row(f"{label}: 2 lanes ÷ 1 lane", speedup, names, 2))
    table(f"Ingest rate, {pages} GitLab handbook pages ({chunks} chunks), fresh home and database each run",
          header, rows,
          note="Two lanes in ONE worker next to one lane, not two worker processes: two processes would need one "
               "index both can write, and embedded Qdrant Edge is owned by one process (GUIDE §1); no Qdrant "
               "server is available here. Jobs are claimed from the store (FOR UPDATE SKIP LOCKED on PostgreSQL) "
               "all the same. Every other GitLab page of at most 10 KB; submit + run_pending wall time; "
               "'reused' takes the vectors the 'computed' runs made, leaving parse, chunk, catalog, jobs and "
               f"index: the median of {REUSED_REPEATS} runs each (the 'computed' rows: one run each)." + absent)
