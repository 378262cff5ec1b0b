"""Helpers shared by the command modules: opening services, printing JSON, resolving `--as`."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.services import Services, open_services, running_server
from bot.settings import Settings
from retrieval.index import IndexLockedError
from store.access import AccessFileError
from store.records import Scope


class CommandError(Exception):
    """A problem the user can fix; printed without a traceback."""


def emit_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


@asynccontextmanager
async def local_services(settings: Settings) -> AsyncIterator[Services]:
    """Open the index in this process, or explain clearly that the running server holds it."""
    try:
        async with open_services(settings) as services:
            yield services
    except IndexLockedError as exc:
        server = running_server(settings)
        hint = f" (server pid {server['pid']})" if server else ""
        raise CommandError(f"{exc}{hint}. Stop the server, or set QDRANT_URL to share a Qdrant server.") from exc
    except AccessFileError as exc:
        raise CommandError(str(exc)) from exc


def resolve_as(services: Services, as_user: str | None) -> Scope:
    try:
        return services.access.resolve_cli(as_user)
    except AccessFileError as exc:
        raise CommandError(str(exc)) from exc
