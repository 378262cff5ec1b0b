"""`cairn` console script. Each command group lives in bot/cli/<group>.py with `register(sub)`."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import logging
import sys
from collections.abc import Sequence

from bot.cli import analytics, conversation, doctor, knowledge, ops, retrieval, serve, sources
from bot.cli.common import CommandError
from bot.settings import Settings

COMMAND_MODULES = (knowledge, sources, retrieval, ops, conversation, serve, analytics, doctor)

# A process that loaded the models spends a second or more at exit collecting objects that die with
# it anyway; frozen, they are left to the operating system. Registered first, so it runs last.
atexit.register(gc.freeze)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cairn", description="Answers policy questions only from an approved document collection.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
