"""PostgreSQL for state: the connection the stores already know, over psycopg 3 (async).

`open_pg(url)` returns a `PgDatabase`: the same surface the stores use on SQLite's `Database`
(`execute` awaited or used as `async with`, `executemany`, `execute_fetchall`, `commit`,
`in_transaction`, `close`; cursors with `fetchone`, `fetchall`, `rowcount`; rows read by position,
by column name and as a mapping, like `sqlite3.Row`), with the same companions (`writer` for
`transaction`, `reader` for query-time reads, `write_lock`), so no store forks per engine.

One SQL dialect is written in the stores: SQLite's, kept to what PostgreSQL also accepts where a
common form exists (`INSERT … ON CONFLICT`, `lower(x)=lower(?)` rather than `COLLATE NOCASE`, `CASE`
rather than summing comparisons). What has no common form is translated here, statement by statement,
by the few explicit rules of `to_postgres`; a statement is translated once and cached. The
alternative, a query builder or ORM, would have rewritten every store for two differences of
placeholders and a handful of functions; and SQLite, the default, runs its statements untranslated.

The rules:
- placeholders: `?` → `%s`, `:name` → `%(name)s`, and a literal `%` → `%%` (psycopg's syntax);
- `group_concat(x, sep)` → `string_agg(x, sep)`; `json_extract(col, '$.key')` → `(col::jsonb->>'key')`;
- `AND +col` (SQLite's way of keeping a column's index out of a plan) → `AND col`;
- in `CREATE TABLE` / `ALTER TABLE`: `INTEGER` → `BIGINT` (SQLite's integers are 64-bit), `REAL` →
  `DOUBLE PRECISION` (SQLite's reals are 8-byte), `BLOB` → `BYTEA`; and the tables in `ROWID_TABLES`,
  whose insertion order a store reads through SQLite's implicit `rowid`, get an explicit `rowid`
  identity column.

`BEGIN IMMEDIATE` (what `transaction` sends) becomes `BEGIN` plus a transaction-scoped advisory lock
(`WRITER_LOCK`): like SQLite's one writer, one transaction at a time writes, across every process on
the database, so a read-then-write inside a transaction means what it means on SQLite. A claim opens
its transaction with `rows_only` instead (plain `BEGIN`) and locks only the rows it takes, with
`FOR UPDATE SKIP LOCKED` (`store.db.skip_locked`), so processes claiming jobs do not wait for each
other. Statements outside a transaction are autocommit, one statement one snapshot, as on SQLite.

The schema is `store.db.MIGRATIONS`, translated; how many have run is kept in `cairn_schema`
(SQLite keeps it in `PRAGMA user_version`), and they run under their own advisory lock so that
replicas starting together apply each one once.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import Dumper, Loader
from psycopg.rows import RowMaker

from store.db import script_statements

WRITER_LOCK = 0x63616972_6E5F7772  # "cairn_wr": one writing transaction at a time (see above)
MIGRATION_LOCK = 0x63616972_6E5F6D67  # "cairn_mg": one process applies migrations at a time
ROWID_TABLES = frozenset({"chunks"})

_JSON_EXTRACT = re.compile(r"json_extract\(\s*(\w+(?:\.\w+)?)\s*,\s*'\$\.(\w+)'\s*\)", re.IGNORECASE)
_GROUP_CONCAT = re.compile(r"\bgroup_concat\(", re.IGNORECASE)
_UNARY_PLUS = re.compile(r"\b(AND|OR|WHERE|ON)\s+\+(?=[A-Za-z_])", re.IGNORECASE)
_DDL = re.compile(r"^\s*(CREATE\s+TABLE|ALTER\s+TABLE)", re.IGNORECASE)
_DDL_TYPES = ((re.compile(r"\bINTEGER\b"), "BIGINT"), (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
              (re.compile(r"\bBLOB\b"), "BYTEA"))
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\(", re.IGNORECASE)


def _placeholders(sql: str) -> str:
    """`?` and `:name` outside quotes become psycopg's; every `%` is doubled (psycopg reads them all)."""
    out: list[str] = []
    i, n = 0, len(sql)
    quote: str | None = None
    while i < n:
        ch = sql[i]
        if quote:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "%":
            out.append("%%")
        elif ch == "?":
            out.append("%s")
        elif ch == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_") \
                and (i == 0 or sql[i - 1] != ":"):
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            out.append(f"%({sql[i + 1:j]})s")
            i = j
            continue
        elif ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(sql[i:j].replace("%", "%%"))
            i = j
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _ddl(statement: str) -> str:
    if not _DDL.match(statement):
        return statement
    for pattern, replacement in _DDL_TYPES:
        statement = pattern.sub(replacement, statement)
    table = _CREATE_TABLE.match(statement)
    if table and table.group(1).lower() in ROWID_TABLES:
        statement = statement[:table.end()] + "\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY," + statement[table.end():]
    return statement


