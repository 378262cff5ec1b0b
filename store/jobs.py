"""Ingestion jobs: rows with a state machine, so the work survives the process that asked for it.

queued → parsing → embedding → indexing → published | failed (retried with backoff) | dead
Any unfinished job → cancelled (its document was withdrawn): final, and sticky — a worker still
running it cannot move it on, so it stops at its next step instead of publishing.
A worker leases the job it claims (next_attempt_at moves 10 minutes ahead) and signs the lease
with its host, pid and process start time. A job left in a working state by a crash is picked up
again at once by the next worker on the same host (`reclaim_dead_leases`: the holder is gone), when
its lease runs out, or when the server starts (`release_leases`): every step is idempotent by stable
ids, so re-running converges. Attempts are counted when a job is claimed, so a job whose every run
kills or hangs its worker is dead-lettered after `max_attempts` claims instead of claimed for ever;
the same file asked for again after that (a rerun of `cairn ingest` after killed runs) gets one more
attempt before the dead letter.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

import aiosqlite

from store.db import dialect_of, iso, skip_locked, transaction, utcnow, write
from store.records import JobRecord

WORKING_STATES = ("parsing", "embedding", "indexing")
UNFINISHED_STATES = ("queued", *WORKING_STATES, "failed")
FINAL_STATES = ("published", "unchanged", "dead", "withdrawn", "cancelled")
STATES = (*UNFINISHED_STATES, *FINAL_STATES)
LEASE = timedelta(minutes=10)
ABANDONED = ("Stopped after {n} attempts: each run ended before finishing (the worker crashed, was killed "
             "or hung while ingesting this file). The file may be malformed or too large to process: check "
             "it, split it if it is large, and upload it again.")


def _start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), so a reused pid is not taken for
    the holder; empty where /proc is not available."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def lease_holder() -> str:
    """This process, as it signs the leases it takes: host:pid:start."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}"


def holder_is_alive(holder: str) -> bool | None:
    """True or False for a holder on this host; None when it is another host's (cannot be checked)."""
    parts = holder.rsplit(":", 2)
    if len(parts) != 3:
        return None
    host, pid_text, start = parts
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    return not start or _start_ticks(pid) in ("", start)


