"""A real PostgreSQL server for the tests, started once per test process and stopped at its end.

`PgServer.start()` runs Debian's PostgreSQL 15 binaries (`CAIRN_TEST_PG_BIN`, default
/usr/lib/postgresql/15/bin) on a fresh data directory under the system temporary directory, listening
on a free loopback port only (no Unix socket), with durability off (fsync, synchronous commit): the
data lives as long as the test process. PostgreSQL refuses to run as root, so under root the server
runs as the `postgres` system user (which Debian's package creates) or, failing that, as `cairn-pg`,
created here as a system user without a login shell.

Each test gets a schema of its own (`new_database_url`): its URL sets `search_path`, so the product's
unqualified table names land there and nothing is shared between tests. Several test processes (for
example pytest-xdist workers) each start their own server on their own port, so nothing is shared
between them either.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

PG_BIN = Path(os.environ.get("CAIRN_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
SUPERUSER = "cairn"
RUN_AS_CANDIDATES = ("postgres", "cairn-pg")


def unavailable_reason() -> str | None:
    """Why no test server can be started here, or None when the binaries are present."""
    missing = [name for name in ("initdb", "postgres") if not (PG_BIN / name).is_file()]
    if missing:
        return (f"PostgreSQL server binaries not found in {PG_BIN} ({', '.join(missing)} missing): install "
                "Debian's postgresql-15 package or point CAIRN_TEST_PG_BIN at a PostgreSQL 15 bin directory")
    return None


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged user the server runs as under root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in RUN_AS_CANDIDATES:
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    created = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                              "cairn-pg"], capture_output=True)
    try:
        return pwd.getpwnam("cairn-pg")  # made here, or by another test process at the same moment
    except KeyError:
        raise RuntimeError(f"cannot create the cairn-pg user: {created.stderr.decode(errors='replace')}") from None


def _schema_of(url: str) -> str:
    """The schema a `new_database_url` URL puts first on the search path."""
    return url.rsplit("search_path%3D", 1)[-1]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    datadir: Path
    port: int
    process: subprocess.Popen[bytes]
    log: Path
    _schemas: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    @classmethod
    def start(cls, *, attempts: int = 3) -> PgServer:
        """initdb, then the server on a free port; raises with the server's log when it does not come up."""
        user = _run_as()
        root = Path(tempfile.mkdtemp(prefix="cairn-pg-"))
        datadir = root / "data"
        datadir.mkdir()
        ids = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user else {}
        if user:
            for path in (root, datadir):
                os.chown(path, user.pw_uid, user.pw_gid)
        init = subprocess.run([str(PG_BIN / "initdb"), "-D", str(datadir), "-U", SUPERUSER, "--auth=trust",
                               "--encoding=UTF8", "--locale=C", "--no-sync"],
                              capture_output=True, cwd=root, **ids)
        if init.returncode:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"initdb failed: {init.stderr.decode(errors='replace')}")
        log = root / "server.log"
        for _ in range(attempts):
            port = _free_port()
            with log.open("ab") as out:
                process = subprocess.Popen(
                    [str(PG_BIN / "postgres"), "-D", str(datadir), "-h", "127.0.0.1", "-p", str(port), "-k", "",
                     "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                     "-c", "max_connections=200", "-c", "shared_buffers=32MB"],
                    stdout=out, stderr=subprocess.STDOUT, cwd=root, **ids)
            server = cls(datadir=datadir, port=port, process=process, log=log)
            if server._wait_ready(timeout_s=60):
                return server
            server.stop(remove=False)  # most likely the port was taken meanwhile: another one
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start; its log:\n{log.read_text(errors='replace')[-4000:]}")

    def _wait_ready(self, *, timeout_s: float) -> bool:
        import psycopg

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with psycopg.connect(self.url, connect_timeout=2):
                    return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        return False

    def new_database_url(self) -> str:
        """The URL of an empty schema of its own on this server (what one test's database is)."""
        import psycopg

        schema = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        self._schemas.append(schema)
        return f"{self.url}?options={quote(f'-csearch_path={schema}')}"

    def copy_database(self, source: str, target: str) -> None:
        """Copy every table of the schema at `source` (a `new_database_url`), rows and all, into the
        empty schema at `target`: what copying a home's SQLite file is on this engine."""
        import psycopg
        from psycopg import sql

        src, dst = _schema_of(source), _schema_of(target)
        with psycopg.connect(self.url, autocommit=True) as conn, conn.transaction():
            tables = [row[0] for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname=%s ORDER BY tablename", (src,))]
            for table in tables:
                old, new = sql.Identifier(src, table), sql.Identifier(dst, table)
                conn.execute(sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(new, old))
                conn.execute(sql.SQL("INSERT INTO {} OVERRIDING SYSTEM VALUE SELECT * FROM {}").format(new, old))
                identities = conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid=%s::regclass AND attidentity<>''",
                    (f"{dst}.{table}",)).fetchall()
                for (column,) in identities:  # the copy's own sequence goes on from the rows copied
                    conn.execute(sql.SQL("SELECT setval(pg_get_serial_sequence({}, {}), max({}), true) FROM {}"
                                         " HAVING count(*) > 0").format(
                        sql.Literal(f"{dst}.{table}"), sql.Literal(column), sql.Identifier(column), new))

    def drop_database(self, url: str) -> None:
        """Drop the schema `new_database_url` made, with everything in it."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {_schema_of(url)} CASCADE")

    def stop(self, *, remove: bool = True) -> None:
        """Fast shutdown (SIGINT), then the data directory goes."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if remove:
            shutil.rmtree(self.datadir.parent, ignore_errors=True)
