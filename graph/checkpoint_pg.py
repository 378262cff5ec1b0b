"""The checkpointer on PostgreSQL (CAIRN_DATABASE_URL): langgraph-checkpoint-postgres in the state
store's database, its own tables beside the store's. Imported only when a database URL is set."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from graph.checkpoint import Timed

# The advisory lock replicas take around the checkpoint tables' creation on a new database (the
# library's migrations are not safe to run twice at once); the state store's are others (store/pg.py).
CHECKPOINT_SETUP_LOCK = 0x43414952_43500001
# Connections to PostgreSQL a process keeps for its checkpoints (a turn holds one per checkpoint call).
PG_POOL_SIZE = 4


class TimedPostgresSaver(Timed, AsyncPostgresSaver):
    """The PostgreSQL saver, reporting the time a turn spends writing checkpoints (graph/timings.py)."""


@asynccontextmanager
async def open_postgres(url: str) -> AsyncIterator[AsyncPostgresSaver]:
    """A pool of autocommit connections (the library's requirement), checked before each use so that a
    connection the server dropped (a restart, a failover) is replaced rather than handed to a turn."""
    pool = AsyncConnectionPool(url, min_size=1, max_size=PG_POOL_SIZE, open=False,
                               kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
                               check=AsyncConnectionPool.check_connection)
    await pool.open(wait=True, timeout=30)
    try:
        saver = TimedPostgresSaver(pool)  # type: ignore[arg-type]
        async with pool.connection() as conn:
            # Polled, never waited for: the library's migrations build indexes CONCURRENTLY, which waits
            # for every open statement, a waiting pg_advisory_lock included: that would never end.
            await _take_polling(conn, CHECKPOINT_SETUP_LOCK)
            try:
                await saver.setup()
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (CHECKPOINT_SETUP_LOCK,))
        yield saver
    finally:
        await pool.close()


async def _take_polling(conn: Any, key: int, *, every_s: float = 0.05) -> None:
    """Take a session advisory lock by trying again and again (see `open_postgres` for why not wait on it)."""
    while True:
        row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS held", (key,))).fetchone()
        if row and row["held"]:
            return
        await asyncio.sleep(every_s)
