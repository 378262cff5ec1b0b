"""`cairn serve [--socket | --http] [--port N]`: the long-running process.

It owns the index while it runs (Qdrant Edge is single-process): CAIRN_HOME/server.json {pid, port}
tells CLI commands so, and its ingestion worker picks up the jobs they hand over (and, at start, the
jobs a previous server left mid-way, without waiting for their leases to run out). It serves Slack,
over Socket Mode (SLACK_APP_TOKEN; no public URL needed) or the HTTP Events API at `/slack/events`
(SLACK_SIGNING_SECRET; every request's signature checked, replays older than five minutes
rejected), plus the HTTP API (/v1/retrieve, /healthz, /readyz, /metrics) on --port in both modes,
and the scheduled jobs (bot/scheduler.py).
"""

from __future__ import annotations

import argparse
import logging
import os

from bot.cli.common import CommandError, local_services
from bot.logging_setup import configure_logging
from bot.services import running_server
from bot.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_PORT = 3000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="run Slack (Socket Mode or HTTP Events API) and the HTTP API",
        description="Serve Slack and the HTTP API (/v1/retrieve, /healthz, /readyz, /metrics). "
                    "--socket: Slack over Socket Mode (needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN). "
                    "--http: Slack Events API at POST /slack/events on --port (needs SLACK_BOT_TOKEN and "
                    "SLACK_SIGNING_SECRET). Default: --socket when SLACK_APP_TOKEN is set, else --http. "
                    "Without SLACK_BOT_TOKEN only the HTTP API runs. While it runs it owns the index: "
                    "`cairn ingest` hands its jobs to this process.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--socket", action="store_true", help="Slack over Socket Mode")
    mode.add_argument("--http", action="store_true", help="Slack over the HTTP Events API (/slack/events)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})")
    p.add_argument("--host", default="127.0.0.1",
                   help="HTTP bind address (default 127.0.0.1; 0.0.0.0 to accept outside connections)")
    p.set_defaults(handler=serve)


def slack_mode(args: argparse.Namespace, settings: Settings) -> str | None:
    """"socket", "http", or None (no Slack: HTTP API only). Raises CommandError for a missing token."""
    wanted = "socket" if args.socket else "http" if args.http else None
    if not settings.slack_bot_token:
        if wanted:
            raise CommandError(f"--{wanted} needs SLACK_BOT_TOKEN (see README, Slack installation)")
        return None
    mode = wanted or ("socket" if settings.slack_app_token else "http")
    if mode == "socket" and not settings.slack_app_token:
        raise CommandError("--socket needs SLACK_APP_TOKEN (an app-level token with connections:write)")
    if mode == "http" and not settings.slack_signing_secret:
        raise CommandError("--http needs SLACK_SIGNING_SECRET to verify Slack's requests")
    return mode


async def serve(args: argparse.Namespace, settings: Settings) -> int:
    from bot.server import ServeError, presence, run_server  # the web app, Slack and the scheduler

    mode = slack_mode(args, settings)
    # The long-running process logs JSON lines, redacted unless CAIRN_LOG_CONTENT (bot/logging_setup.py).
    configure_logging(log_content=settings.log_content, level=logging.INFO)
    other = running_server(settings)
    if other and int(str(other.get("pid"))) != os.getpid():
        raise CommandError(f"cairn serve is already running for {settings.cairn_home} (pid {other['pid']})")
    try:
        async with local_services(settings) as services, presence(settings, port=args.port, mode=mode):
            await run_server(settings, services, mode=mode, host=args.host, port=args.port)
    except ServeError as exc:
        raise CommandError(str(exc)) from exc
    return 0


