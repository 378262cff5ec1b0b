"""Sources kept in sync: a folder (or git checkout) or a website mirrored into the collection.

`SyncRunner.run(source)` lists the source (directory.py, website.py), submits what is new or changed
through the ingestion hand-over, and withdraws what is gone (runner.py). Sources and what each last saw
live in store/sources.py; `parse_duration` reads the `--every` schedule.
"""

from __future__ import annotations

import re

from retrieval.sync.model import ListingError
from retrieval.sync.runner import ItemResult, SyncReport, SyncRunner, source_options

__all__ = ["ItemResult", "ListingError", "SyncReport", "SyncRunner", "kind_of", "parse_duration", "source_options"]

_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MIN_EVERY_S = 60  # a schedule tighter than a minute would mostly measure the site's patience


def parse_duration(text: str) -> int:
    """'90s', '15m', '1h30m', '1d' → seconds (at least a minute)."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"{text!r} is not a duration: use e.g. 30m, 1h, 6h, 1d")
    seconds = sum(int(n) * _UNIT_S[u] for n, u in parts)
    if seconds < MIN_EVERY_S:
        raise ValueError(f"{text!r} is shorter than a minute; sync at most once a minute")
    return seconds


def kind_of(location: str) -> str:
    return "website" if location.startswith(("http://", "https://")) else "directory"
