"""Store fixtures: a fresh database per test, opened the way the app opens it, on each engine.

`conn` runs every test that uses it twice: on SQLite (a file under the test's temporary directory)
and on PostgreSQL (a database of the test's own on the session's PostgreSQL 15 server, tests/pg.py;
skipped with the reason where PostgreSQL is not installed). `engine` says which one a test runs on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from store.db import open_db

ENGINES = ("sqlite", "postgresql")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_target(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | str:
    """Where `open_db` opens this test's database: a file path (SQLite) or a URL (PostgreSQL)."""
    if engine == "postgresql":
        return str(request.getfixturevalue("pg_database_url"))
    return tmp_path / "cairn.db"


@pytest.fixture
async def conn(database_target: Path | str) -> AsyncIterator[aiosqlite.Connection]:
    db = await open_db(database_target)
    try:
        yield db
    finally:
        await db.close()
