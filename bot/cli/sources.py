"""`cairn sync` and `cairn sources`: folders and websites kept mirrored into the collection."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bot.cli.common import CommandError, command_line_wording, emit_json, local_services
from bot.cli.parsers import add_command
from bot.services import open_store, running_server
from bot.settings import Settings
from store.access import AccessFileError, AccessPolicy
from store.sources import SourceRecord, Sources, source_id_for

# The sync machinery (ingestion, the website crawler) is imported by `cairn sync`, not by `cairn sources`.
if TYPE_CHECKING:
    from retrieval.sync import SyncReport, SyncRunner

QUIET_RESULTS = ("not_modified", "unchanged")  # what a terminal run does not list item by item


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "sync", sync, help="keep a folder or a website mirrored into the collection",
                    description="Register SOURCE (a folder or an http(s) URL) and mirror it now: new files or "
                                "pages are ingested, changed ones become new versions, gone ones are withdrawn. "
                                "Flags not given keep the source's saved settings.")
    p.add_argument("source", metavar="SOURCE", help="a folder (or git checkout) or a start URL")
    p.add_argument("--tenant", help="tenant (default: the access file's default tenant)")
    p.add_argument("--groups", help="comma-separated groups that may read its documents (default: everyone)")
    p.add_argument("--owner", help="owning Slack channel of its documents, e.g. #people-ops")
    p.add_argument("--every", metavar="DURATION", help="run it on this schedule under `cairn serve` (30m, 6h, 1d; "
                                                       "'off' to stop)")
    p.add_argument("--concurrency", type=int, help="websites: requests at a time (default 4)")
    p.add_argument("--delay", type=float, metavar="S", help="websites: seconds between request starts (default 0.025)")
    p.add_argument("--max-pages", type=int, metavar="N", help="websites: pages and linked files per run (default 500)")

    p = add_command(sub, "sources", list_sources, help="the sources kept in sync, their last run and errors")
    p.add_argument("--tenant")


def _location(source: str, kind: str) -> str:
    if kind == "directory" and "://" in source:
        raise CommandError(f"{source!r}: a source is a folder or an http(s) URL")
    if kind == "directory":
        return str(Path(source).expanduser().resolve())
    from retrieval.sync.website import WebsiteLister

    try:
        return WebsiteLister(source).start_url
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


async def _configure(sources: Sources, args: argparse.Namespace, access: AccessPolicy) -> SourceRecord:
    from retrieval.sync import kind_of, parse_duration

    tenant = args.tenant or access.default_tenant
    kind = kind_of(args.source)
    location = _location(args.source, kind)
    existing = await sources.get(source_id=source_id_for(tenant, location))
    if kind == "directory" and existing is None and not Path(location).is_dir():
        raise CommandError(f"no folder at {location}: give a folder or an http(s) URL")
    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip()) if args.groups else None
    if groups:
        unknown = sorted(set(groups) - access.groups_of(tenant))
        if unknown:
            raise CommandError(f"groups {unknown} are not defined for tenant {tenant}")
    every: int | None
    if args.every is None:
        every = existing.every_s if existing else None
    elif args.every.strip().lower() in ("off", "never", "none"):
        every = None
    else:
        try:
            every = parse_duration(args.every)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
    options = dict(existing.settings) if existing else {}
    if args.concurrency is not None:
        options["concurrency"] = max(1, args.concurrency)
    if args.delay is not None:
        options["delay_s"] = max(0.0, args.delay)
    if args.max_pages is not None:
        options["max_pages"] = max(1, args.max_pages)
    return await sources.save(tenant_id=tenant, kind=kind, location=location,
                              groups=groups or (existing.groups if existing else None),
                              owner=args.owner or (existing.owner if existing else None), every_s=every,
                              settings=options)


@asynccontextmanager
async def _runner(settings: Settings, access: AccessPolicy) -> AsyncIterator[tuple[Sources, SyncRunner]]:
    """In this process when it can open the index; else the jobs go to the running server's worker."""
    from retrieval.ingest import Submitter
    from retrieval.sync import SyncRunner

    if running_server(settings) and not settings.qdrant_url:
        async with open_store(settings) as store:
            submitter = Submitter(catalog=store.catalog, jobs=store.jobs, raw_root=settings.raw_path,
                                  max_bytes=settings.max_file_bytes, allowed_groups=access.groups_of)
            print("cairn serve holds the index: jobs handed to its worker; following progress…", file=sys.stderr)
            yield store.sources, SyncRunner(sources=store.sources, submitter=submitter, catalog=store.catalog,
                                            jobs=store.jobs)
        return
    async with local_services(settings, warm=False) as services:
        sources = services.store.sources
        yield sources, SyncRunner(sources=sources, submitter=services.ingestor.submitter, catalog=services.catalog,
                                  jobs=services.jobs, ingestor=services.ingestor)


async def sync(args: argparse.Namespace, settings: Settings) -> int:
    try:
        access = AccessPolicy.load(settings.access_file)
    except AccessFileError as exc:
        raise CommandError(str(exc)) from exc
    async with _runner(settings, access) as (sources, runner):
        source = await _configure(sources, args, access)
        if not args.json:
            print(f"syncing {source.location} ({source.kind}, tenant {source.tenant_id})…", file=sys.stderr)
        report = await runner.run(source)
    if args.json:
        emit_json(report.as_dict())
    else:
        _print_report(report)
    return 0 if report.status == "ok" else 1


def _print_report(report: SyncReport) -> None:
    for item in report.items:
        if item.result in QUIET_RESULTS:
            continue
        version = f" {item.version}" if item.version else ""
        note = f": {command_line_wording(item.message, verb='sync')}" if item.message else ""
        print(f"{item.result:<15} {item.doc_id or '-'}{version}  [{item.key}]{note}")
    counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts.items())) or "nothing listed"
    line = f"{report.status}: {counts}"
    print(f"{line}; {report.error}" if report.error else line, file=sys.stderr)


async def list_sources(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:  # read-only use: works while the server holds the index
        records = await store.sources.list_sources(tenant_id=args.tenant)
    if args.json:
        emit_json([{"source_id": s.source_id, "tenant": s.tenant_id, "kind": s.kind, "location": s.location,
                    "groups": list(s.groups or ("everyone",)), "owner": s.owner, "every_s": s.every_s,
                    "settings": s.settings, "last_started": s.last_started_at, "last_finished": s.last_finished_at,
                    "status": s.last_status, "counts": s.last_counts, "error": s.last_error,
                    "next_run": s.next_run_at, "running": s.running_since is not None} for s in records])
        return 0
    if not records:
        print("no sources yet: try `cairn sync PATH-OR-URL --every 6h`")
        return 0
    for s in records:
        every = f"every {s.every_s // 60} min" if s.every_s else "on demand"
        counts = ", ".join(f"{n} {k}" for k, n in sorted(s.last_counts.items())) or "-"
        print(f"{s.source_id}  {s.kind:<9} {s.location}")
        print(f"    tenant {s.tenant_id} · groups {','.join(s.groups or ('everyone',))} · owner {s.owner or '-'} · "
              f"{every}")
        print(f"    last run {(s.last_finished_at or 'never')[:19]} {s.last_status or ''}: {counts}")
        if s.last_error:
            print(f"    error: {s.last_error}")
    return 0