@lru_cache(maxsize=2048)
def to_postgres(sql: str) -> str:
    """One statement of the stores' SQL as PostgreSQL reads it (the rules are in the module docstring)."""
    sql = _placeholders(sql)
    sql = _GROUP_CONCAT.sub("string_agg(", sql)
    sql = _JSON_EXTRACT.sub(r"(\1::jsonb->>'\2')", sql)
    sql = _UNARY_PLUS.sub(r"\1 ", sql)
    return _ddl(sql)


def script_to_postgres(script: str) -> list[str]:
    """A migration script (statements separated by `;`, no parameters) as PostgreSQL statements."""
    return [to_postgres(s).replace("%%", "%") for s in script_statements(script)]


class Row(tuple[Any, ...]):
    """A result row read like `sqlite3.Row`: by position, by column name, and as a mapping."""

    _index: Mapping[str, int]

    def __new__(cls, values: Iterable[Any], index: Mapping[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._index[key])
            except KeyError:
                return tuple.__getitem__(self, self._index[key.lower()])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def _row_factory(cursor: Any) -> RowMaker[Row]:
    names = [column.name for column in cursor.description or ()]
    index: dict[str, int] = {}
    for i, name in enumerate(names):
        index.setdefault(name, i)  # the first of a repeated name wins, as in sqlite3.Row

    def make(values: Sequence[Any]) -> Row:
        return Row(values, index)
    return make


class _BoolAsInteger(Dumper):
    """SQLite stores True and False as 1 and 0; the schema's flags are integers on both engines."""

    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


class _NumericAsNumber(Loader):
    """SUM and AVG of integers are `numeric` on PostgreSQL: read them as SQLite gives them, a sum of
    integers as an int and an average as a float."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        return float(text) if any(c in text for c in ".eEN") else int(text)


class _Result:
    """What `execute` returns: awaited, the cursor; with `async with`, the cursor, closed at the end."""

    def __init__(self, conn: PgConnection, sql: str, params: Any, many: bool) -> None:
        self._conn, self._sql, self._params, self._many = conn, sql, params, many
        self._cursor: psycopg.AsyncCursor[Row] | None = None

    def __await__(self) -> Any:
        return self._run().__await__()

    async def _run(self) -> psycopg.AsyncCursor[Row]:
        self._cursor = await self._conn._execute(self._sql, self._params, many=self._many)
        return self._cursor

    async def __aenter__(self) -> psycopg.AsyncCursor[Row]:
        return await self._run()

    async def __aexit__(self, *exc: object) -> None:
        if self._cursor is not None:
            await self._cursor.close()


class PgConnection:
    """One psycopg connection, in autocommit mode, speaking the stores' SQL (translated).

    A connection the server dropped (a restart, a failover, an idle timeout) is opened again by the
    next statement outside a transaction. A read or a transaction's BEGIN that met the dropped
    connection is sent again at once; a write is not (whether it was applied is unknown): it fails,
    and the statement after it runs on the new connection. A transaction that met it later fails as a
    whole.
    """

    dialect = "postgresql"

    def __init__(self, conn: psycopg.AsyncConnection[Row], url: str) -> None:
        self._pg = conn
        self._url = url
        self._reopen = asyncio.Lock()
        self.row_factory: object = None  # set by callers of the SQLite connection; rows here are always `Row`

    @property
    def in_transaction(self) -> bool:
        return self._pg.info.transaction_status in _IN_TRANSACTION

    async def _live(self) -> psycopg.AsyncConnection[Row]:
        """The connection, opened again if the server dropped it."""
        if self._pg.broken:
            async with self._reopen:
                if self._pg.broken:
                    dropped, self._pg = self._pg, await _connect(self._url)
                    await dropped.close()
        return self._pg

    async def _execute(self, sql: str, params: Any, *, many: bool = False) -> psycopg.AsyncCursor[Row]:
        try:
            return await self._send(await self._live(), sql, params, many=many)
        except psycopg.OperationalError:
            if not (self._pg.broken and not many and _safe_to_resend(sql)):
                raise
            return await self._send(await self._live(), sql, params, many=False)

    @staticmethod
    async def _send(pg: psycopg.AsyncConnection[Row], sql: str, params: Any, *,
                    many: bool) -> psycopg.AsyncCursor[Row]:
        cursor = pg.cursor()
        try:
            if sql.strip().upper() == "BEGIN IMMEDIATE":
                await cursor.execute("BEGIN")
                await cursor.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
            elif many:
                await cursor.executemany(to_postgres(sql), list(params))
            else:
                await cursor.execute(to_postgres(sql), _params(params))
        except BaseException:
            await cursor.close()
            raise
        return cursor

    def execute(self, sql: str, parameters: Any = None) -> _Result:
        return _Result(self, sql, parameters, many=False)

    def executemany(self, sql: str, parameters: Iterable[Any]) -> _Result:
        return _Result(self, sql, parameters, many=True)

    async def execute_fetchall(self, sql: str, parameters: Any = None) -> list[Row]:
        async with self.execute(sql, parameters) as cursor:
            return await cursor.fetchall() if cursor.description is not None else []

    async def commit(self) -> None:
        if self.in_transaction:
            await self._pg.execute("COMMIT")

    async def rollback(self) -> None:
        if self.in_transaction:
            await self._pg.execute("ROLLBACK")

    async def close(self) -> None:
        await self._pg.close()


_IN_TRANSACTION = frozenset({pq.TransactionStatus.ACTIVE, pq.TransactionStatus.INTRANS,
                             pq.TransactionStatus.INERROR})


def _safe_to_resend(sql: str) -> bool:
    """A read, or the start of a transaction: sending it again cannot apply anything twice."""
    words = sql.split(None, 1)
    return bool(words) and words[0].upper() in ("SELECT", "BEGIN")


def _params(params: Any) -> Any:
    # Always some parameters, even none: psycopg then reads the `%%` the translation wrote as `%`.
    if params is None:
        return ()
    if isinstance(params, Mapping):
        return params
    return tuple(params)


class PgDatabase(PgConnection):
    """The application's database on PostgreSQL, with the companions `store.db.Database` has."""

    writer: PgConnection
    reader: PgConnection
    write_lock: asyncio.Lock

    async def close(self) -> None:
        for companion in (getattr(self, "reader", None), getattr(self, "writer", None)):
            if companion is not None:
                await companion.close()
        await super().close()


async def _connect(url: str) -> psycopg.AsyncConnection[Row]:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, row_factory=_row_factory)
    conn.adapters.register_dumper(bool, _BoolAsInteger)
    conn.adapters.register_loader("numeric", _NumericAsNumber)
    return conn


