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

from langchain_core.runnables import Runnable, RunnableConfig

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


def inline_router(route: Callable[[S], T]) -> Runnable[S, T]:
    """A router as a runnable that calls it in place. LangGraph runs a plain function of an async
    graph on a worker thread, and an async one as a traced child run: a callback run and an asyncio
    task of its own for every routing decision, three times a turn. A router only reads the state
    and returns a node name, so it is called directly, on the loop, with nothing around it; the
    branch reads the same state (LangGraph reads the source node's input schema for it)."""
    return _InlineRouter(route)


class _InlineRouter(Runnable[S, T]):
    def __init__(self, route: Callable[[S], T]) -> None:
        self.route = route
        self.name = getattr(route, "__name__", None)  # the branch's name, as LangGraph would give it

    def invoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> T:
        return self.route(input)

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> T:
        return self.route(input)
