"""App Home blocks for a policy owner: the sources (synced folders and websites) their documents come
from, with schedule, last run and errors. Pure builders: the listener reads the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from store.sources import SourceRecord

SHOWN = 10


def _escape(text: str) -> str:
    # Slack mrkdwn treats these three as control characters.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _schedule(every_s: int | None) -> str:
    if not every_s:
        return "on demand (`cairn sync`)"
    for unit, seconds in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if every_s % seconds == 0:
            count = every_s // seconds
            return f"every {count} {unit}{'s' if count != 1 else ''}"
    return f"every {every_s} s"


def source_line(source: SourceRecord) -> str:
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(source.last_counts.items()))
    last = (f"last run {source.last_finished_at[:16].replace('T', ' ')} UTC: {source.last_status}"
            f"{' (' + counts + ')' if counts else ''}" if source.last_finished_at else "not run yet")
    line = f"*{_escape(source.location)}* · {source.kind} · {_schedule(source.every_s)}\n{_escape(last)}"
    if source.running_since:
        line += " · running now"
    if source.last_error:
        line += f"\n:warning: {_escape(source.last_error[:300])}"
    return line


def build_source_blocks(sources: Sequence[SourceRecord]) -> list[dict[str, Any]]:
    """Nothing for an owner without synced documents; otherwise a header and one section per source."""
    if not sources:
        return []
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "emoji": True,
                                                                "text": f"Kept in sync ({len(sources)})"}}]
    blocks += [{"type": "section", "text": {"type": "mrkdwn", "text": source_line(s)[:3000]}}
               for s in sources[:SHOWN]]
    if len(sources) > SHOWN:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn",
                                                        "text": f"…and {len(sources) - SHOWN} more (`cairn sources`)"}]})
    return blocks