class Jobs:
    def __init__(self, conn: aiosqlite.Connection, *, max_attempts: int = 3, backoff_s: float = 2.0) -> None:
        self._conn = conn
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s

    async def enqueue(
        self,
        *,
        tenant_id: str,
        doc_id: str,
        source_path: str,
        raw_path: str,
        content_hash: str,
        options: dict[str, object],
        requested_by: str | None = None,
        notify: dict[str, object] | None = None,
        dedupe_key: str | None = None,
    ) -> tuple[JobRecord, bool]:
        """Create a queued job; with a dedupe key already used, return that job instead (created=False)."""
        now = iso()
        job_id = uuid.uuid4().hex
        async with transaction(self._conn) as conn:
            if dedupe_key:
                async with conn.execute("SELECT job_id, state, attempts, lease_holder FROM ingest_jobs"
                                        " WHERE dedupe_key=?", (dedupe_key,)) as cur:
                    row = await cur.fetchone()
                if row:
                    existing = row[0]
                    job_id = ""
                    if row[1] in FINAL_STATES:
                        # Same content again after that job finished (reverted to an older version, or
                        # retried after a dead letter): run it again rather than report stale news.
                        await conn.execute(
                            "UPDATE ingest_jobs SET state='queued', attempts=0, last_error=NULL, version=NULL,"
                            " outcome=NULL, source_path=?, raw_path=?, options=?, requested_by=?, notify=?,"
                            " next_attempt_at=?, created_at=?, updated_at=? WHERE job_id=?",
                            (source_path, raw_path, json.dumps(options), requested_by,
                             json.dumps(notify) if notify else None, now, now, now, existing),
                        )
                    elif row[1] in ("queued", *WORKING_STATES) and row[2] >= self.max_attempts \
                            and (row[3] is None or holder_is_alive(row[3]) is False):
                        # Asked for again after every claim so far died with its worker (killed, not
                        # failed): this request gets one more attempt instead of the dead letter the
                        # next claim would write. A file that kills every worker still ends there.
                        await conn.execute("UPDATE ingest_jobs SET attempts=?, updated_at=? WHERE job_id=?",
                                           (self.max_attempts - 1, now, existing))
            if job_id:
                await conn.execute(
                    "INSERT INTO ingest_jobs (job_id, tenant_id, doc_id, source_path, raw_path, content_hash,"
                    " options, requested_by, notify, dedupe_key, next_attempt_at, created_at, updated_at)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (job_id, tenant_id, doc_id, source_path, raw_path, content_hash, json.dumps(options),
                     requested_by, json.dumps(notify) if notify else None, dedupe_key, now, now, now),
                )
        if not job_id:
            job = await self.get(job_id=existing)
            assert job is not None
            return job, False
        job = await self.get(job_id=job_id)
        assert job is not None
        return job, True

    async def get(self, *, job_id: str) -> JobRecord | None:
        async with self._conn.execute("SELECT * FROM ingest_jobs WHERE job_id=?", (job_id,)) as cur:
            row = await cur.fetchone()
        return _job(row) if row else None

    async def claim_next(self, *, now: datetime | None = None, exclude: Sequence[str] = (),
                         only: Sequence[str] | None = None) -> JobRecord | None:
        """The oldest runnable job: queued, failed and due for retry, or left mid-way by a crash.

        `exclude` / `only` filter before the lease is taken, so a job a worker will not run is
        never leased (nor its attempts counted) by claiming it. One job of a document runs at a time,
        across every worker and process: a job whose document has another job under a live lease is
        passed over (on PostgreSQL two claimers racing for two jobs of one document are told apart
        by a per-document advisory lock, as neither sees the other's lease before it commits). A job
        already claimed `max_attempts` times whose last run never reached an end (its worker died or
        hung: only `fail` records a failure) is dead-lettered here instead of being run again.
        """
        if only is not None and not only:
            return None
        stamp = iso(now)
        postgresql = dialect_of(self._conn) == "postgresql"
        holder = lease_holder()
        passed: list[str] = [*exclude]  # and jobs of a document another claimer is taking right now
        sibling = _LEASED_SIBLING.format(tenant="ingest_jobs.tenant_id", doc="ingest_jobs.doc_id",
                                         job="ingest_jobs.job_id")
        while True:
            sql = ("SELECT * FROM ingest_jobs WHERE state IN ('queued','failed','parsing','embedding','indexing')"
                   f" AND next_attempt_at <= ? AND NOT EXISTS ({sibling})")
            args: list[object] = [stamp, stamp]
            if passed:
                sql += f" AND job_id NOT IN ({','.join('?' * len(passed))})"
                args.extend(passed)
            if only is not None:
                sql += f" AND job_id IN ({','.join('?' * len(only))})"
                args.extend(only)
            # On PostgreSQL the oldest row no other process is claiming right now, locked until the lease
            # is written: claimers in several processes each take a different job, without waiting in turn.
            sql += " ORDER BY created_at LIMIT 1" + skip_locked(self._conn)
            async with transaction(self._conn, rows_only=True) as conn:
                async with conn.execute(sql, args) as cur:
                    row = await cur.fetchone()
                if row is None:
                    return None
                if postgresql and not await _document_lock(conn, row, stamp):
                    passed.append(row["job_id"])
                    continue
                if row["state"] != "failed" and row["attempts"] >= self.max_attempts:
                    await conn.execute(
                        "UPDATE ingest_jobs SET state='dead', last_error=?, lease_holder=NULL, updated_at=?"
                        " WHERE job_id=?", (ABANDONED.format(n=row["attempts"]), stamp, row["job_id"]))
                    continue
                # Lease: while this worker runs it, nobody else picks it up for a while.
                lease = iso((now or utcnow()) + LEASE)
                await conn.execute(
                    "UPDATE ingest_jobs SET attempts=attempts+1, next_attempt_at=?, lease_holder=?, updated_at=?"
                    " WHERE job_id=?", (lease, holder, stamp, row["job_id"]),
                )
            return await self.get(job_id=row["job_id"])

    async def reclaim_dead_leases(self, *, now: datetime | None = None) -> list[str]:
        """Make runnable at once the jobs leased by a process of this host that is no longer alive;
        returns their ids. Safe for any worker: a live holder's lease (or another host's) is kept."""
        stamp = iso(now)
        async with self._conn.execute(
            "SELECT job_id, lease_holder FROM ingest_jobs WHERE state IN ('queued','parsing','embedding','indexing')"
            " AND next_attempt_at > ? AND lease_holder IS NOT NULL", (stamp,),
        ) as cur:
            rows = [(r[0], r[1]) for r in await cur.fetchall()]
        dead = [(job_id, holder) for job_id, holder in rows if holder_is_alive(holder) is False]
        if dead:
            async with transaction(self._conn) as conn:
                # Still that holder's: a job another worker claimed meanwhile keeps its new lease.
                await conn.executemany(
                    "UPDATE ingest_jobs SET next_attempt_at=?, lease_holder=NULL, updated_at=?"
                    " WHERE job_id=? AND lease_holder=?", [(stamp, iso(), job_id, holder) for job_id, holder in dead],
                )
        return [job_id for job_id, _ in dead]

    async def release_leases(self, *, now: datetime | None = None) -> list[str]:
        """Make the jobs leased by a worker that is gone runnable at once; returns their ids.

        Only for a caller that knows no other worker is alive (the server, while it holds the embedded
        index): otherwise a lease is what keeps a job another worker is running from running twice. A
        failed job's retry time is its backoff, not a lease, and is kept.
        """
        stamp = iso(now)
        async with transaction(self._conn) as conn:
            async with conn.execute(
                "SELECT job_id FROM ingest_jobs WHERE state IN ('queued','parsing','embedding','indexing')"
                " AND next_attempt_at > ? ORDER BY created_at", (stamp,),
            ) as cur:
                leased = [row[0] for row in await cur.fetchall()]
            if leased:
                await conn.execute(
                    f"UPDATE ingest_jobs SET next_attempt_at=?, updated_at=? WHERE job_id IN ({','.join('?' * len(leased))})",
                    (stamp, iso(), *leased),
                )
        return leased

    async def advance(self, *, job_id: str, state: str, version: str | None = None,
                      outcome: str | None = None) -> bool:
        """Move the job on; False when it was cancelled meanwhile (the row is left as it is)."""
        if state not in STATES:
            raise ValueError(f"unknown job state {state!r}")
        changed = await write(
            self._conn,
            "UPDATE ingest_jobs SET state=?, version=COALESCE(?, version), outcome=COALESCE(?, outcome),"
            " last_error=CASE WHEN ? IN ('published','unchanged') THEN NULL ELSE last_error END,"
            " updated_at=? WHERE job_id=? AND state!='cancelled'",
            (state, version, outcome, state, iso(), job_id),
        )
        return bool(changed)

    async def cancel_unfinished(self, *, tenant_id: str, doc_id: str, reason: str) -> list[JobRecord]:
        """Cancel every job of the document that has not finished (queued, waiting for a retry, or
        mid-way); returns them as cancelled. `reason` is what the owner reads after "cancelled: "."""
        async with transaction(self._conn) as conn:
            async with conn.execute(
                f"SELECT job_id FROM ingest_jobs WHERE tenant_id=? AND doc_id=?"
                f" AND state IN ({','.join('?' * len(UNFINISHED_STATES))}) ORDER BY created_at",
                (tenant_id, doc_id, *UNFINISHED_STATES),
            ) as cur:
                ids = [row[0] for row in await cur.fetchall()]
            if ids:
                await conn.execute(
                    f"UPDATE ingest_jobs SET state='cancelled', last_error=?, updated_at=?"
                    f" WHERE job_id IN ({','.join('?' * len(ids))})",
                    (reason, iso(), *ids),
                )
        return [job for job_id in ids if (job := await self.get(job_id=job_id)) is not None]

    async def cancel(self, *, job_id: str, reason: str = "cancelled by an operator") -> JobRecord | None:
        """Cancel one unfinished job (queued, waiting for a retry, or mid-way: its worker stops at its next
        step). Returns the job as it now is (unchanged when it had already finished), None if unknown."""
        await write(
            self._conn,
            f"UPDATE ingest_jobs SET state='cancelled', last_error=?, lease_holder=NULL, updated_at=?"
            f" WHERE job_id=? AND state IN ({','.join('?' * len(UNFINISHED_STATES))})",
            (reason, iso(), job_id, *UNFINISHED_STATES))
        return await self.get(job_id=job_id)

    async def fail(self, *, job_id: str, error: str, permanent: bool = False,
                   now: datetime | None = None) -> JobRecord:
        """Record a failure; retry later with exponential backoff, or dead-letter it. A cancelled job
        stays cancelled (its worker failed on the way to noticing)."""
        job = await self.get(job_id=job_id)
        if job is None:
            raise LookupError(job_id)
        dead = permanent or job.attempts >= self.max_attempts
        delay = timedelta(seconds=self.backoff_s * (2 ** max(job.attempts - 1, 0)))
        await write(
            self._conn,
            "UPDATE ingest_jobs SET state=?, last_error=?, next_attempt_at=?, updated_at=? WHERE job_id=?"
            " AND state!='cancelled'",
            ("dead" if dead else "failed", error, iso((now or utcnow()) + delay), iso(), job_id),
        )
        updated = await self.get(job_id=job_id)
        assert updated is not None
        return updated

    async def case_twin(self, *, tenant_id: str, doc_id: str) -> str | None:
        """The document id of an unfinished job of the tenant that differs from `doc_id` only in case."""
        async with self._conn.execute(
            f"SELECT doc_id FROM ingest_jobs WHERE tenant_id=? AND lower(doc_id)=lower(?) AND doc_id!=?"
            f" AND state IN ({','.join('?' * len(UNFINISHED_STATES))}) LIMIT 1",
            (tenant_id, doc_id, doc_id, *UNFINISHED_STATES),
        ) as cur:
            row = await cur.fetchone()
        return str(row[0]) if row else None

    async def raw_in_use(self, *, raw_path: str, other_than: str) -> bool:
        """Whether a job other than `other_than` that has not finished still reads the original at `raw_path`."""
        async with self._conn.execute(
            f"SELECT 1 FROM ingest_jobs WHERE raw_path=? AND job_id!=?"
            f" AND state IN ({','.join('?' * len(UNFINISHED_STATES))}) LIMIT 1",
            (raw_path, other_than, *UNFINISHED_STATES),
        ) as cur:
            return await cur.fetchone() is not None

    async def list(self, *, requested_by: str | None = None, limit: int = 20,
                   states: tuple[str, ...] | None = None) -> list[JobRecord]:
        sql = "SELECT * FROM ingest_jobs WHERE 1=1"
        args: list[object] = []
        if requested_by:
            sql += " AND requested_by=?"
            args.append(requested_by)
        if states:
            sql += f" AND state IN ({','.join('?' * len(states))})"
            args.extend(states)
        sql += " ORDER BY created_at DESC LIMIT ?"
        args.append(limit)
        async with self._conn.execute(sql, args) as cur:
            return [_job(r) for r in await cur.fetchall()]

    async def set_notify(self, *, job_id: str, notify: dict[str, object]) -> None:
        await write(self._conn, "UPDATE ingest_jobs SET notify=?, updated_at=? WHERE job_id=?",
                    (json.dumps(notify), iso(), job_id))


