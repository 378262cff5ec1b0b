"""Ingestion: file → raw copy → job → parse → chunk → catalog (pending) → embed → index → confirm → publish.

Catalog first, publish last: a version becomes eligible only after the index confirms every point
of its manifest, and the previous version leaves eligibility in the same catalog transaction.
Every step is keyed by stable ids, so a crash anywhere is repaired by running the job again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import time
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from retrieval.chunk import ChunkDraft, chunk_document
from retrieval.embed import EmbeddedText, Embedder
from retrieval.index import IndexPoint, VectorIndex, point_id_for
from retrieval.language import detect_language
from retrieval.parse import SUPPORTED_SUFFIXES, ParseBudget, ParsedDocument, ParseError, _size_phrase
from retrieval.parse.isolated import parse_in_worker
from store.access import EVERYONE
from store.catalog import Catalog, NewChunk, chunk_id_for
from store.disk import ensure_free
from store.document_options import option_problems
from store.jobs import Jobs
from store.records import JobRecord

log = logging.getLogger(__name__)
T = TypeVar("T")

ProgressCallback = Callable[[JobRecord, str], Awaitable[None] | None]
_DOC_ID = re.compile(r"^[\w\-.\u0600-\u06FF]+(/[\w\-.\u0600-\u06FF]+)*$")
_STORED_NAME = re.compile(r"^(v\d+\.\w+|.*\.part)$")  # raw/<tenant>/<doc>/v3.md, …/incoming/<hash>.md.part
_TENANT = re.compile(r"^[A-Za-z0-9][\w\-.]*$")
EMBED_BATCH = 64
WITHDRAWN = "document withdrawn"  # why a withdrawal cancels its document's unfinished jobs


class IngestError(ValueError):
    """A per-file problem the user must fix; shown as-is."""


class JobCancelled(Exception):
    """The job was cancelled while this worker ran it (its document was withdrawn)."""


@dataclass(frozen=True)
class DocumentOptions:
    tenant_id: str
    groups: tuple[str, ...] | None = None
    policy_id: str | None = None
    owner: str | None = None
    sensitivity: str | None = None
    effective: str | None = None
    expires: str | None = None
    supersedes: str | None = None


@dataclass(frozen=True)
class FileOutcome:
    path: str
    doc_id: str | None
    status: str  # queued | unchanged | published | scheduled | failed | dead | cancelled | rejected
    version: str | None = None
    chunks: int = 0
    message: str | None = None
    job_id: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "doc_id": self.doc_id, "status": self.status, "version": self.version,
                "chunks": self.chunks, "message": self.message, "job_id": self.job_id}


@dataclass
class Submitter:
    """The hand-over: checks what can be checked at once, stores the original, queues a job.

    Needs only the database, so a CLI can hand work to a running server's worker.
    """

    catalog: Catalog
    jobs: Jobs
    raw_root: Path
    max_bytes: int = 20 * 1024 * 1024
    allowed_groups: Callable[[str], frozenset[str]] | None = None

    async def submit_bytes(self, data: bytes, *, filename: str, doc_id: str, options: DocumentOptions,
                           requested_by: str | None = None, notify: dict[str, object] | None = None,
                           dedupe_key: str | None = None) -> FileOutcome:
        try:
            validate_tenant(options.tenant_id)
            doc_id = validate_doc_id(doc_id)
            suffix = Path(filename).suffix.lower()
            if suffix not in SUPPORTED_SUFFIXES:
                raise IngestError(f"unsupported file type '{suffix or filename}'; supported: "
                                  + ", ".join(sorted(SUPPORTED_SUFFIXES)))
            if len(data) > self.max_bytes:
                raise IngestError(f"The {_size_phrase(len(data), self.max_bytes)}: split it into smaller "
                                  "documents and upload them separately.")
            if not data.strip():
                raise IngestError("file is empty")
            check_groups(options, self.allowed_groups)
            twin = (await self.catalog.case_twin(tenant_id=options.tenant_id, doc_id=doc_id)
                    or await self.jobs.case_twin(tenant_id=options.tenant_id, doc_id=doc_id))
            if twin is not None:
                raise IngestError(f"document id {doc_id!r} differs from the existing {twin!r} only in letter case: "
                                  "on a case-insensitive file system (macOS, Windows) they would be one file. Use "
                                  f"{twin!r} to replace that document, or choose another id")
        except IngestError as exc:
            return FileOutcome(path=filename, doc_id=doc_id, status="rejected", message=str(exc))
        digest = content_hash(data, options)
        existing = await self.catalog.find_version_by_hash(tenant_id=options.tenant_id, doc_id=doc_id,
                                                          content_hash=digest)
        if existing is not None and existing.state in ("published", "scheduled"):
            return FileOutcome(path=filename, doc_id=doc_id, status="unchanged", version=existing.version,
                               chunks=existing.chunk_count, message="same content as the current version")
        raw = self.raw_root / options.tenant_id / doc_id / "incoming" / f"{digest[:32]}{suffix}"
        if not raw.exists():
            raw.parent.mkdir(parents=True, exist_ok=True)
            tmp = raw.with_suffix(raw.suffix + ".part")
            tmp.write_bytes(data)
            tmp.replace(raw)  # atomic: a reader never sees half an original
        job, _created = await self.jobs.enqueue(
            tenant_id=options.tenant_id, doc_id=doc_id, source_path=filename, raw_path=str(raw),
            content_hash=digest, options=_options_dict(options), requested_by=requested_by, notify=notify,
            dedupe_key=dedupe_key or f"{options.tenant_id}:{doc_id}:{digest}",
        )
        return FileOutcome(path=filename, doc_id=doc_id, status="queued", job_id=job.job_id,
                           version=job.version)


async def outcome_of_job(job: JobRecord, catalog: Catalog, *, path: str | None = None) -> FileOutcome:
    """A finished job as a FileOutcome, with its version's passage count from the catalog (the job row
    does not hold it: a worker in another process, `cairn serve`'s, ran the job)."""
    chunks = 0
    if job.version:
        version = await catalog.get_version(tenant_id=job.tenant_id, doc_id=job.doc_id, version=job.version)
        chunks = version.chunk_count if version is not None else 0
    return FileOutcome(path=path or job.source_path, doc_id=job.doc_id, status=job.outcome or job.state,
                       version=job.version, chunks=chunks, message=job.last_error, job_id=job.job_id)


