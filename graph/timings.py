"""Where a turn's time goes: per-stage milliseconds gathered while one turn runs.

The runner opens a collector around a turn (`collect_timings`); the graph's nodes, the conflict
check and the checkpointer add their durations to it (`add_timing`). The collector lives in a
context variable, so the tasks and threads LangGraph starts for the turn report into it and two
concurrent turns never mix.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

_CURRENT: ContextVar[dict[str, float] | None] = ContextVar("cairn_turn_timings", default=None)

S = TypeVar("S")
T = TypeVar("T")


@contextmanager
def collect_timings() -> Iterator[dict[str, float]]:
    """Milliseconds by stage name for everything timed inside the block."""
    spans: dict[str, float] = {}
    token = _CURRENT.set(spans)
    try:
        yield spans
    finally:
        _CURRENT.reset(token)


def add_timing(name: str, ms: float) -> None:
    spans = _CURRENT.get()
    if spans is not None:
        spans[name] = round(spans.get(name, 0.0) + ms, 3)


def timed_node(name: str, node: Callable[[S], Awaitable[T]]) -> Callable[[S], Awaitable[T]]:
    """The node, reporting its duration as `node_<name>_ms` (an interrupt or error included)."""

    @functools.wraps(node)
    async def run(state: S) -> T:
        started = time.perf_counter()
        try:
            return await node(state)
        finally:
            add_timing(f"node_{name}_ms", (time.perf_counter() - started) * 1000)

    return run


def timed_call(name: str, call: Callable[..., T]) -> Callable[..., T]:
    """A plain function reporting its duration as `<name>_ms`."""

    @functools.wraps(call)
    def run(*args: Any, **kwargs: Any) -> T:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            add_timing(f"{name}_ms", (time.perf_counter() - started) * 1000)

    return run


def inline_router(route: Callable[[S], T]) -> Callable[[S], Awaitable[T]]:
    """A router as a coroutine. LangGraph runs a plain function of an async graph on a worker
    thread; a router only reads the state, and the hop to a thread and back costs more than it."""

    @functools.wraps(route)
    async def run(state: S) -> T:
        return route(state)

    return run
