"""The durable checkpointer: langgraph-checkpoint-sqlite on aiosqlite, in its own database file
(settings.checkpoint_path), separate from the catalog so checkpoint writes never wait on it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from graph.timings import add_timing


class TimedSqliteSaver(AsyncSqliteSaver):
    """The SQLite saver, reporting the time a turn spends writing checkpoints (graph/timings.py)."""

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        started = time.perf_counter()
        try:
            return await super().aput(config, checkpoint, metadata, new_versions)
        finally:
            add_timing("checkpoint_put_ms", (time.perf_counter() - started) * 1000)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        started = time.perf_counter()
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        finally:
            add_timing("checkpoint_writes_ms", (time.perf_counter() - started) * 1000)


@asynccontextmanager
async def open_checkpointer(path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(path)
    try:
        await conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a crash of the process loses nothing committed; only a power cut can drop
        # the last few checkpoints (never corrupts). A turn writes a checkpoint per step, and an
        # fsync for each would dominate the turn's latency.
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute("PRAGMA busy_timeout=10000")
        saver = TimedSqliteSaver(conn)
        await saver.setup()
        yield saver
    finally:
        await conn.close()
