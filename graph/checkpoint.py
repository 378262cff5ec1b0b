"""The durable checkpointer: langgraph-checkpoint-sqlite on aiosqlite, in its own database file
(settings.checkpoint_path), separate from the catalog so checkpoint writes never wait on it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver


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
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver
    finally:
        await conn.close()
