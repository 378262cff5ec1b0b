"""Shared fixtures: one loaded embedding model per session, and the sample handbook ingested once
into a template home that each test copies (so tests stay isolated and fast).

`CAIRN_TEST_DATABASE=postgresql` runs the suite with every test's state on PostgreSQL: each test gets
a schema of its own on the session's server (tests/pg.py) as `CAIRN_DATABASE_URL`, which its settings,
services and the CLI processes it starts all read; the template home's state is a schema too, copied
with the home (`copy_home`). Tests about the SQLite file itself are marked `sqlite_only` and skipped
then. The store's own tests (tests/store) run on both engines in every run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bench.datasets import DATA
from bot.services import Services, open_services, shared_embedder
from bot.settings import Settings
from retrieval.embed import Embedder
from store.db import open_db
from tests.fake_slack import FakeSlack
from tests.pg import PgServer, unavailable_reason

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_HANDBOOK = ROOT / "sample" / "handbook"
SAMPLE_ACCESS = ROOT / "sample" / "access.yml"
# The public data sets beside the checkout, found as the bench finds them wherever the clone is.
SHARED_DATA = DATA
STATE_ENGINE = (os.environ.get("CAIRN_TEST_DATABASE") or "sqlite").strip().lower()
if STATE_ENGINE not in ("sqlite", "postgresql"):
    raise SystemExit(f"CAIRN_TEST_DATABASE={STATE_ENGINE!r}: expected sqlite or postgresql")
_servers: list[PgServer] = []  # the session's PostgreSQL server, once started
_databases: dict[Path, str] = {}  # on PostgreSQL: a home made here → the URL of its state


def make_settings(home: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"CAIRN_HOME": home, "CAIRN_ACCESS_FILE": SAMPLE_ACCESS}
    if home in _databases:
        values["CAIRN_DATABASE_URL"] = _databases[home]
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
    _servers.append(server)
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


@pytest.fixture(autouse=True)
def _state_database(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under CAIRN_TEST_DATABASE=postgresql: this test's state in a schema of its own (see above)."""
    if STATE_ENGINE != "postgresql" or "engine" in request.fixturenames:  # a store test picks its engines
        yield
        return
    marker = request.node.get_closest_marker("sqlite_only")
    if marker:
        pytest.skip(f"SQLite only: {marker.args[0] if marker.args else 'about the SQLite file'}")
    patch = pytest.MonkeyPatch()
    patch.setenv("CAIRN_DATABASE_URL", str(request.getfixturevalue("pg_database_url")))
    try:
        yield
    finally:
        patch.undo()


def copy_home(template: Path, home: Path) -> Path:
    """A private copy of a template home at `home`: its files and, on PostgreSQL, its state, copied
    into this test's schema (a schema of the copy's own when a fixture wider than a test makes it)."""
    shutil.copytree(template, home)
    source = _databases.get(template)
    if source:
        _databases[home] = os.environ.get("CAIRN_DATABASE_URL") or _servers[0].new_database_url()
        _servers[0].copy_database(source, _databases[home])
    return home


def state_rows(home: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """The rows a query reads from the state of `home` (its SQLite file, or this test's PostgreSQL
    schema), for synchronous test code."""
    async def read() -> list[tuple[object, ...]]:
        db = await open_db(make_settings(home).database)
        try:
            async with db.execute(sql, params) as cur:
                return [tuple(row) for row in await cur.fetchall()]
        finally:
            await db.close()

    return asyncio.run(read())


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
async def handbook_template(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder,
                            request: pytest.FixtureRequest) -> Path:
    home = tmp_path_factory.mktemp("handbook") / "home"
    if STATE_ENGINE == "postgresql":
        _databases[home] = request.getfixturevalue("pg_server").new_database_url()
    async with open_services(make_settings(home), embedder=embedder) as svc:
        await ingest_sample(svc)
    return home


@asynccontextmanager
async def handbook_copy(template: Path, home: Path, embedder: Embedder) -> AsyncIterator[Services]:
    """Services over a private copy, at `home`, of the ingested sample handbook."""
    copy_home(template, home)
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
