"""Graph fixtures: a private copy of the ingested sample handbook per test (built once per session by
tests/conftest.py), and services opened inside the test itself, so a test can close everything and
reopen from disk (the restart tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.services import Services, open_services
from retrieval.embed import Embedder
from store.records import Scope
from tests.conftest import copy_home, make_settings

LONDON = "What is the nightly hotel limit in London?"


@pytest.fixture
def home(tmp_path: Path, handbook_template: Path) -> Path:
    target = tmp_path / "home"
    copy_home(handbook_template, target)
    return target


@pytest.fixture
def open_home(home: Path, embedder: Embedder):
    """`async with open_home(**settings) as svc:` — services over this test's home; reopenable."""

    @asynccontextmanager
    async def opener(**overrides: object) -> AsyncIterator[Services]:
        values: dict[str, object] = {"CAIRN_CHAT_MODEL": None, **overrides}
        async with open_services(make_settings(home, **values), embedder=embedder) as svc:
            yield svc

    return opener


def bob(svc: Services) -> Scope:
    return svc.access.resolve_cli("bob")
