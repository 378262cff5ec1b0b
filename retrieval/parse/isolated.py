"""Parsing in a separate process, so untrusted files cannot hold the server's interpreter.

A parser is CPU-bound Python: on a thread it still takes the interpreter lock for most of its time,
and the event loop that acknowledges Slack events and answers questions waits for it (a 20 MB
Markdown file held acks around half a second). In a worker process it shares nothing; and a parse
that runs past its job's budget is stopped for real — the worker is killed and replaced — instead of
being left to run on a thread nobody can stop.
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from retrieval.parse import ParseBudget, ParsedDocument, parse_bytes

WORKERS = 2
_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def _background(parent: int) -> None:
    # Parsing is background work: on a busy machine the scheduler serves the server process first.
    os.nice(10)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """A worker never outlives the process it parses for. Killed with -9, that process cannot stop
    its pool; an orphaned worker would keep its inherited stdout and stderr open (whoever waits for
    the dead command's output waits forever) and keep parsing for nobody. Linux delivers SIGKILL
    when the parent dies; elsewhere a watchdog thread notices the parent is gone."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    # `parent` is the pid the pool was made in, passed from there: read here, it would already be
    # init's when the parent was killed while this interpreter was still starting.
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _current() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # spawn: a fresh interpreter, never a fork of a process holding model and database threads.
            _pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_background, initargs=(os.getpid(),))
        return _pool


def _discard(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers (one may be stuck in a parse) and start afresh on the next call."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    for process in list(getattr(pool, "_processes", {}).values()):
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


async def parse_in_worker(data: bytes, *, filename: str, budget: ParseBudget | None = None) -> ParsedDocument:
    """`parse_bytes` in a worker process; cancelling the call (a job's time ran out, or it was cancelled)
    kills the worker."""
    pool = _current()
    future = asyncio.get_running_loop().run_in_executor(pool, functools.partial(parse_bytes, data,
                                                                                filename=filename, budget=budget))
    try:
        return await future
    except asyncio.CancelledError:
        _discard(pool)
        raise
    except BrokenProcessPool as exc:  # the worker died (killed, or crashed on this file)
        _discard(pool)
        raise RuntimeError("the parsing process stopped while reading this file") from exc