def check_groups(options: DocumentOptions, allowed_groups: Callable[[str], frozenset[str]] | None) -> None:
    if options.groups is None or allowed_groups is None:
        return
    unknown = sorted(set(options.groups) - allowed_groups(options.tenant_id))
    if unknown:
        raise IngestError(f"groups {unknown} are not defined for tenant {options.tenant_id}")


@dataclass
class Ingestor:
    """The worker: runs queued jobs to publication, publishes by date, cleans up, withdraws."""

    catalog: Catalog
    jobs: Jobs
    index: VectorIndex
    embedder: Embedder
    raw_root: Path
    max_bytes: int = 20 * 1024 * 1024
    chunk_tokens: int = 400
    chunk_overlap: int = 50
    allowed_groups: Callable[[str], frozenset[str]] | None = None
    min_free_mb: int = 0  # below this much free disk no job starts (store/disk.py says why)
    max_chunks: int = 3000  # passages per document; more is refused with a clear message
    job_timeout_s: float = 900.0  # one job's parse, chunk and embed budget
    cancel_poll_s: float = 1.0  # how often a running job looks whether it was cancelled
    lanes: int = 2  # jobs run at once, so one large upload never holds up the small ones behind it
    _index_writes: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False, compare=False)

    @property
    def parse_budget(self) -> ParseBudget:
        """What one file may cost to read (retrieval/parse/budget.py), its text matched to max_chunks."""
        return ParseBudget.for_passages(self.max_chunks, self.chunk_tokens, self.chunk_overlap)

    @property
    def submitter(self) -> Submitter:
        return Submitter(catalog=self.catalog, jobs=self.jobs, raw_root=self.raw_root,
                         max_bytes=self.max_bytes, allowed_groups=self.allowed_groups)

    async def submit_bytes(self, data: bytes, **kwargs: object) -> FileOutcome:
        return await self.submitter.submit_bytes(data, **kwargs)  # type: ignore[arg-type]

    async def ingest_now(self, data: bytes, *, filename: str, doc_id: str, options: DocumentOptions,
                         requested_by: str | None = None) -> FileOutcome:
        """Submit one file and run its job at once, for a caller that reports how it went (the job's
        lease keeps a worker from running it twice); a refused submission's outcome as it is."""
        outcome = await self.submit_bytes(data, filename=filename, doc_id=doc_id, options=options,
                                          requested_by=requested_by)
        if outcome.status != "queued" or not outcome.job_id:
            return outcome
        done = {r.job_id: r for r in await self.run_pending(only=[outcome.job_id])}
        return done.get(outcome.job_id, outcome)

    # -- the worker -----------------------------------------------------------------------------

    async def run_pending(self, *, on_progress: ProgressCallback | None = None,
                          only: Sequence[str] | None = None) -> list[FileOutcome]:
        """Run every runnable job (or just `only`) to a final or failed state, oldest first, `lanes` at
        a time (never two of one document at once); the outcomes in the order the jobs were taken.

        Raises `LowDiskError` before claiming a job while less than `min_free_mb` is free (after the
        jobs already running have finished); the jobs not started stay queued for the next run."""
        outcomes: dict[str, FileOutcome] = {}
        taken: list[str] = []
        # This process holds the index: a job leased by a worker of this host that has died (kill -9,
        # a crash) is resumed now, not when its lease runs out.
        reclaimed = await self.jobs.reclaim_dead_leases()
        if reclaimed:
            log.info("resuming %d job(s) whose worker died: %s", len(reclaimed), ", ".join(reclaimed))
        running: dict[asyncio.Future[FileOutcome], JobRecord] = {}
        low_disk: Exception | None = None
        try:
            while True:
                job = None
                if len(running) < max(self.lanes, 1) and low_disk is None:
                    try:
                        # Jobs stay queued while the disk is nearly full: growing the index then would crash.
                        ensure_free(self.raw_root, self.min_free_mb)
                    except Exception as exc:  # LowDiskError: raised once the running jobs are done
                        low_disk = exc
                    else:
                        # Each job at most once per run: one that fails and falls due again waits for the next.
                        # One job of a document at a time: the store passes over a job whose
                        # document another lane (or process) is running.
                        job = await self.jobs.claim_next(exclude=tuple(taken), only=only)
                if job is not None:
                    taken.append(job.job_id)
                    running[asyncio.ensure_future(self.run_job(job, on_progress=on_progress))] = job
                    continue
                if not running:
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    outcomes[running.pop(task).job_id] = task.result()
        finally:
            for task in running:
                task.cancel()
        if low_disk is not None:
            raise low_disk
        await self.cleanup()
        return [outcomes[job_id] for job_id in taken]

    async def run_job(self, job: JobRecord, *, on_progress: ProgressCallback | None = None) -> FileOutcome:
        async def step(state: str, version: str | None = None, outcome: str | None = None) -> None:
            # Each step checks the job is still wanted: a withdrawal cancels it while it runs.
            if not await self.jobs.advance(job_id=job.job_id, state=state, version=version, outcome=outcome):
                raise JobCancelled(job.job_id)
            if on_progress is not None:
                await _notify(on_progress, await self.jobs.get(job_id=job.job_id) or job, state)

        options = _options_from(job.options)
        version: str | None = job.version
        chunks: list[NewChunk] = []
        deadline = time.monotonic() + self.job_timeout_s
        try:
            await step("parsing")
            # Parsing and chunking are CPU work on untrusted input: off the event loop, under the
            # job's budget, so neither a large nor a hostile file stalls the server's other work.
            data = await asyncio.to_thread(Path(job.raw_path).read_bytes)
            parsed = await self._within_budget(deadline, parse_in_worker(data, filename=job.source_path,
                                                                         budget=self.parse_budget), job)
            drafts, langs = await self._within_budget(deadline, asyncio.to_thread(self._chunk, parsed), job)
            existing = await self.catalog.find_version_by_hash(
                tenant_id=job.tenant_id, doc_id=job.doc_id, content_hash=job.content_hash)
            if existing is not None and existing.state in ("published", "scheduled"):
                if not await self.jobs.advance(job_id=job.job_id, state="unchanged", version=existing.version,
                                               outcome="unchanged"):
                    raise JobCancelled(job.job_id)
                return FileOutcome(path=job.source_path, doc_id=job.doc_id, status="unchanged",
                                   version=existing.version, chunks=existing.chunk_count, job_id=job.job_id)
            meta = parsed.metadata
            groups = options.groups or tuple(_str_list(meta.get("groups"))) or (EVERYONE,)
            check_groups(DocumentOptions(tenant_id=job.tenant_id, groups=groups), self.allowed_groups)
            # Front matter is one more way options arrive: the same rules as the CLI's flags and Slack's modal.
            problems = option_problems(sensitivity=options.sensitivity or _str(meta.get("sensitivity")),
                                       policy_id=options.policy_id or _str(meta.get("policy_id")))
            if problems:
                raise IngestError("front matter: " + "; ".join(problems.values()))

            if existing is not None:  # a crash left this content registered but unpublished
                version = existing.version
                chunks = await self.catalog.version_chunks(tenant_id=job.tenant_id, doc_id=job.doc_id,
                                                           version=version)
            else:
                def build(v: str) -> list[NewChunk]:
                    return [NewChunk(chunk_id=(cid := chunk_id_for(job.tenant_id, job.doc_id, v, d.seq)),
                                     point_id=point_id_for(cid), seq=d.seq, text=d.text,
                                     heading=" > ".join(d.heading_path), page=d.page,
                                     source_key=job.source_path, token_count=d.token_count,
                                     lang=lang) for d, lang in zip(drafts, langs, strict=True)]

                version, chunks = await self.catalog.register_version(
                    tenant_id=job.tenant_id, doc_id=job.doc_id, title=parsed.title,
                    content_hash=job.content_hash, source_path=job.source_path,
                    raw_path_for=lambda v: str(self._original_path(job, v)), lang=parsed.lang,
                    groups=groups, policy_id=options.policy_id or _str(meta.get("policy_id")),
                    owner=options.owner or _str(meta.get("owner")),
                    sensitivity=options.sensitivity or _str(meta.get("sensitivity")) or "internal",
                    supersedes=options.supersedes or _str(meta.get("supersedes")),
                    effective_at=_as_instant(options.effective or meta.get("effective")),
                    expires_at=_as_instant(options.expires or meta.get("expires")),
                    chunks_for=build,
                )
                self._keep_original(job, version)
            await step("embedding", version)
            payload_base = {"tenant_id": job.tenant_id, "doc_id": job.doc_id, "version": version,
                            "policy_id": options.policy_id or _str(meta.get("policy_id")),
                            "sensitivity": options.sensitivity or _str(meta.get("sensitivity")) or "internal",
                            "groups": list(groups), "acl_version": 1}
            points: list[IndexPoint] = []
            for start in range(0, len(chunks), EMBED_BATCH):
                batch = chunks[start:start + EMBED_BATCH]
                embedded = await self._within_budget(
                    deadline, asyncio.to_thread(self.embedder.embed_documents, [c.text for c in batch]), job)
                points.extend(IndexPoint(point_id=c.point_id, vectors=e.vectors,
                                         payload={**payload_base, "chunk_id": c.chunk_id, "lang": c.lang})
                              for c, e in zip(batch, embedded, strict=True))
                await self.catalog.store_vectors(rows=[vector_row(c.chunk_id, e)
                                                       for c, e in zip(batch, embedded, strict=True)])
            await step("indexing", version)
            async with self._index_writes:
                await asyncio.to_thread(self.index.upsert, points)
            manifest = await self.catalog.manifest(tenant_id=job.tenant_id, doc_id=job.doc_id, version=version)
            present = await asyncio.to_thread(self.index.existing, manifest)
            missing = set(manifest) - present
            if missing:
                raise RuntimeError(f"index confirmed {len(present)} of {len(manifest)} points")
            await self.catalog.mark_indexed(tenant_id=job.tenant_id, doc_id=job.doc_id, version=version)
            outcome = await self.catalog.publish_version(tenant_id=job.tenant_id, doc_id=job.doc_id,
                                                         version=version)
            final = "published" if outcome.published else "scheduled"
            await step("published", version, outcome=final)
            return FileOutcome(path=job.source_path, doc_id=job.doc_id, status=final, version=version,
                               chunks=len(chunks), job_id=job.job_id)
        except JobCancelled:
            return await self._stop_cancelled(job, version, chunks, on_progress)
        except (ParseError, IngestError) as exc:
            if version:
                await self.catalog.mark_failed(tenant_id=job.tenant_id, doc_id=job.doc_id, version=version)
            failed = await self.jobs.fail(job_id=job.job_id, error=str(exc), permanent=True)
            if failed.state == "cancelled":
                return await self._stop_cancelled(job, version, chunks, on_progress)
            await self._forget_refused(job, version)
            await _notify(on_progress, failed)
            return FileOutcome(path=job.source_path, doc_id=job.doc_id, status="failed", message=str(exc),
                               job_id=job.job_id)
        except Exception as exc:  # infrastructure: retried with backoff, then dead-lettered
            failed = await self.jobs.fail(job_id=job.job_id, error=f"{type(exc).__name__}: {exc}")
            if failed.state == "cancelled":  # e.g. publishing a version the withdrawal took away
                return await self._stop_cancelled(job, version, chunks, on_progress)
            log.exception("ingest job %s failed", job.job_id)
            if failed.state == "dead" and version:
                await self.catalog.mark_failed(tenant_id=job.tenant_id, doc_id=job.doc_id, version=version)
            await _notify(on_progress, failed)
            return FileOutcome(path=job.source_path, doc_id=job.doc_id, status=failed.state,
                               message=failed.last_error, job_id=job.job_id)

    def _chunk(self, parsed: ParsedDocument) -> tuple[list[ChunkDraft], list[str]]:
        """Chunk a parsed document (in a worker thread): the chunk drafts and each chunk's language."""
        # Refuse a document far over the passage limit before paying for chunking it.
        estimate = sum(len(s.text) for s in parsed.sections) // (4 * max(self.chunk_tokens - self.chunk_overlap, 1))
        if estimate > 2 * self.max_chunks:
            raise IngestError(_too_many_chunks(f"about {estimate:,}", self.max_chunks))
        drafts = chunk_document(parsed, count_tokens=self.embedder.count_tokens,
                                max_tokens=self.chunk_tokens, overlap=self.chunk_overlap)
        if not drafts:
            raise ParseError("parsing left no text to index; check that the file has readable body text")
        if len(drafts) > self.max_chunks:
            raise IngestError(_too_many_chunks(f"{len(drafts):,}", self.max_chunks))
        return drafts, [detect_language(d.text) for d in drafts]

    async def _within_budget(self, deadline: float, work: Awaitable[T], job: JobRecord) -> T:
        """Await `work` until the job's deadline, looking every `cancel_poll_s` whether the job was
        cancelled meanwhile (`cairn jobs cancel`, a withdrawal): then the work is stopped and
        JobCancelled raised. Past the deadline the job fails for good with the reason. A parse is
        stopped with its worker process; a thread still busy is left to finish, its result unused."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                done, _ = await asyncio.wait({task}, timeout=min(left, self.cancel_poll_s))
                if done:
                    return task.result()
                current = await self.jobs.get(job_id=job.job_id)
                if current is not None and current.state == "cancelled":
                    raise JobCancelled(job.job_id)
        except TimeoutError:
            raise IngestError(
                f"Processing this file took longer than {self.job_timeout_s:g} s (CAIRN_JOB_TIMEOUT): it is too "
                "large or too complex to ingest in one piece. Split it into smaller documents and upload them "
                "separately.") from None
        finally:
            if not task.done():
                task.cancel()  # a parse's worker process is killed; awaiting it is not needed

    async def _stop_cancelled(self, job: JobRecord, version: str | None, chunks: Sequence[NewChunk],
                              on_progress: ProgressCallback | None) -> FileOutcome:
        """The job's document was withdrawn while it ran: leave nothing of it to publish or to find."""
        if version:
            await self.catalog.mark_failed(tenant_id=job.tenant_id, doc_id=job.doc_id, version=version)
            current = await self.catalog.get_version(tenant_id=job.tenant_id, doc_id=job.doc_id, version=version)
            if chunks and current is not None and current.state == "removed":
                # The withdrawal's cleanup ran before this job's upsert: those points are in no
                # manifest any more, so no cleanup would ever find them.
                await asyncio.to_thread(self.index.delete, [c.point_id for c in chunks])
        cancelled = await self.jobs.get(job_id=job.job_id) or job
        await _notify(on_progress, cancelled)
        return FileOutcome(path=job.source_path, doc_id=job.doc_id, status="cancelled", version=version,
                           message=cancelled.last_error, job_id=job.job_id)

    async def _forget_refused(self, job: JobRecord, version: str | None) -> None:
        """A refused file keeps no copy: its incoming original (unless another unfinished job still
        needs the same bytes) and the version's hard link, if one was made."""
        paths = [Path(job.raw_path)]
        if version:
            paths.append(self._original_path(job, version))
        if await self.jobs.raw_in_use(raw_path=job.raw_path, other_than=job.job_id):
            paths = paths[1:]
        for path in paths:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(path.unlink, True)

    def _original_path(self, job: JobRecord, version: str) -> Path:
        return self.raw_root / job.tenant_id / job.doc_id / f"{version}{Path(job.raw_path).suffix}"

    def _keep_original(self, job: JobRecord, version: str) -> Path:
        """raw/tenant/doc/version.ext, immutable once written (hard link to the incoming copy)."""
        incoming = Path(job.raw_path)
        target = self._original_path(job, version)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                target.hardlink_to(incoming)
            except OSError:
                target.write_bytes(incoming.read_bytes())
        return target

    # -- publishing by date, cleanup, withdraw --------------------------------------------------

    async def publish_due(self, *, now: datetime | None = None) -> list[str]:
        """Versions whose effective date has arrived become current (no reindex)."""
        published = []
        for v in await self.catalog.due_scheduled_versions(now=now):
            outcome = await self.catalog.publish_version(tenant_id=v.tenant_id, doc_id=v.doc_id,
                                                         version=v.version, now=now)
            if outcome.published:
                published.append(f"{v.tenant_id}:{v.doc_id}:{v.version}")
        if published:
            await self.cleanup()
        return published

    async def cleanup(self) -> int:
        """Remove vectors, then text, of every version that left eligibility. Idempotent."""
        removed = 0
        for v in await self.catalog.versions_needing_cleanup():
            points = await self.catalog.manifest(tenant_id=v.tenant_id, doc_id=v.doc_id, version=v.version)
            await asyncio.to_thread(self.index.delete, points)
            left = await asyncio.to_thread(self.index.existing, points)
            if left:
                log.warning("index still holds %d points of %s %s", len(left), v.doc_id, v.version)
                continue
            await self.catalog.forget_version_content(tenant_id=v.tenant_id, doc_id=v.doc_id, version=v.version)
            removed += len(points)
        return removed

    async def withdraw(self, *, tenant_id: str, doc_id: str, on_progress: ProgressCallback | None = None) -> bool:
        """Cancel the document's unfinished jobs, revoke its eligibility, then remove vectors and text of
        every version. True when it was eligible until now. `on_progress` hears of each cancelled job.

        Jobs first: a job a worker is running stops at its next step, and a version it registered
        before this point is withdrawn below with the rest, so no upload queued before the withdrawal
        can publish the document again (one queued after it brings the document back, as it should).
        """
        with contextlib.suppress(IngestError):  # `coll2/./b` withdraws `coll2/b`; an invalid id matches nothing
            doc_id = validate_doc_id(doc_id)
        cancelled = await self.jobs.cancel_unfinished(tenant_id=tenant_id, doc_id=doc_id, reason=WITHDRAWN)
        revoked = await self.catalog.withdraw(tenant_id=tenant_id, doc_id=doc_id)
        await self.cleanup()
        for job in cancelled:
            await _notify(on_progress, job)
        return revoked

    async def set_groups(self, *, tenant_id: str, doc_id: str, groups: Sequence[str]) -> None:
        await self.catalog.set_groups(tenant_id=tenant_id, doc_id=doc_id, groups=groups)
        points = await self.catalog.manifest(tenant_id=tenant_id, doc_id=doc_id)
        await asyncio.to_thread(self.index.set_groups, points, list(groups))


