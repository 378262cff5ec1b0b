"""The kill switch: pause the LLM or the tools (retrieval) without stopping the app.

Two sources, either one pauses:
  * the environment, `CAIRN_PAUSE=llm,tools` (fixed for the life of the process);
  * the `controls` table, written by `cairn pause KIND` / `cairn unpause KIND` (or `set_paused`),
    read through a short cache so every process sharing the database sees a change within
    `CAIRN_CONTROLS_CACHE` seconds (default 2) without a database read per question.

What a pause means for callers (the graph runner and the HTTP API consult `is_paused`):
  * "llm" paused   → answer with the extractive answerer; nothing is refused.
  * "tools" paused → no retrieval: the turn routes to escalate with reason `retrieval_unavailable`
                     and the user is told plainly that lookups are paused and a person will answer;
                     `/v1/retrieve` answers 503 with error "paused".
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import aiosqlite

from store.db import iso, transaction

log = logging.getLogger(__name__)

Kind = Literal["llm", "tools"]
KINDS: tuple[Kind, ...] = ("llm", "tools")


def _row_name(kind: str) -> str:
    return f"pause.{kind}"


@dataclass(frozen=True)
class SwitchState:
    kind: str
    paused: bool
    source: str | None  # "env" | "admin" | None
    by: str | None = None
    reason: str | None = None
    updated_at: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "paused": self.paused, "source": self.source, "by": self.by,
                "reason": self.reason, "updated_at": self.updated_at}


def check_kind(kind: str) -> Kind:
    if kind not in KINDS:
        raise ValueError(f"unknown switch {kind!r}: expected one of {', '.join(KINDS)}")
    return kind  # type: ignore[return-value]


class Controls:
    def __init__(self, db: aiosqlite.Connection, *, env_paused: frozenset[str] = frozenset(),
                 cache_s: float = 2.0, clock: Callable[[], float] = time.monotonic) -> None:
        unknown = set(env_paused) - set(KINDS)
        if unknown:
            raise ValueError(f"CAIRN_PAUSE: unknown switch(es) {sorted(unknown)}; expected {', '.join(KINDS)}")
        self._db = db
        self._env = frozenset(env_paused)
        self._cache_s = cache_s
        self._clock = clock
        self._cached: dict[str, SwitchState] | None = None
        self._cached_at = 0.0

    async def is_paused(self, kind: str) -> bool:
        """True while `kind` ("llm" | "tools") is paused. If the table cannot be read, the last known
        state holds (never an exception into a user's turn)."""
        check_kind(kind)
        if kind in self._env:
            return True
        return (await self._states()).get(kind, SwitchState(kind, False, None)).paused

    async def state(self) -> list[SwitchState]:
        """Every switch, env overrides included (for `cairn controls` and `/readyz`)."""
        rows = await self._states(fresh=True)
        out = []
        for kind in KINDS:
            if kind in self._env:
                out.append(SwitchState(kind, True, "env", reason="CAIRN_PAUSE"))
            else:
                out.append(rows.get(kind, SwitchState(kind, False, None)))
        return out

    async def set_paused(self, kind: str, paused: bool, *, by: str | None = None,
                         reason: str | None = None) -> SwitchState:
        check_kind(kind)
        now = iso()
        value = json.dumps({"paused": paused, "by": by, "reason": reason})
        async with transaction(self._db) as conn:
            await conn.execute(
                "INSERT INTO controls (name, value, updated_at) VALUES (?,?,?)"
                " ON CONFLICT(name) DO UPDATE SET value=excluded.value, updated_at=excluded.updated_at",
                (_row_name(kind), value, now))
        self._cached = None
        log.info("controls.changed", extra={"kind": kind, "paused": paused, "by": by})
        return SwitchState(kind, paused, "admin" if paused else None, by=by, reason=reason, updated_at=now)

    @property
    def env_paused(self) -> frozenset[str]:
        return self._env

    async def _states(self, *, fresh: bool = False) -> dict[str, SwitchState]:
        now = self._clock()
        if not fresh and self._cached is not None and now - self._cached_at < self._cache_s:
            return self._cached
        try:
            marks = ",".join("?" * len(KINDS))
            async with self._db.execute(f"SELECT name, value, updated_at FROM controls WHERE name IN ({marks})",
                                        [_row_name(k) for k in KINDS]) as cur:
                rows = await cur.fetchall()
        except Exception as exc:
            log.warning("controls.read_failed", extra={"error": type(exc).__name__})
            return self._cached or {}
        states: dict[str, SwitchState] = {}
        for name, value, updated_at in rows:
            kind = str(name).removeprefix("pause.")
            try:
                data = json.loads(value)
                paused = bool(data.get("paused"))
            except (ValueError, AttributeError):
                data, paused = {}, str(value).strip().lower() in {"1", "true", "on", "paused"}
            states[kind] = SwitchState(kind, paused, "admin" if paused else None, by=data.get("by"),
                                       reason=data.get("reason"), updated_at=updated_at)
        self._cached, self._cached_at = states, now
        return states
