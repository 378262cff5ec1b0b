"""The long-running process `cairn serve` starts: the surfaces and workers wired together.

It owns the index while it runs (Qdrant Edge is single-process): CAIRN_HOME/server.json {pid, port}
tells CLI commands so, and its ingestion worker picks up the jobs they hand over (and, at start, the
jobs a previous server left mid-way). It serves Slack (Socket Mode or `/slack/events`), the HTTP API
on the same port, and the scheduled jobs (bot/scheduler.py). Draining on a signal: stop taking
requests, let the answers in flight reach their threads, then stop the workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Generator
from typing import TYPE_CHECKING, Any

import uvicorn

from bot.checks import Check
from bot.services import Services, server_file
from bot.settings import Settings
from bot.slack.job_status import JobStatusNotifier
from bot.slack.preflight import SLACK_UNREACHABLE, describe_network_error, log_checks, slack_checks
from graph.answerers.extractive import prepare_answer_vectors
from store.disk import LowDiskError

if TYPE_CHECKING:  # imported where they are built: a CLI command need not load them
    from fastapi import FastAPI
    from slack_bolt.async_app import AsyncApp

log = logging.getLogger(__name__)

INGEST_POLL_S = 3.0
PREPARE_BATCH = 32  # chunks whose answer sentences are prepared per worker pass (~2 s of encoding)
DRAIN_S = 20.0


class ServeError(Exception):
    """Why the server cannot start or had to stop (a busy port, a worker that died)."""


@contextlib.asynccontextmanager
async def presence(settings: Settings, *, port: int, mode: str | None) -> AsyncIterator[None]:
    """CAIRN_HOME/server.json while the server runs: how CLI commands learn that it owns the index."""
    path = server_file(settings)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "port": port, "slack": mode}))
    tmp.replace(path)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()


async def take_over_jobs(settings: Settings, services: Services) -> list[str]:
    """Release the leases a previous server left on its jobs (it crashed, or stopped mid-job), so the
    worker resumes them at once instead of after the lease runs out. Safe because this process holds
    the embedded index: no other process can be running a job. With QDRANT_URL other processes may
    be (a local `cairn ingest`), so their leases stand."""
    if settings.qdrant_url:
        return []
    released = await services.jobs.release_leases()
    if released:
        log.info("resuming %d job(s) a previous server left unfinished: %s", len(released), ", ".join(released))
    return released


async def ingestion_pass(services: Services, notifier: JobStatusNotifier | None = None) -> list[Any]:
    """Run every runnable job; with Slack, keep each upload's status message in step with its job row
    (at each step, and a catch-up afterwards for messages a crash or a Slack failure left behind)."""
    done = await services.ingestor.run_pending(on_progress=notifier)
    if notifier is not None:
        await notifier.catch_up()
    # Then, a batch at a time, what makes answers on new chunks fast (see prepare_answer_vectors).
    await prepare_answer_vectors(services.catalog, services.embedder, limit=PREPARE_BATCH)
    return done


async def ingestion_worker(services: Services, *, interval_s: float = INGEST_POLL_S,
                           notifier: JobStatusNotifier | None = None) -> None:
    """Process the jobs CLI commands and Slack uploads hand over (and any left from a crash), every few seconds."""
    while True:
        try:
            done = await ingestion_pass(services, notifier)
            for result in done:
                log.info("ingest %s: %s", getattr(result, "doc_id", "?"), getattr(result, "status", "?"))
        except asyncio.CancelledError:
            raise
        except LowDiskError as exc:
            log.warning("ingestion waits: %s", exc)
        except Exception:
            log.exception("ingestion worker pass failed; retrying")
        await asyncio.sleep(interval_s)


async def settle_heap(services: Services) -> None:
    """Load the models, then take everything alive at start-up out of the garbage collector's view.

    The models, graphs and libraries are millions of long-lived objects; a full collection over them
    stalls the event loop for ~100 ms, longer than a Slack ack may take under a burst.
    """
    await asyncio.to_thread(services.embedder.warm_up)
    gc.collect()
    gc.freeze()


def build_http(services: Services, slack_app: AsyncApp | None) -> FastAPI:
    """The HTTP app (bot/http/app.py) with Bolt's `/slack/events` mounted when Slack runs over HTTP."""
    from bot.http.app import create_http_app

    handler = None
    if slack_app is not None:
        from bot.slack.http_events import SlackEvents

        handler = SlackEvents(slack_app, signing_secret=services.settings.slack_signing_secret)
    return create_http_app(services, slack_handler=handler)


