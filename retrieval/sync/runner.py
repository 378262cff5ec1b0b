"""The mirror: a source's listing against what it synced before.

New item → ingested; changed → a new version (same bytes = the no-op ingestion already gives); gone →
withdrawn as `cairn withdraw` does it (eligibility first, then vectors and text). A folder file that
disappeared is gone at once; a web page that answers 404 is withdrawn only when the next run sees it
gone again (a deploy in progress, a mistyped redirect). A listing error withdraws nothing.

The runner works in two settings. With an Ingestor (this process holds the index) it runs the jobs it
queued and removes vectors itself. Without one (`cairn serve` holds the index) it hands the jobs to the
server's worker and follows their rows, and a withdrawal revokes eligibility at once while the
server's worker removes vectors and text on its next pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.ingest import (
    WITHDRAWN,
    DocumentOptions,
    FileOutcome,
    Ingestor,
    ProgressCallback,
    Submitter,
    outcome_of_job,
)
from retrieval.sync.directory import DirectoryLister
from retrieval.sync.files import OutsideSource, read_source_file
from retrieval.sync.model import CONTENT, ERROR, GONE, NOT_MODIFIED, SKIPPED, Fetched, ListingError
from retrieval.sync.website import (
    DEFAULT_CONCURRENCY,
    DEFAULT_DELAY_S,
    DEFAULT_FETCH_S,
    DEFAULT_MAX_PAGES,
    DEFAULT_MAX_RUN_S,
    WebsiteLister,
)
from store.access import EVERYONE
from store.catalog import Catalog
from store.db import iso
from store.jobs import FINAL_STATES, Jobs
from store.sources import SourceItem, SourceRecord, Sources

log = logging.getLogger(__name__)

# What happened to one item in a run (the counts of a report are keyed by these).
RESULTS = ("new", "changed", "unchanged", "not_modified", "pending_removal", "withdrawn", "failed", "error",
           "skipped")
OK_JOB_STATES = ("published", "scheduled")


@dataclass(frozen=True)
class ItemResult:
    key: str
    doc_id: str | None
    result: str
    version: str | None = None
    message: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "doc_id": self.doc_id, "result": self.result, "version": self.version,
                "message": self.message}


@dataclass
class SyncReport:
    source_id: str
    location: str
    status: str  # ok | partial (some items failed) | failed (the source could not be listed) | busy
    error: str | None = None
    items: list[ItemResult] = field(default_factory=list)
    requests: int = 0

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(item.result for item in self.items))

    def as_dict(self) -> dict[str, object]:
        return {"source_id": self.source_id, "location": self.location, "status": self.status,
                "error": self.error, "counts": self.counts, "requests": self.requests,
                "items": [item.as_dict() for item in self.items]}


@dataclass
class SyncRunner:
    sources: Sources
    submitter: Submitter
    catalog: Catalog
    jobs: Jobs
    ingestor: Ingestor | None = None  # None: another process (the running server) owns the index
    run_jobs: bool = True  # False: a worker (the server's) runs the queued jobs; the runner follows their rows
    poll_s: float = 0.5

    async def run(self, source: SourceRecord, *, on_progress: ProgressCallback | None = None,
                  lister: DirectoryLister | WebsiteLister | None = None) -> SyncReport:
        report = SyncReport(source_id=source.source_id, location=source.location, status="ok")
        if not await self.sources.claim_run(source_id=source.source_id):
            report.status, report.error = "busy", "another sync of this source is running"
            return report
        try:
            await self._run(source, report, lister or lister_for(source, max_bytes=self.submitter.max_bytes),
                            on_progress)
        except ListingError as exc:
            report.status, report.error = "failed", str(exc)
        except Exception as exc:  # recorded on the source row, then raised for the caller's log
            report.status, report.error = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if report.status != "failed" and any(i.result in ("error", "failed") for i in report.items):
                report.status = "partial"
            errors = [f"{i.doc_id or i.key}: {i.message}" for i in report.items if i.result in ("error", "failed")]
            await self.sources.finish_run(source_id=source.source_id, status=report.status,
                                          error=report.error or ("; ".join(errors[:5]) or None),
                                          counts=report.counts)
        return report

    async def _run(self, source: SourceRecord, report: SyncReport, lister: DirectoryLister | WebsiteLister,
                   on_progress: ProgressCallback | None) -> None:
        known = await self.sources.items(source_id=source.source_id)
        listing = await lister.scan(known)  # raises ListingError: nothing below runs
        report.requests = getattr(lister, "requests", 0)
        for note in getattr(lister, "notes", []):  # a budget reached: the admin should know pages were left out
            report.items.append(ItemResult("(crawl)", None, "error", message=note))
        options = source_options(source)
        confirm_removals = source.kind == "website"
        submitted: list[tuple[Fetched, FileOutcome, bool]] = []
        removals: list[tuple[Fetched, SourceItem | None]] = []
        for fetched in listing:
            item = known.get(fetched.key)
            if fetched.result == CONTENT:
                claimed = await self.sources.owner_of(tenant_id=source.tenant_id, doc_id=fetched.doc_id)
                if claimed is not None and claimed != source.source_id:
                    # Reported, not recorded: a row here would make this source a second claimant.
                    report.items.append(ItemResult(fetched.key, fetched.doc_id, "error", message=(
                        f"document id {fetched.doc_id!r} is already kept in sync by another source ({claimed})")))
                    continue
                try:
                    data = fetched.data if fetched.path is None else await asyncio.to_thread(
                        read_source_file, Path(source.location), fetched.path, max_bytes=self.submitter.max_bytes)
                except OutsideSource as exc:
                    await self._record(source, fetched, "skipped", message=f"skipped: {exc}", report=report,
                                       previous=item, keep_validators=True)
                    continue
                except OSError as exc:
                    await self._record(source, fetched, "error", message=f"cannot read file: {exc.strerror or exc}",
                                       report=report, previous=item, keep_validators=True)
                    continue
                doc = await self.catalog.get_document(tenant_id=source.tenant_id, doc_id=fetched.doc_id)
                was_live = doc is not None and doc.status == "active" and doc.current_version is not None
                outcome = await self.submitter.submit_bytes(
                    data or b"", filename=fetched.filename, doc_id=fetched.doc_id, options=options,
                    requested_by=f"sync:{source.source_id}")
                submitted.append((fetched, outcome, was_live))
            elif fetched.result == NOT_MODIFIED:
                await self._record(source, fetched, "not_modified", report=report, previous=item)
            elif fetched.result == GONE:
                removals.append((fetched, item))
            elif fetched.result == ERROR:
                # The item keeps its current version and its validators, so the next run asks again.
                await self._record(source, fetched, "error", message=fetched.message, report=report,
                                   previous=item, keep_validators=True)
            elif fetched.result == SKIPPED:
                if item is not None and item.state != "withdrawn":
                    removals.append((fetched, item))
                else:
                    report.items.append(ItemResult(fetched.key, None, "skipped", message=fetched.message))
        finals = await self._finish_jobs([o for _, o, _ in submitted], on_progress)
        for fetched, outcome, was_live in submitted:
            final = finals.get(outcome.job_id or "", outcome)
            item = known.get(fetched.key)
            if final.status in OK_JOB_STATES:
                result = "changed" if was_live else "new"
            elif final.status == "unchanged":
                result = "unchanged"
            else:
                result = "error" if final.status == "rejected" else "failed"
            await self._record(source, fetched, result, version=final.version, message=final.message,
                               report=report, previous=item)
        # Removals last: a renamed file's new document is published before the old one is withdrawn.
        for fetched, item in removals:
            await self._gone(source, fetched, item, report, confirm=confirm_removals)

    async def _gone(self, source: SourceRecord, fetched: Fetched, item: SourceItem | None, report: SyncReport,
                    *, confirm: bool) -> None:
        if item is None or item.state == "withdrawn":
            if item is None and fetched.message and fetched.message.startswith("HTTP"):
                # A dead link or a stale sitemap entry: the site's problem, nothing to sync or withdraw.
                report.items.append(ItemResult(fetched.key, None, "skipped",
                                               message=f"{fetched.message}: linked or listed, never synced"))
            return
        if confirm and item.state != "missing":
            await self.sources.record_item(
                source_id=source.source_id, tenant_id=source.tenant_id, item_key=item.item_key,
                doc_id=item.doc_id, url=item.url, validator=None, etag=None, last_modified=None, links=item.links,
                state="missing", missing_since=iso(), last_result="pending_removal", last_error=fetched.message)
            report.items.append(ItemResult(item.item_key, item.doc_id, "pending_removal",
                                           message=f"{fetched.message}; withdrawn if the next run confirms it"))
            return
        await self._withdraw(source.tenant_id, item.doc_id)
        await self.sources.record_item(
            source_id=source.source_id, tenant_id=source.tenant_id, item_key=item.item_key, doc_id=item.doc_id,
            url=item.url, state="withdrawn", missing_since=item.missing_since or iso(), last_result="withdrawn",
            last_error=fetched.message)
        report.items.append(ItemResult(item.item_key, item.doc_id, "withdrawn", message=fetched.message))

    async def _withdraw(self, tenant_id: str, doc_id: str) -> None:
        if self.ingestor is not None:
            await self.ingestor.withdraw(tenant_id=tenant_id, doc_id=doc_id)
            return
        # The server holds the index: the same order as Ingestor.withdraw, its worker's cleanup pass
        # removes the vectors and text of the withdrawn versions.
        await self.jobs.cancel_unfinished(tenant_id=tenant_id, doc_id=doc_id, reason=WITHDRAWN)
        await self.catalog.withdraw(tenant_id=tenant_id, doc_id=doc_id)

    async def _finish_jobs(self, outcomes: list[FileOutcome],
                           on_progress: ProgressCallback | None) -> dict[str, FileOutcome]:
        queued = [o.job_id for o in outcomes if o.status == "queued" and o.job_id]
        finals: dict[str, FileOutcome] = {}
        if queued and self.ingestor is not None and self.run_jobs:
            ran = await self.ingestor.run_pending(on_progress=on_progress, only=queued)
            finals = {r.job_id: r for r in ran if r.job_id}
        # Jobs this process did not run (a worker claimed them first, or runs them all) are followed.
        waiting = [job_id for job_id in queued if job_id not in finals]
        while waiting:
            for job_id in list(waiting):
                job = await self.jobs.get(job_id=job_id)
                if job is None or job.state in (*FINAL_STATES, "failed"):
                    waiting.remove(job_id)
                    if job is not None:
                        finals[job_id] = await outcome_of_job(job, self.catalog)
            if waiting:
                await asyncio.sleep(self.poll_s)
        return finals

    async def _record(self, source: SourceRecord, fetched: Fetched, result: str, *, report: SyncReport,
                      version: str | None = None, message: str | None = None, previous: SourceItem | None = None,
                      keep_validators: bool = False) -> None:
        report.items.append(ItemResult(fetched.key, fetched.doc_id or None, result, version=version, message=message))
        if not fetched.doc_id:
            return
        if result == "error" and previous is None and keep_validators:
            return  # never synced and unreadable now: nothing to remember
        if keep_validators and previous is not None:
            validator, etag, modified, links = previous.validator, previous.etag, previous.last_modified, previous.links
            state, result_kept = previous.state, previous.last_result
        else:
            validator, etag, modified, links = fetched.validator, fetched.etag, fetched.last_modified, fetched.links
            state, result_kept = "present", result
        if result in ("error", "failed") and not keep_validators:
            # A new version that failed: without validators the next run reads the item again.
            validator = etag = modified = None
            state = previous.state if previous is not None and previous.state != "withdrawn" else "present"
        await self.sources.record_item(
            source_id=source.source_id, tenant_id=source.tenant_id, item_key=fetched.key, doc_id=fetched.doc_id,
            url=fetched.url, validator=validator, etag=etag, last_modified=modified, links=links, state=state,
            last_result=result_kept, last_error=message)


def source_options(source: SourceRecord) -> DocumentOptions:
    """Access and ownership from the source's configuration only: explicit groups (everyone by default)
    so no front matter or page metadata can widen or narrow who reads a synced document."""
    return DocumentOptions(tenant_id=source.tenant_id, groups=source.groups or (EVERYONE,), owner=source.owner)


def options_key(source: SourceRecord) -> str:
    options = source_options(source)
    return hashlib.sha256(json.dumps([options.groups, options.owner]).encode()).hexdigest()[:12]


def lister_for(source: SourceRecord, *, max_bytes: int) -> DirectoryLister | WebsiteLister:
    if source.kind == "directory":
        return DirectoryLister(Path(source.location), options_key=options_key(source))
    settings = source.settings
    return WebsiteLister(source.location,
                         concurrency=int(settings.get("concurrency", DEFAULT_CONCURRENCY)),  # type: ignore[call-overload]
                         delay_s=float(settings.get("delay_s", DEFAULT_DELAY_S)),  # type: ignore[arg-type]
                         timeout_s=float(settings.get("timeout_s", 10.0)),  # type: ignore[arg-type]
                         fetch_s=float(settings.get("fetch_s", DEFAULT_FETCH_S)),  # type: ignore[arg-type]
                         max_run_s=float(settings.get("max_run_s", DEFAULT_MAX_RUN_S)),  # type: ignore[arg-type]
                         max_pages=int(settings.get("max_pages", DEFAULT_MAX_PAGES)),  # type: ignore[call-overload]
                         max_bytes=max_bytes)
