"""Shared fixtures: one loaded embedding model per session, and the sample handbook ingested once
into a template home that each test copies (so tests stay isolated and fast)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bench.datasets import DATA
from bot.services import Services, open_services, shared_embedder
from bot.settings import Settings
from retrieval.embed import Embedder
from tests.fake_slack import FakeSlack
from tests.pg import PgServer, unavailable_reason

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_HANDBOOK = ROOT / "sample" / "handbook"
SAMPLE_ACCESS = ROOT / "sample" / "access.yml"
# The public data sets beside the checkout, found as the bench finds them wherever the clone is.
SHARED_DATA = DATA


def make_settings(home: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"CAIRN_HOME": home, "CAIRN_ACCESS_FILE": SAMPLE_ACCESS}
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """`cairn serve` run in-process installs the product's JSON handler (with its redaction filter)
    on the root logger; the next test must start with the logging it would have had alone."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL 15 server for this test process (tests/pg.py), started on first use and
    stopped at the end of the session; the tests that use it are skipped, with the reason, only
    where the PostgreSQL binaries are not installed."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    server = PgServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_database_url(pg_server: PgServer) -> Iterator[str]:
    """A `postgresql://` URL of an empty database of this test's own (a schema), dropped after it."""
    url = pg_server.new_database_url()
    try:
        yield url
    finally:
        pg_server.drop_database(url)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return shared_embedder(make_settings(Path("/nonexistent")))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "home")


@pytest.fixture
async def services(settings: Settings, embedder: Embedder) -> AsyncIterator[Services]:
    async with open_services(settings, embedder=embedder) as svc:
        yield svc


async def ingest_sample(svc: Services, root: Path = SAMPLE_HANDBOOK, *, tenant: str = "larkspur") -> None:
    from bot.cli.knowledge import plan_files
    from retrieval.ingest import DocumentOptions

    for item in plan_files([root], None):
        assert item.problem is None, item
        outcome = await svc.ingestor.submit_bytes(item.path.read_bytes(), filename=str(item.path.relative_to(root)),
                                                  doc_id=item.doc_id or "", options=DocumentOptions(tenant_id=tenant))
        assert outcome.status in ("queued", "unchanged"), outcome
    results = await svc.ingestor.run_pending()
    assert all(r.status == "published" for r in results), results


@pytest.fixture(scope="session")
async def handbook_template(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    home = tmp_path_factory.mktemp("handbook") / "home"
    async with open_services(make_settings(home), embedder=embedder) as svc:
        await ingest_sample(svc)
    return home


@asynccontextmanager
async def handbook_copy(template: Path, home: Path, embedder: Embedder) -> AsyncIterator[Services]:
    """Services over a private copy, at `home`, of the ingested sample handbook."""
    shutil.copytree(template, home)
    async with open_services(make_settings(home), embedder=embedder) as svc:
        yield svc


@pytest.fixture
async def handbook(tmp_path: Path, handbook_template: Path, embedder: Embedder) -> AsyncIterator[Services]:
    """Services over a private copy of the ingested sample handbook."""
    async with handbook_copy(handbook_template, tmp_path / "home", embedder) as svc:
        yield svc


@asynccontextmanager
async def serving(fake: FakeSlack) -> AsyncIterator[None]:
    """The fake Slack Web API, listening for the duration of the block."""
    await fake.start()
    try:
        yield
    finally:
        await fake.stop()