# Another job of the same document under a live lease (claimed, not finished, not failed); formatted
# with the job being considered: the outer query's columns, or parameters.
_LEASED_SIBLING = ("SELECT 1 FROM ingest_jobs AS sibling WHERE sibling.tenant_id={tenant}"
                   " AND sibling.doc_id={doc} AND sibling.job_id<>{job}"
                   " AND sibling.state IN ('queued','parsing','embedding','indexing')"
                   " AND sibling.lease_holder IS NOT NULL AND sibling.next_attempt_at > ?")


async def _document_lock(conn: aiosqlite.Connection, row: aiosqlite.Row, stamp: str) -> bool:
    """PostgreSQL, inside the claim's transaction: take the document's advisory lock (held until
    commit) and look again for a leased sibling, now that any claimer that held the lock before has
    committed its lease. False when another claimer holds the lock or took a sibling meanwhile."""
    key = f"cairn-ingest-document\x1f{row['tenant_id']}\x1f{row['doc_id']}"
    async with conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", (key,)) as cur:
        locked = await cur.fetchone()
    if not locked or not locked[0]:
        return False
    async with conn.execute(_LEASED_SIBLING.format(tenant="?", doc="?", job="?"), (row["tenant_id"], row["doc_id"], row["job_id"], stamp)) as cur:
        return await cur.fetchone() is None


def _job(row: aiosqlite.Row) -> JobRecord:
    return JobRecord(
        job_id=row["job_id"], tenant_id=row["tenant_id"], doc_id=row["doc_id"], source_path=row["source_path"],
        raw_path=row["raw_path"], content_hash=row["content_hash"], options=json.loads(row["options"]),
        state=row["state"], attempts=row["attempts"], last_error=row["last_error"], version=row["version"],
        outcome=row["outcome"], requested_by=row["requested_by"],
        notify=json.loads(row["notify"]) if row["notify"] else None,
        created_at=row["created_at"], updated_at=row["updated_at"],
    )