# -- helpers --------------------------------------------------------------------------------------


def vector_row(chunk_id: str, e: EmbeddedText) -> dict[str, object]:
    ml = e.ml_vec
    return {"chunk_id": chunk_id, "dim": int(e.chunk_vec.shape[0]),
            "chunk_vec": e.chunk_vec.astype(np.float16).tobytes(),
            "ml_dim": 0 if ml is None else int(ml.shape[0]),
            "ml_vec": None if ml is None else ml.astype(np.float16).tobytes(),
            "sentences": json.dumps(e.sentences, ensure_ascii=False),
            "sent_dim": int(e.sentence_vecs.shape[1]) if e.sentence_vecs.ndim == 2 else 0,
            "sentence_vecs": e.sentence_vecs.astype(np.float16).tobytes(), "terms": json.dumps(e.terms)}


def _too_many_chunks(count: str, limit: int) -> str:
    return (f"The document would make {count} passages, over the limit of {limit:,} per document "
            "(CAIRN_MAX_CHUNKS). Split it into smaller documents and upload them separately.")


def validate_doc_id(doc_id: str) -> str:
    """The one spelling of a document id: NFC, no empty or '.' segments (`coll2/./b` is `coll2/b`).

    Refused: '..' (it would leave the document's directory), characters outside letters, digits,
    '-', '_', '.' and '/', and segments named like what the raw store keeps inside a document's
    directory (`incoming`, `v1.md`): such an id would share the other document's files."""
    text = unicodedata.normalize("NFC", doc_id.strip())
    segments = [s for s in text.split("/") if s not in ("", ".")]
    normal = "/".join(segments)
    if not normal or ".." in segments or not _DOC_ID.match(normal) or ":" in normal:
        raise IngestError(f"document id {doc_id!r} is not valid: use letters, digits, '-', '_', '.' and '/'")
    reserved = [s for s in segments if s == "incoming" or _STORED_NAME.match(s)]
    if reserved:
        raise IngestError(f"document id {doc_id!r} is not valid: '{reserved[0]}' is a name Cairn uses for the "
                          "stored originals of a document; choose another id")
    return normal


