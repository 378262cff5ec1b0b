"""`cairn ingest`, `cairn docs`, `cairn withdraw`: keeping the collection current from a terminal."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.common import CommandError, command_line_wording, emit_json, local_services
from bot.services import open_store, running_server
from bot.settings import Settings
from store.access import AccessPolicy
from store.disk import LowDiskError
from store.document_options import SENSITIVITIES, policy_id_problem
from store.jobs import FINAL_STATES, UNFINISHED_STATES, Jobs

# retrieval.ingest (parsers, numpy) is imported by the commands that ingest, not by `cairn docs`.
if TYPE_CHECKING:
    from retrieval.ingest import DocumentOptions, FileOutcome, Submitter
    from store.catalog import Catalog
    from store.records import JobRecord

# "queued" is not among them: a file left queued is work undone, and the exit status says so.
OK_STATUSES = {"published", "scheduled", "unchanged"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="ingest files or directories (recursive)",
                       description="Ingest files or directories. The document id defaults to the file's path "
                                   "relative to the directory given, without extension. Same id + new content "
                                   "= a new version replacing the old; same content = no-op.")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    p.add_argument("--tenant", help="tenant (default: the access file's default tenant)")
    p.add_argument("--groups", help="comma-separated groups that may read it (default: everyone)")
    p.add_argument("--doc-id", help="document id (only with a single file)")
    p.add_argument("--policy-id")
    p.add_argument("--owner", help="owning Slack channel, e.g. #travel-team")
    p.add_argument("--sensitivity", choices=SENSITIVITIES)
    p.add_argument("--effective", help="effective date YYYY-MM-DD (future = published on that date)")
    p.add_argument("--expires", help="expiry date YYYY-MM-DD")
    p.add_argument("--supersedes", help="document id this one supersedes when published")
    p.add_argument("--json", action="store_true", help="one JSON object per file on stdout")
    p.set_defaults(handler=ingest)

    p = sub.add_parser("docs", help="the catalog: documents, versions, status, chunks, groups, owner")
    p.add_argument("--tenant")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=docs)

    p = sub.add_parser("withdraw", help="revoke a document's eligibility, then remove every version")
    p.add_argument("doc_id", metavar="DOC_ID")
    p.add_argument("--tenant")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=withdraw)

    p = sub.add_parser("jobs", help="ingestion jobs not finished yet (--all: recent ones too); `jobs cancel ID`",
                       description="List ingestion jobs: state, attempts, document and the last error. "
                                   "`cairn jobs cancel ID` cancels an unfinished one.")
    p.add_argument("--all", action="store_true", help="the 50 most recent jobs, finished ones included")
    p.add_argument("--json", action="store_true", help="one JSON object per job on stdout")
    p.set_defaults(handler=jobs_list)
    jobs_sub = p.add_subparsers(dest="jobs_command", metavar="cancel")
    c = jobs_sub.add_parser("cancel", help="cancel an unfinished job; a worker running it stops at its next step")
    c.add_argument("job_id", metavar="JOB_ID", help="the job id (or a unique prefix of it, from `cairn jobs`)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(handler=jobs_cancel)


@dataclass(frozen=True)
class Planned:
    path: Path
    doc_id: str | None
    problem: str | None = None
    source: str | None = None  # the path relative to the directory given: what citations show


def plan_files(paths: list[Path], doc_id: str | None) -> list[Planned]:
    """Expand directories; give each file its identity; flag what cannot be ingested."""
    from retrieval.ingest import IngestError, default_doc_id, validate_doc_id
    from retrieval.parse import SUPPORTED_SUFFIXES
    from retrieval.sync.files import list_source_files

    found: list[tuple[Path, Path]] = []
    outside: list[Planned] = []
    for path in paths:
        if not path.exists():
            found.append((path, path.parent))
        elif path.is_dir():  # only regular files inside the directory: no symlinks out, no devices
            files, skipped = list_source_files(path, None)  # every file: an unsupported one gets its line
            found.extend((f, path) for f in files)
            outside.extend(Planned(s.path, None, s.reason) for s in skipped)
        else:
            found.append((path, path.parent))
    if doc_id and len(found) != 1:
        raise CommandError("--doc-id names one document: give exactly one file")
    planned: list[Planned] = []
    for file, root in found:
        if not file.exists():
            planned.append(Planned(file, None, "no such file or directory"))
            continue
        if file.suffix.lower() not in SUPPORTED_SUFFIXES:
            planned.append(Planned(file, None, f"unsupported file type '{file.suffix or file.name}'; "
                                               f"supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}"))
            continue
        try:
            planned.append(Planned(file, validate_doc_id(doc_id or default_doc_id(file, root)),
                                   source=file.relative_to(root).as_posix()))
        except IngestError as exc:
            planned.append(Planned(file, None, str(exc)))
    planned.extend(outside)
    # Ids that differ only in case are one on a case-insensitive file system (macOS, Windows volumes).
    counts = Counter(p.doc_id.casefold() for p in planned if p.doc_id)
    return [Planned(p.path, p.doc_id, f"duplicate document id '{p.doc_id}' in this run "
                                      f"({counts[p.doc_id.casefold()]} files, letter case ignored); give each a "
                                      "distinct name or --doc-id")
            if p.doc_id and counts[p.doc_id.casefold()] > 1 else p for p in planned]


def _options(args: argparse.Namespace, access: AccessPolicy) -> DocumentOptions:
    from retrieval.ingest import DocumentOptions

    tenant = args.tenant or access.default_tenant
    if tenant not in access.tenants:
        # An operator may load a tenant before its users are listed; say so, since nobody can read
        # it until the access file names that tenant's users (or its Slack workspace).
        print(f"note: tenant {tenant!r} is not in the access file (it defines: {', '.join(sorted(access.tenants))}); "
              "its documents are readable once users of that tenant are listed there", file=sys.stderr)
    problem = policy_id_problem(args.policy_id)
    if problem:
        raise CommandError(f"--policy-id: {problem}")
    groups = tuple(g.strip() for g in args.groups.split(",") if g.strip()) if args.groups else None
    return DocumentOptions(tenant_id=tenant, groups=groups, policy_id=args.policy_id, owner=args.owner,
                           sensitivity=args.sensitivity, effective=args.effective, expires=args.expires,
                           supersedes=args.supersedes)


async def _submit_all(submitter: Submitter, planned: list[Planned], options: DocumentOptions) -> list[FileOutcome]:
    from retrieval.ingest import FileOutcome

    outcomes = []
    for item in planned:
        if item.problem:
            outcomes.append(FileOutcome(path=str(item.path), doc_id=item.doc_id, status="rejected",
                                        message=item.problem))
            continue
        try:
            data = item.path.read_bytes()
        except OSError as exc:
            outcomes.append(FileOutcome(path=str(item.path), doc_id=item.doc_id, status="rejected",
                                        message=f"cannot read file: {exc.strerror}"))
            continue
        outcome = await submitter.submit_bytes(data, filename=item.source or str(item.path),
                                               doc_id=item.doc_id or "", options=options, requested_by="cli")
        outcomes.append(outcome)
    return outcomes


async def ingest(args: argparse.Namespace, settings: Settings) -> int:
    access = AccessPolicy.load(settings.access_file)
    options = _options(args, access)
    planned = plan_files(args.paths, args.doc_id)
    if running_server(settings) and not settings.qdrant_url:
        outcomes = await _hand_over(settings, access, planned, options, quiet=args.json)
    else:
        async with local_services(settings, warm=False) as services:
            submitted = await _submit_all(services.ingestor.submitter, planned, options)
            queued = [o.job_id for o in submitted if o.status == "queued" and o.job_id]
            with _Progress(enabled=not args.json and sys.stderr.isatty(), total=len(queued)) as bar:
                try:
                    results = {r.job_id: r for r in await services.ingestor.run_pending(
                        on_progress=bar.update, only=queued)}
                except LowDiskError as exc:
                    raise CommandError(f"{exc}. The files stay queued: the next `cairn ingest` of them or "
                                       "`cairn serve` ingests them once space is free.") from exc
            outcomes = [results.get(o.job_id) or await _not_run(services.jobs, o, services.catalog) if o.job_id else o
                        for o in submitted]
    return _report(outcomes, as_json=args.json)


async def _not_run(jobs: Jobs, outcome: FileOutcome, catalog: Catalog) -> FileOutcome:
    """A submitted file this run did not ingest: its job's state, and why."""
    from retrieval.ingest import FileOutcome, outcome_of_job

    job = await jobs.get(job_id=outcome.job_id or "")
    if job is None:
        return outcome
    if job.state in (*FINAL_STATES, "failed"):
        return await outcome_of_job(job, catalog, path=outcome.path)
    return FileOutcome(path=outcome.path, doc_id=job.doc_id, status="queued", job_id=job.job_id,
                       message="not ingested: another live worker is running this job; run the same "
                               "`cairn ingest` again once it has finished")


