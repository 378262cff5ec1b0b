"""Connection and schema. `open_db` returns a ready `Database` (SQLite, or PostgreSQL through store/pg.py
when given a `postgresql://` URL); `setup` is idempotent. MIGRATIONS is the one schema of both engines."""

from __future__ import annotations

import asyncio
import sqlite3
import weakref
from collections.abc import Callable, Iterable
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import aiosqlite

# Each entry runs once, in order; the applied count lives in PRAGMA user_version.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS tenants (
        tenant_id TEXT PRIMARY KEY
    );
    CREATE TABLE IF NOT EXISTS groups (
        tenant_id TEXT NOT NULL REFERENCES tenants(tenant_id),
        group_name TEXT NOT NULL,
        PRIMARY KEY (tenant_id, group_name)
    );
    CREATE TABLE IF NOT EXISTS documents (
        tenant_id TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        title TEXT NOT NULL,
        policy_id TEXT,
        owner TEXT,
        sensitivity TEXT NOT NULL DEFAULT 'internal',
        acl_version INTEGER NOT NULL DEFAULT 1,
        current_version TEXT,
        status TEXT NOT NULL DEFAULT 'active',
        superseded_by TEXT,
        supersedes TEXT,
        pending_meta TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (tenant_id, doc_id)
    );
    CREATE TABLE IF NOT EXISTS document_groups (
        tenant_id TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        group_name TEXT NOT NULL,
        PRIMARY KEY (tenant_id, doc_id, group_name),
        FOREIGN KEY (tenant_id, doc_id) REFERENCES documents(tenant_id, doc_id)
    );
    CREATE TABLE IF NOT EXISTS versions (
        tenant_id TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        version TEXT NOT NULL,
        seq INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        source_path TEXT NOT NULL,
        raw_path TEXT NOT NULL,
        lang TEXT NOT NULL DEFAULT 'en',
        state TEXT NOT NULL DEFAULT 'pending',
        chunk_count INTEGER NOT NULL DEFAULT 0,
        effective_at TEXT,
        expires_at TEXT,
        created_at TEXT NOT NULL,
        published_at TEXT,
        retired_at TEXT,
        PRIMARY KEY (tenant_id, doc_id, version)
    );
    CREATE INDEX IF NOT EXISTS versions_hash ON versions (tenant_id, doc_id, content_hash);
    CREATE TABLE IF NOT EXISTS chunks (
        chunk_id TEXT PRIMARY KEY,
        point_id TEXT NOT NULL UNIQUE,
        tenant_id TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        version TEXT NOT NULL,
        seq INTEGER NOT NULL,
        text TEXT NOT NULL,
        heading TEXT NOT NULL,
        page INTEGER,
        source_key TEXT NOT NULL,
        token_count INTEGER NOT NULL,
        lang TEXT NOT NULL DEFAULT 'en'
    );
    CREATE INDEX IF NOT EXISTS chunks_version ON chunks (tenant_id, doc_id, version);
    -- Vectors kept beside the text for reranking: whole-chunk and per-sentence (float16 bytes).
    CREATE TABLE IF NOT EXISTS chunk_vectors (
        chunk_id TEXT PRIMARY KEY REFERENCES chunks(chunk_id) ON DELETE CASCADE,
        dim INTEGER NOT NULL,
        chunk_vec BLOB NOT NULL,
        ml_dim INTEGER NOT NULL DEFAULT 0,
        ml_vec BLOB,
        sentences TEXT NOT NULL,
        sent_dim INTEGER NOT NULL,
        sentence_vecs BLOB NOT NULL,
        terms TEXT NOT NULL DEFAULT '[]'
    );
    -- The manifest outlives the chunk text: it is how vectors are found again for cleanup.
    CREATE TABLE IF NOT EXISTS manifest_points (
        tenant_id TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        version TEXT NOT NULL,
        chunk_id TEXT NOT NULL,
        point_id TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'planned',
        PRIMARY KEY (tenant_id, doc_id, version, chunk_id)
    );
    CREATE TABLE IF NOT EXISTS ingest_jobs (
        job_id TEXT PRIMARY KEY,
        tenant_id TEXT NOT NULL,
        doc_id TEXT NOT NULL,
        source_path TEXT NOT NULL,
        raw_path TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        options TEXT NOT NULL DEFAULT '{}',
        state TEXT NOT NULL DEFAULT 'queued',
        attempts INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        version TEXT,
        outcome TEXT,
        requested_by TEXT,
        notify TEXT,
        dedupe_key TEXT UNIQUE,
        next_attempt_at TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS jobs_state ON ingest_jobs (state, next_attempt_at);
    CREATE TABLE IF NOT EXISTS sessions (
        session_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        channel TEXT,
        thread_ts TEXT,
        surface TEXT NOT NULL DEFAULT 'cli',
        lang TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS turns (
        turn_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        question TEXT NOT NULL,
        route TEXT,
        reason TEXT,
        answer TEXT,
        top_score REAL,
        passages TEXT NOT NULL DEFAULT '[]',
        trace TEXT NOT NULL DEFAULT '{}',
        answerer TEXT,
        model TEXT,
        prompt_version TEXT,
        validation TEXT,
        timings TEXT NOT NULL DEFAULT '{}',
        created_at TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS turns_session ON turns (session_id, created_at);
    CREATE TABLE IF NOT EXISTS escalations (
        escalation_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        question TEXT NOT NULL,
        reason TEXT NOT NULL,
        transcript TEXT NOT NULL DEFAULT '',
        passages TEXT NOT NULL DEFAULT '[]',
        top_score REAL,
        status TEXT NOT NULL DEFAULT 'open',
        channel TEXT,
        thread_ts TEXT,
        claimed_by TEXT,
        resolved_by TEXT,
        kind TEXT,
        topic TEXT,
        label_attempts INTEGER NOT NULL DEFAULT 0,
        labelled_at TEXT,
        first_reply_at TEXT,
        reminded_at TEXT,
        deadline_at TEXT,
        created_at TEXT NOT NULL,
        closed_at TEXT
    );
    CREATE INDEX IF NOT EXISTS escalations_status ON escalations (status, created_at);
    CREATE UNIQUE INDEX IF NOT EXISTS escalations_turn ON escalations (turn_id);
    CREATE TABLE IF NOT EXISTS admin_replies (
        escalation_id TEXT NOT NULL,
        message_key TEXT NOT NULL,
        admin_id TEXT NOT NULL,
        text TEXT NOT NULL,
        delivered_at TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (escalation_id, message_key)
    );
    CREATE TABLE IF NOT EXISTS feedback (
        turn_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        value INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (turn_id, user_id)
    );
    CREATE TABLE IF NOT EXISTS seen_events (
        event_key TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS job_runs (
        run_key TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        detail TEXT
    );
    CREATE TABLE IF NOT EXISTS controls (
        name TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    # Standalone vectors of the sentences the extractive answerer quotes, filled after publication.
    """
    CREATE TABLE IF NOT EXISTS answer_vectors (
        chunk_id TEXT PRIMARY KEY REFERENCES chunks(chunk_id) ON DELETE CASCADE,
        texts TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vecs BLOB NOT NULL
    );
    """,
    # Who holds a job's lease (host:pid:start), so a dead holder's lease is reclaimed at once.
    """
    ALTER TABLE ingest_jobs ADD COLUMN lease_holder TEXT;
    """,
    # The same answer sentences in the multilingual space, for Arabic questions about English chunks.
    """
    ALTER TABLE answer_vectors ADD COLUMN ml_dim INTEGER;
    ALTER TABLE answer_vectors ADD COLUMN ml_vecs BLOB;
    """,
    # A session's open escalation, looked up before every turn: without it the lookup read every open
    # escalation of every session (escalations_status), a cost that grew with the queue.
    """
    CREATE INDEX IF NOT EXISTS escalations_session ON escalations (session_id, status, created_at);
    """,
    # Which reading of a chunk's sentences its answer vectors were prepared for (the answerer's
    # CANDIDATE_SCHEME): vectors of an older reading are prepared again.
    """
    ALTER TABLE answer_vectors ADD COLUMN scheme INTEGER NOT NULL DEFAULT 0;
    """,
)


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None = None) -> str:
    return (moment or utcnow()).astimezone(UTC).isoformat(timespec="microseconds")


async def _pragmas(conn: aiosqlite.Connection) -> None:
    # Per connection: foreign keys and the busy timeout are not stored in the database file.
    await conn.execute("PRAGMA synchronous=NORMAL")
    await conn.execute("PRAGMA foreign_keys=ON")
    await conn.execute("PRAGMA busy_timeout=10000")


async def _user_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


def script_statements(script: str) -> list[str]:
    """A migration script's statements (split at `;`, comment lines left out; no `;` inside them)."""
    statements = ("\n".join(line for line in part.splitlines() if not line.strip().startswith("--"))
                  for part in script.split(";"))
    return [statement for statement in statements if statement.strip()]


async def _wal(conn: aiosqlite.Connection) -> None:
    """WAL mode. Turning a new database to WAL takes it whole for a moment, and SQLite may refuse a
    process that opens it at that moment at once ("database is locked") instead of letting it wait for
    the busy timeout: it tries again, for up to the busy timeout."""
    for attempt in range(200):
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 199:
                raise
            await asyncio.sleep(0.05)


async def setup(conn: aiosqlite.Connection) -> None:
    """WAL, foreign keys, and any migration not yet applied. Safe to call on every start, and by
    several processes at once on a new database: each migration runs in a write transaction that
    reads the version again, so the processes that waited for it find it applied."""
    await _pragmas(conn)  # the busy timeout first: another process may be migrating this database
    await _wal(conn)
    while await _user_version(conn) < len(MIGRATIONS):
        await conn.execute("BEGIN IMMEDIATE")
        try:
            applied = await _user_version(conn)
            if applied < len(MIGRATIONS):
                for statement in script_statements(MIGRATIONS[applied]):
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version={applied + 1}")
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise


async def create_tables(conn: aiosqlite.Connection, schema: str) -> None:
    """A store's own `CREATE … IF NOT EXISTS` statements, in one transaction: safe on every start."""
    async with transaction(conn) as tx:
        for statement in filter(str.strip, schema.split(";")):
            await tx.execute(statement)


class Database(aiosqlite.Connection):
    """The application's connection to the catalog database, and two companions of its own.

    aiosqlite runs every statement of a connection on one thread, in the order coroutines send them;
    a transaction that awaits between its statements therefore lets any other coroutine's statement
    run inside it — a reader then sees half a publication, and an unrelated write is rolled back
    with it. So a transaction never runs here: `transaction(db)` takes `db.writer` (one transaction
    at a time, under `write_lock`), and what is sent to `db` itself is reads, autocommit, one
    statement one snapshot. A write outside a transaction goes through `write` (or
    `write_returning`), which also runs it on `db.writer`: a read of one coroutine may still be open
    on `db` (a cursor not fetched to its end) when another writes, and SQLite refuses a write from
    a connection with a read open at once, without its busy timeout, whenever another process
    holds the write lock. Query-time readers (the Searcher's eligibility checks) use `db.reader`,
    so a question never queues behind a statement of `db` that waits for the database.
    """

    dialect = "sqlite"
    writer: aiosqlite.Connection
    reader: aiosqlite.Connection
    write_lock: asyncio.Lock

    async def close(self) -> None:
        for companion in (getattr(self, "reader", None), getattr(self, "writer", None)):
            if companion is not None:
                await companion.close()
        await super().close()


def _connector(path: Path) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        # check_same_thread=False: aiosqlite opens the connection on its own worker thread.
        return sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    return connect


async def _companion(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = aiosqlite.Row
    await _pragmas(conn)
    return conn


def is_database_url(target: Path | str) -> bool:
    """Whether `target` names a PostgreSQL database (`postgresql://…` or `postgres://…`) rather than a file."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


async def open_db(target: Path | str) -> Database:
    """The ready database: SQLite at a file path, or PostgreSQL at a `postgresql://` URL (store/pg.py).

    On PostgreSQL the object returned is a `store.pg.PgDatabase`, which offers the part of
    `Database` the stores use (store/pg.py lists it); it is typed as `Database` so that callers
    do not fork per engine.
    """
    if is_database_url(target):
        from store.pg import open_pg

        return cast(Database, await open_pg(str(target), MIGRATIONS))
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = Database(_connector(path), 64)
    await conn
    try:
        conn.row_factory = aiosqlite.Row
        await setup(conn)
        conn.write_lock = asyncio.Lock()
        conn.writer = await _companion(path)
        conn.reader = await _companion(path)
    except BaseException:
        await conn.close()
        raise
    return conn


def reader_of(conn: aiosqlite.Connection) -> aiosqlite.Connection:
    """The connection for query-time reads: the database's reader, or `conn` itself."""
    return getattr(conn, "reader", conn)


# Which Databases the current task (and tasks it starts) holds a transaction on: a nested
# transaction would wait for its own lock for ever, so it is refused instead.
_HOLDING: ContextVar[frozenset[int]] = ContextVar("cairn_db_holding", default=frozenset())
_FALLBACK_LOCKS: weakref.WeakKeyDictionary[aiosqlite.Connection, asyncio.Lock] = weakref.WeakKeyDictionary()


def dialect_of(conn: object) -> str:
    """"sqlite" or "postgresql": what a connection `open_db` made (or one of its companions) speaks."""
    return str(getattr(conn, "dialect", "sqlite"))


def skip_locked(conn: object) -> str:
    """The clause a claim's SELECT ends with inside `transaction(conn, rows_only=True)`: on PostgreSQL
    ` FOR UPDATE SKIP LOCKED` (the rows read are locked until commit, and rows another process has
    locked are passed over), on SQLite nothing (its transaction already holds the whole database)."""
    return " FOR UPDATE SKIP LOCKED" if dialect_of(conn) == "postgresql" else ""


class transaction:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on error, on the database's writer connection.

    One transaction at a time per database (and SQLite serialises writers across processes); use
    only the connection it yields inside the block. Readers on the database's other connections see
    the state before or after, never between.

    On PostgreSQL the same holds across processes: the transaction takes a database-wide lock first
    (store/pg.py). With `rows_only=True` it does not: it is for a claim whose statements lock the rows
    they read (`skip_locked`), so that several processes claim different rows at once. On SQLite
    `rows_only` changes nothing.
    """

    def __init__(self, conn: aiosqlite.Connection, *, rows_only: bool = False) -> None:
        self._conn = conn
        self._begin = "BEGIN" if rows_only and dialect_of(conn) == "postgresql" else "BEGIN IMMEDIATE"
        self._target: aiosqlite.Connection = getattr(conn, "writer", conn)
        self._lock = getattr(conn, "write_lock", None) or _FALLBACK_LOCKS.setdefault(conn, asyncio.Lock())
        self._token: Token[frozenset[int]] | None = None

    async def __aenter__(self) -> aiosqlite.Connection:
        key = id(self._conn)
        if key in _HOLDING.get():
            raise RuntimeError("a transaction is already open on this database in this task")
        await self._lock.acquire()
        try:
            await self._target.execute(self._begin)
        except BaseException:
            self._lock.release()
            raise
        self._token = _HOLDING.set(_HOLDING.get() | {key})
        return self._target

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                try:
                    await self._target.execute("COMMIT")
                except BaseException:
                    if self._target.in_transaction:
                        await self._target.execute("ROLLBACK")
                    raise
            elif self._target.in_transaction:
                await self._target.execute("ROLLBACK")
        finally:
            if self._token is not None:
                _HOLDING.reset(self._token)
                self._token = None
            self._lock.release()


async def write(conn: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()) -> int:
    """Run one write statement (INSERT, UPDATE, DELETE), atomic on its own; returns the rows it changed.

    It runs in a `transaction` of its own, on the database's writer connection under `write_lock`,
    never on the main connection (the `Database` docstring says why): the writer runs nothing but
    transactions, so it never has a read open and the write waits for another process's writer for
    as long as the busy timeout allows. The transaction is opened with `rows_only`, which on SQLite
    changes nothing and on PostgreSQL makes it a plain BEGIN: the statement locks only the rows it
    changes, as it would in autocommit, not the whole database.

    Not inside a `transaction` on the same database (refused there, as a nested transaction is): run
    the statement on the connection the transaction yields instead.
    """
    async with transaction(conn, rows_only=True) as tx, tx.execute(sql, params) as cur:
        return int(cur.rowcount)


async def write_returning(conn: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()) -> list[Any]:
    """`write` for a statement with a RETURNING clause: the rows it returns, read to the end before the
    transaction commits (SQLite does not commit while a statement is still in progress)."""
    async with transaction(conn, rows_only=True) as tx:
        return list(await tx.execute_fetchall(sql, params))