def validate_tenant(tenant_id: str) -> str:
    """A tenant id names a directory under CAIRN_HOME/raw: one plain segment, never a path."""
    if not _TENANT.match(tenant_id) or tenant_id in (".", ".."):
        raise IngestError(f"tenant {tenant_id!r} is not valid: use letters, digits, '-', '_' and '.' "
                          "(no '/' and no '..')")
    return tenant_id


def default_doc_id(path: Path, root: Path) -> str:
    """The path relative to the directory given, without its extension."""
    rel = path.relative_to(root) if path != root else Path(path.name)
    return rel.with_suffix("").as_posix()


def content_hash(data: bytes, options: DocumentOptions) -> str:
    """Content plus the options that change what readers see: same file, new groups = new version."""
    h = hashlib.sha256(data)
    h.update(repr(sorted(_options_dict(options).items())).encode())
    return h.hexdigest()


def _options_dict(options: DocumentOptions) -> dict[str, object]:
    return {"groups": list(options.groups) if options.groups else None, "policy_id": options.policy_id,
            "owner": options.owner, "sensitivity": options.sensitivity, "effective": options.effective,
            "expires": options.expires, "supersedes": options.supersedes, "tenant_id": options.tenant_id}


def _options_from(raw: dict[str, object]) -> DocumentOptions:
    groups = raw.get("groups")
    return DocumentOptions(tenant_id=str(raw["tenant_id"]), groups=tuple(groups) if groups else None,  # type: ignore[arg-type]
                           policy_id=_str(raw.get("policy_id")), owner=_str(raw.get("owner")),
                           sensitivity=_str(raw.get("sensitivity")), effective=_str(raw.get("effective")),
                           expires=_str(raw.get("expires")), supersedes=_str(raw.get("supersedes")))


def _str(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _str_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return [str(value)]


def _as_instant(value: object) -> str | None:
    """A date or datetime from front matter or a flag → ISO instant (dates mean 00:00 UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=UTC)
    else:
        text = str(value).strip()
        try:
            moment = datetime.fromisoformat(text)
        except ValueError as exc:
            raise IngestError(f"effective/expiry date {text!r} is not a date (use YYYY-MM-DD)") from exc
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


async def _notify(on_progress: ProgressCallback | None, job: JobRecord, state: str | None = None) -> None:
    """Call a progress callback, sync or async, with the job and its (new) state."""
    if on_progress is not None:
        maybe = on_progress(job, state or job.state)
        if asyncio.iscoroutine(maybe):
            await maybe
