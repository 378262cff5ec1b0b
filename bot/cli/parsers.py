"""Building a command's parser: its name, help, handler and (almost always) `--json`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_command(sub: argparse._SubParsersAction, name: str, handler: Callable[..., Any], *, json: bool = True,
                **parser_args: Any) -> argparse.ArgumentParser:
    """A subcommand that runs `handler`; with `json` it takes `--json` (one JSON document on stdout)."""
    p = sub.add_parser(name, **parser_args)
    if json:
        p.add_argument("--json", action="store_true")
    p.set_defaults(handler=handler)
    return p