async def _hand_over(settings: Settings, access: AccessPolicy, planned: list[Planned],
                     options: DocumentOptions, *, quiet: bool) -> list[FileOutcome]:
    """The server owns the index: queue the jobs for its worker and follow their rows."""
    from retrieval.ingest import Submitter, outcome_of_job

    async with open_store(settings) as store:
        jobs = store.jobs
        submitter = Submitter(catalog=store.catalog, jobs=jobs, raw_root=settings.raw_path,
                              max_bytes=settings.max_file_bytes,
                              allowed_groups=access.groups_of)
        outcomes = await _submit_all(submitter, planned, options)
        if not quiet:
            print("cairn serve holds the index: jobs handed to its worker; following progress…", file=sys.stderr)
        final = []
        for outcome in outcomes:
            while outcome.job_id:
                job = await jobs.get(job_id=outcome.job_id)
                if job is None or job.state in (*FINAL_STATES, "failed"):
                    if job is not None:  # with the passage count the catalog holds, as `cairn docs` shows it
                        outcome = await outcome_of_job(job, store.catalog, path=outcome.path)
                    break
                await asyncio.sleep(0.5)
            final.append(outcome)
        return final


class _Progress:
    def __init__(self, *, enabled: bool, total: int) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self._progress: Any = None  # a rich Progress while a terminal shows one
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task("ingesting", total=self.total)
        return self

    def update(self, job: object, state: str) -> None:
        if self._progress is not None:
            name = getattr(job, "doc_id", "")
            self._progress.update(self._task, description=f"{state:<9} {name}")
            if state in ("published", "unchanged", "dead", "failed"):
                self._progress.advance(self._task)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def _report(outcomes: list[FileOutcome], *, as_json: bool) -> int:
    if as_json:
        for o in outcomes:
            emit_json({**o.as_dict(), "message": command_line_wording(o.message)})
    else:
        for o in outcomes:
            detail = f" {o.version} ({o.chunks} chunks)" if o.version and o.status != "rejected" else ""
            note = f": {command_line_wording(o.message)}" if o.message and o.status not in ("unchanged",) else ""
            print(f"{o.status:<10} {o.doc_id or '-'}{detail}  [{o.path}]{note}")
        counts = Counter(o.status for o in outcomes)
        print("summary: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), file=sys.stderr)
    return 0 if all(o.status in OK_STATUSES for o in outcomes) else 1


async def docs(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:  # read-only use: works while the server holds the index
        records = await store.catalog.list_documents(tenant_id=args.tenant)
    if args.json:
        emit_json([{"tenant": d.tenant_id, "doc_id": d.doc_id, "title": d.title, "version": d.current_version,
                    "status": d.status, "chunks": d.chunk_count, "groups": list(d.groups), "owner": d.owner,
                    "policy_id": d.policy_id, "sensitivity": d.sensitivity, "effective": d.effective_at,
                    "expires": d.expires_at, "pending_version": d.pending_version,
                    "superseded_by": d.superseded_by} for d in records])
        return 0
    if not records:
        print("no documents yet: try `cairn ingest sample/handbook`")
        return 0
    print(f"{'tenant':<10} {'document':<38} {'ver':<5} {'status':<10} {'chunks':>6}  groups / owner")
    for d in records:
        extra = f" (pending {d.pending_version})" if d.pending_version else ""
        eff = f" effective {d.effective_at[:10]}" if d.effective_at else ""
        print(f"{d.tenant_id:<10} {d.doc_id:<38} {d.current_version or '-':<5} {d.status:<10} {d.chunk_count:>6}"
              f"  {','.join(d.groups)} {d.owner or ''}{eff}{extra}")
    return 0


def _job_dict(job: JobRecord) -> dict[str, object]:
    return {"job_id": job.job_id, "state": job.state, "attempts": job.attempts, "tenant": job.tenant_id,
            "doc_id": job.doc_id, "path": job.source_path, "version": job.version, "updated": job.updated_at,
            "error": command_line_wording(job.last_error)}


async def jobs_list(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:  # a read: works while the server holds the index
        jobs = store.jobs
        records = await jobs.list(limit=50) if args.all else await jobs.list(limit=500, states=UNFINISHED_STATES)
    if args.json:
        for job in records:
            emit_json(_job_dict(job))
        return 0
    if not records:
        print("no unfinished ingestion jobs" + ("" if args.all else " (--all shows recent ones)"))
        return 0
    print(f"{'job':<12} {'state':<10} {'tries':>5}  {'document':<36} error")
    for job in records:
        print(f"{job.job_id[:12]:<12} {job.state:<10} {job.attempts:>5}  {job.tenant_id + ':' + job.doc_id:<36} "
              f"{(command_line_wording(job.last_error) or '')[:80]}")
    return 0


async def jobs_cancel(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:  # SQLite only: the server's worker sees the cancellation
        jobs = store.jobs
        matches = [j for j in await jobs.list(limit=100_000) if j.job_id.startswith(args.job_id)]
        if len(matches) != 1:
            raise CommandError(f"no job {args.job_id!r}" if not matches else
                               f"{args.job_id!r} matches {len(matches)} jobs; give more of the id")
        job = matches[0]
        if job.state not in UNFINISHED_STATES:
            raise CommandError(f"job {job.job_id} has already finished ({job.state}); nothing to cancel")
        cancelled = await jobs.cancel(job_id=job.job_id) or job
        if cancelled.version:  # a version it registered will never publish: cleanup removes it
            await store.catalog.mark_failed(tenant_id=job.tenant_id, doc_id=job.doc_id, version=cancelled.version)
    if args.json:
        emit_json(_job_dict(cancelled))
    else:
        print(f"cancelled {cancelled.job_id} ({cancelled.tenant_id}:{cancelled.doc_id}, was {job.state})")
    return 0 if cancelled.state == "cancelled" else 1


async def withdraw(args: argparse.Namespace, settings: Settings) -> int:
    async with local_services(settings, warm=False) as services:
        tenant = args.tenant or services.access.default_tenant
        if await services.catalog.get_document(tenant_id=tenant, doc_id=args.doc_id) is None:
            raise CommandError(f"no document {args.doc_id!r} in tenant {tenant}")
        revoked = await services.ingestor.withdraw(tenant_id=tenant, doc_id=args.doc_id)
    if args.json:
        emit_json({"doc_id": args.doc_id, "tenant": tenant, "withdrawn": True, "was_active": revoked})
    else:
        print(f"withdrawn {args.doc_id}: no longer eligible; vectors and text removed")
    return 0
