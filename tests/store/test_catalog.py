"""The catalog decides eligibility: current version, active document, not expired, shared group, same tenant.

Real SQLite, no index and no model: the catalog is the authority the index filter only narrows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import aiosqlite
import pytest

from store.catalog import Catalog, NewChunk, chunk_id_for
from store.db import iso, utcnow
from store.records import Scope

TENANT = "acme"
STAFF = Scope(user_id="u1", tenant_id=TENANT, groups=frozenset({"everyone"}))
FINANCE = Scope(user_id="u2", tenant_id=TENANT, groups=frozenset({"everyone", "finance"}))


@pytest.fixture
async def catalog(conn: aiosqlite.Connection) -> Catalog:
    cat = Catalog(conn)
    await cat.sync_tenants(tenants={TENANT: ["everyone", "finance", "customer"], "harbor": ["everyone"]})
    return cat


async def register(catalog: Catalog, doc_id: str, content: str, *, groups: Sequence[str] = ("everyone",),
                   chunks: int = 2, tenant: str = TENANT, effective_at: str | None = None,
                   expires_at: str | None = None, supersedes: str | None = None) -> tuple[str, list[str]]:
    def build(version: str) -> list[NewChunk]:
        return [NewChunk(chunk_id=(cid := chunk_id_for(tenant, doc_id, version, i)), point_id=f"pt-{cid}",
                         seq=i, text=f"{content} part {i}", heading="Intro", page=None, source_key=f"{doc_id}.md",
                         token_count=5, lang="en") for i in range(chunks)]

    version, rows = await catalog.register_version(
        tenant_id=tenant, doc_id=doc_id, title=doc_id.title(), content_hash=f"hash-{content}",
        source_path=f"{doc_id}.md", raw_path_for=lambda v: f"/raw/{doc_id}/{v}.md", lang="en", groups=groups,
        policy_id=None, owner=None, sensitivity="internal", supersedes=supersedes, effective_at=effective_at,
        expires_at=expires_at, chunks_for=build)
    return version, [c.point_id for c in rows]


async def publish(catalog: Catalog, doc_id: str, content: str, **kwargs: object) -> tuple[str, list[str]]:
    version, points = await register(catalog, doc_id, content, **kwargs)  # type: ignore[arg-type]
    await catalog.mark_indexed(tenant_id=kwargs.get("tenant", TENANT), doc_id=doc_id, version=version)  # type: ignore[arg-type]
    outcome = await catalog.publish_version(tenant_id=kwargs.get("tenant", TENANT), doc_id=doc_id,  # type: ignore[arg-type]
                                            version=version)
    assert outcome.published
    return version, points


async def eligible_versions(catalog: Catalog, points: Sequence[str], scope: Scope = STAFF) -> set[str]:
    found = await catalog.eligible_chunks(point_ids=list(points), scope=scope)
    return {c.version for c in found.values()}


async def test_registered_version_is_stored_but_invisible_until_published(catalog: Catalog) -> None:
    version, points = await register(catalog, "travel", "alpha")
    assert version == "v1"
    assert await catalog.eligible_chunks(point_ids=points, scope=STAFF) == {}
    doc = await catalog.get_document(tenant_id=TENANT, doc_id="travel")
    assert doc is not None and doc.current_version is None and doc.pending_version == "v1"
    with pytest.raises(RuntimeError, match="not indexed"):
        await catalog.publish_version(tenant_id=TENANT, doc_id="travel", version=version)
    await catalog.mark_indexed(tenant_id=TENANT, doc_id="travel", version=version)
    assert await catalog.eligible_chunks(point_ids=points, scope=STAFF) == {}  # indexed is not published
    outcome = await catalog.publish_version(tenant_id=TENANT, doc_id="travel", version=version)
    assert outcome.published and outcome.retired_version is None
    found = await catalog.eligible_chunks(point_ids=points, scope=STAFF)
    assert set(found) == set(points)
    chunk = found[points[0]]
    assert (chunk.doc_id, chunk.version, chunk.source_path, chunk.title) == ("travel", "v1", "travel.md", "Travel")
    assert chunk.chunk_id == "acme:travel:v1:0000"


async def test_publish_unknown_version_raises_and_publishing_twice_is_a_noop(catalog: Catalog) -> None:
    with pytest.raises(LookupError):
        await catalog.publish_version(tenant_id=TENANT, doc_id="nope", version="v1")
    version, points = await publish(catalog, "travel", "alpha")
    again = await catalog.publish_version(tenant_id=TENANT, doc_id="travel", version=version)
    assert again.published and again.retired_version is None
    assert await eligible_versions(catalog, points) == {"v1"}


async def test_new_version_replaces_the_old_in_one_step(catalog: Catalog) -> None:
    _, v1_points = await publish(catalog, "travel", "alpha")
    v2, v2_points = await register(catalog, "travel", "beta", chunks=3)
    assert v2 == "v2"
    everything = [*v1_points, *v2_points]
    assert await eligible_versions(catalog, everything) == {"v1"}
    await catalog.mark_indexed(tenant_id=TENANT, doc_id="travel", version=v2)
    assert await eligible_versions(catalog, everything) == {"v1"}
    outcome = await catalog.publish_version(tenant_id=TENANT, doc_id="travel", version=v2)
    assert outcome.retired_version == "v1"
    assert await eligible_versions(catalog, everything) == {"v2"}
    assert len(await catalog.eligible_chunks(point_ids=everything, scope=STAFF)) == 3
    old = await catalog.get_version(tenant_id=TENANT, doc_id="travel", version="v1")
    assert old is not None and old.state == "retired"


async def test_cleanup_bookkeeping_forgets_text_and_closes_the_manifest(catalog: Catalog,
                                                                        conn: aiosqlite.Connection) -> None:
    await publish(catalog, "travel", "alpha")
    await publish(catalog, "travel", "beta")
    pending = await catalog.versions_needing_cleanup()
    assert [(v.doc_id, v.version) for v in pending] == [("travel", "v1")]
    assert len(await catalog.manifest(tenant_id=TENANT, doc_id="travel", version="v1")) == 2
    await catalog.forget_version_content(tenant_id=TENANT, doc_id="travel", version="v1")
    assert await catalog.manifest(tenant_id=TENANT, doc_id="travel", version="v1") == []
    assert await catalog.version_chunks(tenant_id=TENANT, doc_id="travel", version="v1") == []
    async with conn.execute("SELECT COUNT(*) FROM chunks WHERE doc_id='travel' AND version='v1'") as cur:
        assert (await cur.fetchone())[0] == 0
    assert await catalog.versions_needing_cleanup() == []
    removed = await catalog.get_version(tenant_id=TENANT, doc_id="travel", version="v1")
    assert removed is not None and removed.state == "removed"
    # The current version's manifest is untouched.
    assert len(await catalog.manifest(tenant_id=TENANT, doc_id="travel")) == 2


async def test_find_version_by_hash_ignores_removed_versions(catalog: Catalog) -> None:
    await publish(catalog, "travel", "alpha")
    found = await catalog.find_version_by_hash(tenant_id=TENANT, doc_id="travel", content_hash="hash-alpha")
    assert found is not None and found.version == "v1" and found.state == "published"
    await publish(catalog, "travel", "beta")
    await catalog.forget_version_content(tenant_id=TENANT, doc_id="travel", version="v1")
    assert await catalog.find_version_by_hash(tenant_id=TENANT, doc_id="travel", content_hash="hash-alpha") is None


@pytest.mark.parametrize(
    ("scope", "visible"),
    [
        (STAFF, True),
        (Scope(user_id="h", tenant_id="harbor", groups=frozenset({"everyone"})), False),  # other tenant
        (Scope(user_id="c", tenant_id=TENANT, groups=frozenset({"customer"})), False),  # other group
        (Scope(user_id="n", tenant_id=TENANT, groups=frozenset()), False),  # no groups at all
    ],
)
async def test_eligibility_needs_same_tenant_and_a_shared_group(catalog: Catalog, scope: Scope,
                                                                 visible: bool) -> None:
    _, points = await publish(catalog, "travel", "alpha")
    assert bool(await catalog.eligible_chunks(point_ids=points, scope=scope)) is visible


async def test_expired_version_leaves_eligibility_by_itself(catalog: Catalog) -> None:
    soon = utcnow() + timedelta(days=1)
    _, points = await publish(catalog, "promo", "alpha", expires_at=iso(soon))
    assert await eligible_versions(catalog, points) == {"v1"}
    later = await catalog.eligible_chunks(point_ids=points, scope=STAFF, now=soon + timedelta(seconds=1))
    assert later == {}
    _, old_points = await publish(catalog, "old-promo", "beta", expires_at=iso(utcnow() - timedelta(days=1)))
    assert await catalog.eligible_chunks(point_ids=old_points, scope=STAFF) == {}


async def test_future_effective_version_is_scheduled_then_published_when_due(catalog: Catalog) -> None:
    _, v1_points = await publish(catalog, "mileage", "alpha")
    start = utcnow() + timedelta(days=30)
    v2, v2_points = await register(catalog, "mileage", "beta", effective_at=iso(start))
    await catalog.mark_indexed(tenant_id=TENANT, doc_id="mileage", version=v2)
    outcome = await catalog.publish_version(tenant_id=TENANT, doc_id="mileage", version=v2)
    assert not outcome.published
    assert (await catalog.get_version(tenant_id=TENANT, doc_id="mileage", version=v2)).state == "scheduled"
    assert await eligible_versions(catalog, [*v1_points, *v2_points]) == {"v1"}
    assert await catalog.due_scheduled_versions() == []
    due = await catalog.due_scheduled_versions(now=start + timedelta(minutes=1))
    assert [v.version for v in due] == [v2]
    published = await catalog.publish_version(tenant_id=TENANT, doc_id="mileage", version=v2,
                                              now=start + timedelta(minutes=1))
    assert published.published and published.retired_version == "v1"
    assert await eligible_versions(catalog, [*v1_points, *v2_points]) == {"v2"}


async def test_withdraw_revokes_every_version_at_once(catalog: Catalog) -> None:
    _, v1_points = await publish(catalog, "travel", "alpha")
    v2, v2_points = await register(catalog, "travel", "beta")
    assert await catalog.withdraw(tenant_id=TENANT, doc_id="travel") is True
    assert await catalog.withdraw(tenant_id=TENANT, doc_id="travel") is False  # already withdrawn
    assert await catalog.eligible_chunks(point_ids=[*v1_points, *v2_points], scope=STAFF) == {}
    doc = await catalog.get_document(tenant_id=TENANT, doc_id="travel")
    assert doc is not None and doc.status == "withdrawn" and doc.current_version is None
    states = {v.version: v.state for v in await catalog.versions_needing_cleanup()}
    assert states == {"v1": "withdrawn", v2: "withdrawn"}
    # A pending version of a withdrawn document can no longer be published.
    with pytest.raises(RuntimeError):
        await catalog.publish_version(tenant_id=TENANT, doc_id="travel", version=v2)


async def test_set_groups_changes_readers_on_the_next_check(catalog: Catalog) -> None:
    _, points = await publish(catalog, "travel", "alpha")
    before = await catalog.get_document(tenant_id=TENANT, doc_id="travel")
    await catalog.set_groups(tenant_id=TENANT, doc_id="travel", groups=["finance"])
    after = await catalog.get_document(tenant_id=TENANT, doc_id="travel")
    assert after.groups == ("finance",) and after.acl_version == before.acl_version + 1
    assert await catalog.eligible_chunks(point_ids=points, scope=STAFF) == {}
    assert set(await catalog.eligible_chunks(point_ids=points, scope=FINANCE)) == set(points)


async def test_groups_of_a_new_upload_apply_only_when_it_is_published(catalog: Catalog) -> None:
    _, v1_points = await publish(catalog, "budget", "alpha", groups=["everyone"])
    v2, v2_points = await register(catalog, "budget", "beta", groups=["finance"])
    await catalog.mark_indexed(tenant_id=TENANT, doc_id="budget", version=v2)
    # While v2 waits, readers keep v1 with v1's audience.
    assert await eligible_versions(catalog, v1_points) == {"v1"}
    await catalog.publish_version(tenant_id=TENANT, doc_id="budget", version=v2)
    assert await catalog.eligible_chunks(point_ids=[*v1_points, *v2_points], scope=STAFF) == {}
    assert await eligible_versions(catalog, v2_points, FINANCE) == {"v2"}
    doc = await catalog.get_document(tenant_id=TENANT, doc_id="budget")
    assert doc.groups == ("finance",) and doc.acl_version == 2


async def test_publishing_a_superseding_document_retires_the_old_one(catalog: Catalog) -> None:
    _, old_points = await publish(catalog, "mileage-2025", "alpha")
    _, new_points = await publish(catalog, "mileage-2026", "beta", supersedes="mileage-2025")
    assert await catalog.eligible_chunks(point_ids=old_points, scope=STAFF) == {}
    assert await eligible_versions(catalog, new_points) == {"v1"}
    old = await catalog.get_document(tenant_id=TENANT, doc_id="mileage-2025")
    assert old.status == "superseded" and old.superseded_by == "mileage-2026"


async def test_mark_failed_only_touches_unpublished_versions(catalog: Catalog) -> None:
    version, points = await publish(catalog, "travel", "alpha")
    await catalog.mark_failed(tenant_id=TENANT, doc_id="travel", version=version)
    assert await eligible_versions(catalog, points) == {"v1"}
    v2, _ = await register(catalog, "travel", "beta")
    await catalog.mark_failed(tenant_id=TENANT, doc_id="travel", version=v2)
    assert (await catalog.get_version(tenant_id=TENANT, doc_id="travel", version=v2)).state == "failed"
    assert [v.version for v in await catalog.versions_needing_cleanup()] == [v2]


async def test_count_and_list_reflect_only_current_versions(catalog: Catalog) -> None:
    await publish(catalog, "travel", "alpha", chunks=2)
    await publish(catalog, "travel", "beta", chunks=3)
    await publish(catalog, "hank-doc", "gamma", chunks=1, tenant="harbor")
    assert await catalog.count_eligible_chunks(tenant_id=TENANT) == 3
    assert await catalog.count_eligible_chunks() == 4
    docs = await catalog.list_documents(tenant_id=TENANT)
    assert [(d.doc_id, d.current_version, d.chunk_count) for d in docs] == [("travel", "v2", 3)]