async def migrate(conn: PgConnection, migrations: Sequence[str]) -> None:
    """Apply the migrations not yet applied, one transaction each, under MIGRATION_LOCK: processes that
    start together on a new database wait for each other, and each migration runs once."""
    pg = conn._pg
    while True:
        async with pg.transaction():
            await pg.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await pg.execute("CREATE TABLE IF NOT EXISTS cairn_schema (version BIGINT NOT NULL)")
            row = await (await pg.execute("SELECT max(version) FROM cairn_schema")).fetchone()
            applied = int(row[0]) if row and row[0] is not None else 0
            if applied >= len(migrations):
                return
            for statement in script_to_postgres(migrations[applied]):
                await pg.execute(statement)  # type: ignore[arg-type]
            await pg.execute("DELETE FROM cairn_schema")
            await pg.execute("INSERT INTO cairn_schema (version) VALUES (%s)", (applied + 1,))


async def open_pg(url: str, migrations: Sequence[str]) -> PgDatabase:
    """The database at `url`, migrated, with its writer and reader companions."""
    db = PgDatabase(await _connect(url), url)
    try:
        await migrate(db, migrations)
        db.write_lock = asyncio.Lock()
        db.writer = PgConnection(await _connect(url), url)
        db.reader = PgConnection(await _connect(url), url)
    except BaseException:
        await db.close()
        raise
    return db
