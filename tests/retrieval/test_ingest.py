"""Ingestion end to end on real SQLite, Qdrant Edge and the MiniLM model.

The invariant under test: at every step, including after a crash at any point, a reader sees
exactly one version of a document (or none once it is withdrawn), and a version that left
eligibility leaves no vectors and no text behind once cleanup has run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from bot.services import Services
from retrieval.ingest import DocumentOptions, FileOutcome
from store.db import iso, utcnow
from store.records import Scope

TENANT = "larkspur"
V1 = b"---\ntitle: Parking Rules\npolicy_id: OPS-PARK\nowner: '#facilities'\n---\n# Parking\n\nStaff park in lot B. The daily parking fee is USD 5.\n"
V2 = b"---\ntitle: Parking Rules\npolicy_id: OPS-PARK\nowner: '#facilities'\n---\n# Parking\n\nStaff park in lot C. The daily parking fee is USD 7.\n\n## Bicycles\n\nBicycles go in the cage by door 3.\n"
QUESTION = "where do staff park and what is the daily parking fee?"


def local(svc: Services) -> Scope:
    return svc.access.resolve_cli(None)


async def submit(svc: Services, data: bytes, *, doc_id: str = "ops/parking", filename: str = "ops/parking.md",
                 **options: Any) -> FileOutcome:
    return await svc.ingestor.submit_bytes(data, filename=filename, doc_id=doc_id,
                                           options=DocumentOptions(tenant_id=TENANT, **options))


async def ingest(svc: Services, data: bytes, **kwargs: Any) -> FileOutcome:
    submitted = await submit(svc, data, **kwargs)
    if submitted.status != "queued":
        return submitted
    results = await svc.ingestor.run_pending()
    assert [r.job_id for r in results] == [submitted.job_id]
    return results[0]


async def all_points(svc: Services, doc_id: str) -> dict[str, list[str]]:
    """Every point id ever planned for the document, per version (the manifest outlives the text)."""
    async with svc.db.execute("SELECT version, point_id FROM manifest_points WHERE doc_id=? ORDER BY version",
                              (doc_id,)) as cur:
        rows = await cur.fetchall()
    out: dict[str, list[str]] = {}
    for version, point_id in rows:
        out.setdefault(version, []).append(point_id)
    return out


async def visible_versions(svc: Services, doc_id: str = "ops/parking") -> set[str]:
    """Versions a reader can reach: through the catalog check and through a real search."""
    points = [p for ps in (await all_points(svc, doc_id)).values() for p in ps]
    eligible = await svc.catalog.eligible_chunks(point_ids=points, scope=local(svc))
    via_catalog = {c.version for c in eligible.values()}
    result = await svc.searcher.search(QUESTION, local(svc))
    via_search = {p.version for p in result.passages if p.doc_id == doc_id}
    assert via_search <= via_catalog, (via_search, via_catalog)
    assert via_search == via_catalog, "an eligible one-chunk document should rank for its own question"
    return via_catalog


async def text_rows(svc: Services, doc_id: str, version: str | None = None) -> int:
    sql = "SELECT COUNT(*) FROM chunks WHERE doc_id=?"
    args: tuple[str, ...] = (doc_id,)
    if version:
        sql += " AND version=?"
        args += (version,)
    async with svc.db.execute(sql, args) as cur:
        return int((await cur.fetchone())[0])


async def version_rows(svc: Services, doc_id: str) -> list[tuple[str, str]]:
    async with svc.db.execute("SELECT version, state FROM versions WHERE doc_id=? ORDER BY seq", (doc_id,)) as cur:
        return [(r[0], r[1]) for r in await cur.fetchall()]


def fail_once(obj: object, name: str, exc: Exception) -> dict[str, int]:
    """Make one method of a live object raise on its first call, then behave (a crash at that step)."""
    real: Callable[..., Any] = getattr(obj, name)
    calls = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise exc
        return real(*args, **kwargs)

    async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise exc
        return await real(*args, **kwargs)

    import inspect

    setattr(obj, name, async_wrapper if inspect.iscoroutinefunction(real) else wrapper)
    return calls


async def assert_version_gone(svc: Services, doc_id: str, version: str, points: list[str]) -> None:
    assert points, "need the version's point ids to check"
    assert svc.index.existing(points) == set(), "vectors of a retired version are still in the index"
    assert await svc.catalog.manifest(tenant_id=TENANT, doc_id=doc_id, version=version) == []
    assert await text_rows(svc, doc_id, version) == 0, "text of a retired version is still stored"
    state = (await svc.catalog.get_version(tenant_id=TENANT, doc_id=doc_id, version=version)).state
    assert state == "removed"


async def test_first_ingest_publishes_with_metadata_and_confirmed_vectors(services: Services) -> None:
    outcome = await ingest(services, V1)
    assert (outcome.status, outcome.version, outcome.chunks) == ("published", "v1", 1)
    doc = await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/parking")
    assert (doc.title, doc.policy_id, doc.owner, doc.groups, doc.status) == (
        "Parking Rules", "OPS-PARK", "#facilities", ("everyone",), "active")
    points = await services.catalog.manifest(tenant_id=TENANT, doc_id="ops/parking")
    assert services.index.existing(points) == set(points)
    assert await visible_versions(services) == {"v1"}
    job = await services.jobs.get(job_id=outcome.job_id)
    assert (job.state, job.attempts, job.last_error) == ("published", 1, None)


@pytest.mark.parametrize(("front", "says"), [
    (b"sensitivity: secret\n", "sensitivity must be one of public, internal, confidential"),
    (b"policy_id: 'OPS PARK; DROP'\n", "a policy id uses letters, digits"),
])
async def test_front_matter_options_follow_the_same_rules_as_flags(services: Services, front: bytes,
                                                                    says: str) -> None:
    outcome = await ingest(services, b"---\ntitle: Parking Rules\n" + front + b"---\n# Parking\n\nStaff park in lot B.\n")
    assert outcome.status == "failed" and outcome.message is not None
    assert outcome.message.startswith("front matter: ") and says in outcome.message
    assert await visible_versions(services) == set()


async def test_crash_after_index_before_publish_keeps_v1_then_resumes_to_v2(services: Services) -> None:
    await ingest(services, V1)
    v1_points = (await all_points(services, "ops/parking"))["v1"]
    services.jobs.backoff_s = 0  # the retry is due at once (the run itself still tries each job once)
    calls = fail_once(services.catalog, "publish_version", RuntimeError("power cut after the index confirmed"))

    queued = await submit(services, V2)
    assert await visible_versions(services) == {"v1"}
    crashed = await services.ingestor.run_pending()
    assert [(r.status, r.job_id) for r in crashed] == [("failed", queued.job_id)]
    assert "power cut" in crashed[0].message
    # v2 is registered and fully indexed, yet not a single reader sees it; v1 is intact.
    v2_points = (await all_points(services, "ops/parking"))["v2"]
    assert services.index.existing(v2_points) == set(v2_points)
    assert (await services.catalog.get_version(tenant_id=TENANT, doc_id="ops/parking", version="v2")).state == "indexed"
    assert await visible_versions(services) == {"v1"}
    assert services.index.existing(v1_points) == set(v1_points)

    resumed = await services.ingestor.run_pending()
    assert [(r.status, r.version) for r in resumed] == [("published", "v2")]
    assert calls["n"] == 2
    assert await visible_versions(services) == {"v2"}
    await assert_version_gone(services, "ops/parking", "v1", v1_points)
    assert services.index.existing(v2_points) == set(v2_points)
    assert await version_rows(services, "ops/parking") == [("v1", "removed"), ("v2", "published")]


async def test_crash_between_register_and_index_keeps_v1_then_resumes_to_v2(services: Services) -> None:
    await ingest(services, V1)
    v1_points = (await all_points(services, "ops/parking"))["v1"]
    services.jobs.backoff_s = 0
    fail_once(services.index, "upsert", ConnectionError("index went away"))

    await submit(services, V2)
    crashed = await services.ingestor.run_pending()
    assert crashed[0].status == "failed" and "ConnectionError" in crashed[0].message
    v2_points = (await all_points(services, "ops/parking"))["v2"]
    assert services.index.existing(v2_points) == set()  # nothing reached the index
    assert (await services.catalog.get_version(tenant_id=TENANT, doc_id="ops/parking", version="v2")).state == "pending"
    assert await visible_versions(services) == {"v1"}

    resumed = await services.ingestor.run_pending()
    assert [(r.status, r.version) for r in resumed] == [("published", "v2")]
    assert await visible_versions(services) == {"v2"}
    await assert_version_gone(services, "ops/parking", "v1", v1_points)
    # The retry reused the registered version: no orphan v3, no duplicate points.
    assert [v for v, _ in await version_rows(services, "ops/parking")] == ["v1", "v2"]
    assert services.index.count() == len(v2_points)


async def test_worker_killed_mid_job_is_resumed_from_its_row(services: Services) -> None:
    await ingest(services, V1)
    queued = await submit(services, V2)
    job = await services.jobs.claim_next()
    await services.jobs.advance(job_id=job.job_id, state="indexing")
    # The process dies here: no failure recorded, the lease just runs out.
    assert await services.ingestor.run_pending() == []
    assert await visible_versions(services) == {"v1"}
    again = await services.jobs.claim_next(now=utcnow() + timedelta(minutes=11))
    assert again is not None and again.job_id == queued.job_id and again.state == "indexing"
    outcome = await services.ingestor.run_job(again)
    assert (outcome.status, outcome.version) == ("published", "v2")
    assert await visible_versions(services) == {"v2"}


async def test_same_content_is_a_noop_and_new_content_exactly_one_version(services: Services) -> None:
    first = await ingest(services, V1)
    jobs_before = len(await services.jobs.list())
    same = await submit(services, V1)
    assert (same.status, same.version) == ("unchanged", "v1")
    assert await version_rows(services, "ops/parking") == [("v1", "published")]
    assert len(await services.jobs.list()) == jobs_before
    assert await services.ingestor.run_pending() == []

    second = await ingest(services, V2)
    assert (second.status, second.version) == ("published", "v2")
    assert [v for v, _ in await version_rows(services, "ops/parking")] == ["v1", "v2"]
    assert (await submit(services, V2)).status == "unchanged"
    assert first.job_id != second.job_id


async def test_reverting_to_earlier_content_publishes_it_again(services: Services) -> None:
    await ingest(services, V1)
    await ingest(services, V2)
    back = await ingest(services, V1)
    assert (back.status, back.version) == ("published", "v3")
    assert await visible_versions(services) == {"v3"}
    result = await services.searcher.search(QUESTION, local(services))
    assert "lot B" in next(p.text for p in result.passages if p.doc_id == "ops/parking")


async def test_new_groups_for_the_same_file_are_a_new_version(services: Services) -> None:
    await ingest(services, V1)
    restricted = await ingest(services, V1, groups=("finance",))
    assert (restricted.status, restricted.version) == ("published", "v2")
    assert await visible_versions(services) == set()  # the local scope is `everyone` only
    alice = services.access.resolve_cli("alice")
    result = await services.searcher.search(QUESTION, alice)
    assert {p.version for p in result.passages if p.doc_id == "ops/parking"} == {"v2"}


async def test_withdraw_removes_vectors_text_and_eligibility_of_every_version(services: Services) -> None:
    await ingest(services, V1)
    await ingest(services, V2)
    future = (utcnow() + timedelta(days=60)).date().isoformat()
    scheduled = await ingest(services, V1 + b"\nVisitors park in lot D.\n", effective=future)
    assert (scheduled.status, scheduled.version) == ("scheduled", "v3")
    points = await all_points(services, "ops/parking")
    assert set(points) == {"v1", "v2", "v3"}
    assert await visible_versions(services) == {"v2"}

    assert await services.ingestor.withdraw(tenant_id=TENANT, doc_id="ops/parking") is True
    every_point = [p for ps in points.values() for p in ps]
    assert services.index.existing(every_point) == set()
    assert services.index.count() == 0
    assert await text_rows(services, "ops/parking") == 0
    async with services.db.execute("SELECT COUNT(*) FROM chunk_vectors") as cur:
        assert (await cur.fetchone())[0] == 0
    assert await services.catalog.manifest(tenant_id=TENANT, doc_id="ops/parking") == []
    assert await visible_versions(services) == set()
    result = await services.searcher.search(QUESTION, local(services))
    assert all(p.doc_id != "ops/parking" for p in result.passages)
    doc = await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/parking")
    assert (doc.status, doc.current_version) == ("withdrawn", None)
    # The scheduled version died with the document: its date arriving publishes nothing.
    assert await services.ingestor.publish_due(now=utcnow() + timedelta(days=90)) == []
    assert await visible_versions(services) == set()
    assert await services.ingestor.withdraw(tenant_id=TENANT, doc_id="ops/parking") is False


async def chunk_vector_rows(svc: Services) -> int:
    async with svc.db.execute("SELECT COUNT(*) FROM chunk_vectors") as cur:
        return int((await cur.fetchone())[0])


async def test_withdraw_cancels_queued_uploads_so_none_brings_the_document_back(services: Services) -> None:
    await ingest(services, V1)
    queued = await submit(services, V2)
    services.jobs.backoff_s = 0
    retrying = await submit(services, V1 + b"\nVisitors park in lot D.\n")
    assert (await services.jobs.claim_next(exclude=(queued.job_id,))).job_id == retrying.job_id
    await services.jobs.fail(job_id=retrying.job_id, error="ConnectionError: index went away")  # due again

    heard: list[tuple[str, str]] = []
    assert await services.ingestor.withdraw(tenant_id=TENANT, doc_id="ops/parking",
                                            on_progress=lambda job, state: heard.append((job.job_id, state)))
    assert sorted(heard) == sorted([(queued.job_id, "cancelled"), (retrying.job_id, "cancelled")])
    for job_id in (queued.job_id, retrying.job_id):
        job = await services.jobs.get(job_id=job_id)
        assert (job.state, job.last_error) == ("cancelled", "document withdrawn")

    assert await services.ingestor.run_pending() == []  # nothing left to run, now or later
    assert await services.jobs.claim_next(now=utcnow() + timedelta(days=1)) is None
    doc = await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/parking")
    assert (doc.status, doc.current_version) == ("withdrawn", None)
    assert await visible_versions(services) == set()

    # Uploading it again after the withdrawal brings it back (the cancelled job's content, re-queued).
    again = await ingest(services, V2)
    assert (again.status, again.job_id) == ("published", queued.job_id)
    assert await visible_versions(services) == {"v2"}


@pytest.mark.parametrize("at", ["parsing", "embedding", "indexing", "publishing"])
async def test_withdraw_while_the_worker_runs_the_upload_stops_it_and_leaves_nothing(services: Services,
                                                                                     at: str) -> None:
    await ingest(services, V1)
    queued = await submit(services, V2)

    async def withdraw() -> None:  # the owner presses Withdraw while the worker is at `at`
        await services.ingestor.withdraw(tenant_id=TENANT, doc_id="ops/parking")

    async def at_step(job: object, state: str) -> None:
        if state == at:
            await withdraw()

    if at == "publishing":  # after the index confirmed the points, just before the version is published
        mark_indexed = services.catalog.mark_indexed

        async def withdraw_first(**kwargs: Any) -> None:
            await withdraw()
            await mark_indexed(**kwargs)

        services.catalog.mark_indexed = withdraw_first  # type: ignore[method-assign]
    [outcome] = await services.ingestor.run_pending(on_progress=at_step)
    assert (outcome.job_id, outcome.status, outcome.message) == (queued.job_id, "cancelled", "document withdrawn")
    job = await services.jobs.get(job_id=queued.job_id)
    assert (job.state, job.last_error) == ("cancelled", "document withdrawn")
    doc = await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/parking")
    assert (doc.status, doc.current_version) == ("withdrawn", None)
    assert await visible_versions(services) == set()
    # Whatever the job wrote after the withdrawal's cleanup is gone too.
    assert services.index.count() == 0
    assert await text_rows(services, "ops/parking") == 0 and await chunk_vector_rows(services) == 0
    assert all(state in ("removed", "withdrawn", "failed") for _, state in await version_rows(services, "ops/parking"))
    # …and it stays that way: the cancelled job is never run again.
    assert await services.ingestor.run_pending() == []
    assert await visible_versions(services) == set()


async def test_infrastructure_failures_retry_then_dead_letter_with_the_reason(services: Services) -> None:
    services.jobs.backoff_s = 0

    def index_down(points: object) -> None:
        raise ConnectionError("qdrant unreachable")

    real_upsert = services.index.upsert
    services.index.upsert = index_down  # type: ignore[method-assign]
    queued = await submit(services, V1)
    statuses = [(await services.ingestor.run_pending())[0].status for _ in range(3)]
    assert statuses == ["failed", "failed", "dead"]
    job = await services.jobs.get(job_id=queued.job_id)
    assert (job.state, job.attempts) == ("dead", 3)
    assert job.last_error == "ConnectionError: qdrant unreachable"
    assert await services.ingestor.run_pending() == []  # dead letters stay put
    # The version that will never publish is cleaned up; nothing was ever visible.
    assert await version_rows(services, "ops/parking") == [("v1", "removed")]
    assert await text_rows(services, "ops/parking") == 0
    assert await visible_versions(services) == set()

    # Once the index is back, submitting the same file again runs it (not the dead job's verdict).
    services.index.upsert = real_upsert  # type: ignore[method-assign]
    retried = await ingest(services, V1)
    assert (retried.status, retried.version) == ("published", "v2")
    assert await visible_versions(services) == {"v2"}


async def test_one_failing_job_does_not_stall_the_rest_of_the_batch(services: Services) -> None:
    services.jobs.backoff_s = 0
    fail_once(services.index, "upsert", ConnectionError("blip"))
    for i in range(3):
        await submit(services, f"# Note {i}\n\nNote number {i} about the loading dock.\n".encode(),
                     doc_id=f"notes/n{i}", filename=f"notes/n{i}.md")
    results = await services.ingestor.run_pending()
    # two jobs run at once: whichever reaches the index first meets the blip
    failed = [r for r in results if r.status == "failed"]
    assert len(results) == 3 and len(failed) == 1
    assert sorted(r.doc_id for r in results if r.status == "published") == sorted(
        {"notes/n0", "notes/n1", "notes/n2"} - {failed[0].doc_id})
    assert (await services.jobs.get(job_id=failed[0].job_id)).attempts == 1
    assert [(r.doc_id, r.status) for r in await services.ingestor.run_pending()] == [(failed[0].doc_id, "published")]


@pytest.mark.parametrize(
    ("data", "filename", "doc_id", "options", "message"),
    [
        (b"   \n\t", "empty.md", "empty", {}, "file is empty"),
        (b"hello", "deck.pptx", "deck", {}, "unsupported file type '.pptx'"),
        (b"x" * 2048, "big.md", "big", {}, "over the"),
        (b"# T\n\ntext", "bad.md", "../escape", {}, "is not valid"),
        (b"# T\n\ntext", "secret.md", "secret", {"groups": ("legal",)}, "groups ['legal'] are not defined"),
    ],
)
async def test_submit_rejects_what_can_be_checked_at_once(services: Services, data: bytes, filename: str,
                                                          doc_id: str, options: dict, message: str) -> None:
    services.ingestor.max_bytes = 1024
    outcome = await submit(services, data, filename=filename, doc_id=doc_id, **options)
    assert outcome.status == "rejected"
    assert message in outcome.message
    assert outcome.job_id is None and await services.jobs.list() == []


@pytest.mark.parametrize(
    ("data", "filename", "message"),
    [
        (b"%PDF-1.4\n1 0 obj <<>> garbage", "broken.pdf", "The PDF could not be read"),
        (b"# Title\n\nCaf\xe9 au lait\n", "latin1.md", "not valid UTF-8"),
        (b"\x00\x01\x02binary\x00" * 20, "blob.txt", "binary file"),
        (b"---\ntitle: T\ngroups: [legal]\n---\n# T\n\nBody.\n", "legal.md", "groups ['legal'] are not defined"),
    ],
)
async def test_unparseable_files_fail_permanently_with_a_clear_reason(services: Services, data: bytes,
                                                                      filename: str, message: str) -> None:
    await ingest(services, V1)
    outcome = await ingest(services, data, filename=filename, doc_id="ops/parking")
    assert outcome.status == "failed" and message in outcome.message
    job = await services.jobs.get(job_id=outcome.job_id)
    assert job.state == "dead" and job.attempts == 1 and message in job.last_error
    assert await visible_versions(services) == {"v1"}  # the good version stays, nothing half-visible
    assert [v for v, _ in await version_rows(services, "ops/parking")] == ["v1"]


async def test_publish_due_makes_a_scheduled_version_current_without_reindex(services: Services) -> None:
    start = utcnow() + timedelta(days=10)
    outcome = await ingest(services, V1, effective=iso(start))
    assert outcome.status == "scheduled"
    assert await visible_versions(services) == set()
    count = services.index.count()
    assert await services.ingestor.publish_due(now=start - timedelta(minutes=1)) == []
    assert await services.ingestor.publish_due(now=start + timedelta(minutes=1)) == [f"{TENANT}:ops/parking:v1"]
    assert services.index.count() == count
    assert await visible_versions(services) == {"v1"}
