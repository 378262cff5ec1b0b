"""Store fixtures: a fresh SQLite database per test, opened the way the app opens it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from store.db import open_db


@pytest.fixture
async def conn(tmp_path: Path) -> AsyncIterator[aiosqlite.Connection]:
    db = await open_db(tmp_path / "cairn.db")
    try:
        yield db
    finally:
        await db.close()
