"""`cairn` console script. Each command group lives in bot/cli/<group>.py with `register(sub)`."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import logging
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

from bot.cli import analytics, conversation, doctor, knowledge, ops, proposals, retrieval, serve, sources
from bot.cli.common import CommandError
from bot.settings import Settings
from store.untrusted import clean_text

COMMAND_MODULES = (knowledge, sources, retrieval, ops, conversation, proposals, serve, analytics, doctor)

# A process that loaded the models spends a second or more at exit collecting objects that die with
# it anyway; frozen, they are left to the operating system. Registered first, so it runs last.
atexit.register(gc.freeze)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cairn", description="Answers policy questions only from an approved document collection.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    parser.add_argument("--version", action="version", version=f"cairn {cairn_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def cairn_version() -> str:
    try:
        return version("cairn")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Output cut short by its reader (`cairn search … | head`) ends quietly."""
    try:
        return _run(argv)
    except BrokenPipeError:
        _silence_stdout()
        return 141  # as a shell reports a process stopped by SIGPIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null: what is still buffered would otherwise fail again at exit, with Python's
    'Exception ignored … BrokenPipeError' on stderr."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (captured, closed): nothing left to flush to a pipe
        pass


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    # Arguments are text from outside: an argv of invalid bytes reaches Python as lone surrogates.
    args = parser.parse_args([clean_text(a) for a in (sys.argv[1:] if argv is None else argv)])
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    settings = Settings()
    try:
        return int(asyncio.run(args.handler(args, settings)) or 0)
    except KeyboardInterrupt:
        return 130
    except CommandError as exc:
        print(f"cairn {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
