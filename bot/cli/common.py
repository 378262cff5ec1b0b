"""Helpers shared by the command modules: opening services, printing JSON, resolving `--as`.

Building the parser imports every command module, so their top-level imports stay light (settings,
the stores, argparse): what a command needs of the index, the models, the graph or Slack it imports
inside its handler. `cairn --help` and the database-only commands then start in well under a second
(tests/bot/cli/test_startup.py keeps it so)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from bot.services import open_services, running_server
from bot.settings import Settings
from store.access import AccessFileError

if TYPE_CHECKING:
    from bot.services import Services
    from store.records import Scope


class CommandError(Exception):
    """A problem the user can fix; printed without a traceback."""


_UPLOAD = re.compile(r"\bupload(?= (?:it|them)\b)")


def command_line_wording(message: str | None, *, verb: str = "ingest") -> str | None:
    """An ingestion error as the command line should say it: the parser and the job queue word their
    advice for the Slack upload ("… and upload it again", "… upload them separately"), which a
    terminal user does not do; `verb` is what they do instead (`cairn ingest`, `cairn sync`)."""
    if not message:
        return message
    return _UPLOAD.sub(verb, message)


def emit_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


@asynccontextmanager
async def local_services(settings: Settings, *, warm: bool = True) -> AsyncIterator[Services]:
    """Open the index in this process, or explain clearly that the running server holds it. `warm`:
    load the models and index legs before the first question (commands that search or answer)."""
    from retrieval.index import IndexLockedError

    try:
        async with open_services(settings, warm=warm) as services:
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