def bind(host: str, port: int) -> socket.socket:
    """Bind before anything starts, so a busy port is a clear error rather than uvicorn's exit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port") from exc
    sock.set_inheritable(True)
    return sock


SLACK_RETRY_FIRST_S = 2.0
SLACK_RETRY_MAX_S = 300.0


class SlackLink:
    """Slack reached in the background, so that Slack being down never takes the rest of the server down.

    It runs the preflight checks (token, scopes, channels; logged, and listed on /readyz under `slack`)
    and, in Socket Mode, opens the socket. While the Web API cannot be reached it retries with
    exponential backoff (SLACK_RETRY_FIRST_S doubling up to SLACK_RETRY_MAX_S); /healthz, /v1/retrieve,
    the ingestion worker and the jobs run meanwhile. A refused token is not retried: it needs a person.
    """

    def __init__(self, settings: Settings, services: Services, slack_app: AsyncApp, http_app: FastAPI, *,
                 socket_mode: bool, first_delay_s: float | None = None, max_delay_s: float | None = None) -> None:
        self.settings, self.services, self.slack_app, self.http_app = settings, services, slack_app, http_app
        self.socket_mode = socket_mode
        self.first_delay_s = SLACK_RETRY_FIRST_S if first_delay_s is None else first_delay_s
        self.max_delay_s = SLACK_RETRY_MAX_S if max_delay_s is None else max_delay_s
        self.socket_handler: Any = None
        self.attempts = 0
        self._report(["slack: connecting"])

    def _report(self, problems: list[str]) -> None:
        self.http_app.state.cairn.slack_problems = problems

    async def run(self) -> None:
        delay = self.first_delay_s
        while True:
            self.attempts += 1
            try:
                checks = await slack_checks(self.slack_app.client, self.settings, self.services.access)
            except Exception as exc:  # slack_checks turns what it knows into checks; this is the rest
                log.exception("slack preflight failed")
                checks = [Check(SLACK_UNREACHABLE, "fail", f"the check failed: {describe_network_error(exc)}")]
            log_checks(checks)
            problems = [f"{c.name}: {c.detail}" for c in checks if c.status != "ok"]
            reached = not any(c.name == SLACK_UNREACHABLE for c in checks)
            if reached and self.socket_mode:
                try:
                    await self._connect()
                except Exception as exc:
                    reached = False
                    problems.append(f"{SLACK_UNREACHABLE}: Socket Mode cannot connect "
                                    f"({describe_network_error(exc)}); check SLACK_APP_TOKEN and the network")
            self._report(problems)
            if reached:
                return
            log.warning("slack unreachable (attempt %d); retrying in %.1f s", self.attempts, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_delay_s)

    async def _connect(self) -> None:
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

        handler = AsyncSocketModeHandler(self.slack_app, self.settings.slack_app_token)
        try:
            await handler.connect_async()
        except BaseException:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await handler.close_async()
            raise
        self.socket_handler = handler

    async def close(self) -> None:
        if self.socket_handler is not None:
            with contextlib.suppress(Exception):
                await self.socket_handler.close_async()


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: serve() installs one handler for the whole process."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


async def run_server(settings: Settings, services: Services, *, mode: str | None, host: str, port: int,
                     stop: asyncio.Event | None = None) -> None:
    # One start-up and shut-down sequence, kept in one function (a little over 60 lines) because
    # its order is the point: signals, workers, HTTP, Slack (in the background), then the same in reverse.
    from bot.scheduler import run_jobs
    from bot.slack.app import create_app
    from bot.slack.context import WorkTracker

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)

    sock = bind(host, port)
    await settle_heap(services)
    work = WorkTracker()
    slack_app = create_app(settings, services, work=work) if mode else None
    http_app = build_http(services, slack_app if mode == "http" else None)
    # log_config=None: the CLI configured logging; uvicorn must not replace it.
    server = _Server(uvicorn.Config(http_app, host=host, port=port, log_config=None, lifespan="on"))
    notifier = JobStatusNotifier(client=slack_app.client, jobs=services.jobs) if slack_app else None
    link = SlackLink(settings, services, slack_app, http_app, socket_mode=mode == "socket") if slack_app else None
    await take_over_jobs(settings, services)
    tasks = [asyncio.create_task(ingestion_worker(services, notifier=notifier), name="ingestion-worker"),
             # APScheduler jobs (bot/scheduler.py): classifier, expiry, weekly digest, publish-by-date, retention
             asyncio.create_task(run_jobs(services, slack_client=slack_app.client if slack_app else None),
                                 name="jobs"),
             asyncio.create_task(server.serve(sockets=[sock]), name="http")]
    # Not among `tasks`: it ends once Slack is reached, and the server does not stop with it.
    slack_task = asyncio.create_task(link.run(), name="slack") if link is not None else None
    where = {"socket": "Slack over Socket Mode", "http": f"Slack Events at http://{host}:{port}/slack/events",
             None: "no Slack (SLACK_BOT_TOKEN not set)"}[mode]
    print(f"cairn serve: {where}; HTTP API on http://{host}:{port}; pid {os.getpid()}. Ctrl-C stops.",
          file=sys.stderr, flush=True)
    try:
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait([waiter, *tasks], return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception():
                raise ServeError(f"{task.get_name()} stopped: {task.exception()}")
    finally:
        # Stop taking requests (uvicorn finishes the ones it has and runs the app's shutdown), let the
        # answers in flight reach their threads, then stop the worker and the jobs.
        if slack_task is not None and link is not None:
            slack_task.cancel()
            await asyncio.gather(slack_task, return_exceptions=True)
            await link.close()
        server.should_exit = True
        http_task = next(t for t in tasks if t.get_name() == "http")
        with contextlib.suppress(Exception):
            async with asyncio.timeout(DRAIN_S):
                await asyncio.gather(http_task, work.wait_idle(), return_exceptions=True)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(sig)
