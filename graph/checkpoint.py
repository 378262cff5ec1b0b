"""The durable checkpointer: langgraph-checkpoint-sqlite on aiosqlite, in its own database file
(settings.checkpoint_path), separate from the catalog so checkpoint writes never wait on it; or,
with CAIRN_DATABASE_URL, langgraph-checkpoint-postgres in that PostgreSQL database
(graph/checkpoint_pg.py), so that every replica reads and resumes the same conversations."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.checkpoint.sqlite.utils import load_pending_writes, pending_writes_sql

from graph.timings import add_timing


class Timed(BaseCheckpointSaver[str]):
    """A saver that reports the time a turn spends writing checkpoints and pending writes
    (graph/timings.py), put in front of either engine's saver."""

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


class FewerTripsSqliteSaver(AsyncSqliteSaver):
    """The SQLite saver in fewer thread hand-offs.

    Every turn reads its session's latest checkpoint and writes one. The library's saver sends each
    step of those to the connection's thread separately (open a cursor, execute, fetch, close the
    cursor; execute, close, commit), and each trip costs a thread hand-off. The two below send the
    same statements in fewer trips (execute_fetchall: execute and fetch in one); the rows, what is
    committed and when are the library's.
    """

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if get_checkpoint_id(config):  # a given checkpoint (history, time travel): the library's path
            return await super().aget_tuple(config)
        await self.setup()
        checkpoint_ns = config["configurable"].get("checkpoint_ns", "")
        async with self.lock:
            rows = await self.conn.execute_fetchall(
                "SELECT thread_id, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints"
                " WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id DESC LIMIT 1",
                (str(config["configurable"]["thread_id"]), checkpoint_ns))
            row = next(iter(rows), None)
            if row is None:
                return None
            thread_id, checkpoint_id, parent_checkpoint_id, type_, checkpoint, metadata = row
            writes = await self.conn.execute_fetchall(
                pending_writes_sql(getattr(self, "_has_task_path", True)), (thread_id, checkpoint_ns, checkpoint_id))
        return CheckpointTuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns, "checkpoint_id": checkpoint_id}},
            self.serde.loads_typed((type_, checkpoint)),
            cast(CheckpointMetadata, json.loads(metadata) if metadata is not None else {}),
            ({"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                               "checkpoint_id": parent_checkpoint_id}} if parent_checkpoint_id else None),
            load_pending_writes(writes, self.serde),
        )

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        await self.setup()
        thread_id = config["configurable"]["thread_id"]
        checkpoint_ns = config["configurable"]["checkpoint_ns"]
        type_, serialized_checkpoint = self.serde.dumps_typed(checkpoint)
        serialized_metadata = json.dumps(get_checkpoint_metadata(config, metadata),
                                         ensure_ascii=False).encode("utf-8", "ignore")
        async with self.lock:
            await self.conn.execute_fetchall(
                "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,"
                " parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (str(thread_id), checkpoint_ns, checkpoint["id"], config["configurable"].get("checkpoint_id"),
                 type_, serialized_checkpoint, serialized_metadata))
            await self.conn.commit()  # committed before the run goes on, as the library's aput
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}


class TimedSqliteSaver(Timed, FewerTripsSqliteSaver):
    """The SQLite saver in fewer trips, reporting the time a turn spends writing checkpoints."""


@asynccontextmanager
async def open_checkpointer(path: Path, *, database_url: str | None = None
                            ) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """SQLite at `path`, or PostgreSQL at `database_url` when one is given (then nothing is written at
    `path`; the PostgreSQL saver and its driver are imported only then: graph/checkpoint_pg.py)."""
    if database_url:
        from graph.checkpoint_pg import open_postgres

        async with open_postgres(database_url) as on_postgres:
            yield on_postgres
        return
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
