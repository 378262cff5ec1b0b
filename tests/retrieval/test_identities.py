"""Document ids and tenants have one spelling, checked once below every surface: aliases of an id are
the same document, ids that would share another document's stored files and tenants that are paths
are refused with the reason, and nothing is written outside CAIRN_HOME/raw."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.services import Services
from retrieval.ingest import DocumentOptions, FileOutcome, IngestError, validate_doc_id, validate_tenant

TENANT = "larkspur"
B1 = b"# Badges\n\nVisitors collect a badge at reception.\n"
B2 = b"# Badges\n\nVisitors collect a badge at the security desk.\n"


async def submit(svc: Services, data: bytes, doc_id: str, tenant: str = TENANT) -> FileOutcome:
    return await svc.ingestor.submit_bytes(data, filename="badges.md", doc_id=doc_id,
                                           options=DocumentOptions(tenant_id=tenant))


def read(path: str) -> bytes:
    return Path(path).read_bytes()


def files_under(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@pytest.mark.parametrize(("alias", "normal"), [
    ("coll2/./b", "coll2/b"), ("coll2//b", "coll2/b"), ("/coll2/b/", "coll2/b"), ("./coll2/b", "coll2/b"),
    ("se\u0301curite\u0301", "s\u00e9curit\u00e9"),  # decomposed accents: the composed spelling
])
def test_aliases_of_a_document_id_have_one_spelling(alias: str, normal: str) -> None:
    assert validate_doc_id(alias) == normal


@pytest.mark.parametrize(("doc_id", "reason"), [
    ("../etc/passwd", "is not valid"), ("a/../../b", "is not valid"), ("./.", "is not valid"),
    ("nest2/x/v1.md", "'v1.md' is a name Cairn uses"), ("nest2/incoming", "'incoming' is a name Cairn uses"),
    ("a/b.md.part", "is a name Cairn uses"), ("a:b", "is not valid"),
])
def test_document_ids_that_leave_or_share_a_documents_directory_are_refused(doc_id: str, reason: str) -> None:
    with pytest.raises(IngestError, match=reason):
        validate_doc_id(doc_id)


@pytest.mark.parametrize("tenant", ["../../x", "..", ".", "a/b", "", "/abs", "-x"])
def test_tenants_that_are_paths_are_refused(tenant: str) -> None:
    with pytest.raises(IngestError, match=r"tenant .* is not valid"):
        validate_tenant(tenant)


async def test_an_alias_is_the_same_document_with_one_stored_original_per_version(services: Services) -> None:
    first = await submit(services, B1, "coll2/b")
    [published] = await services.ingestor.run_pending()
    assert (first.status, published.status, published.version) == ("queued", "published", "v1")
    assert (await submit(services, B1, "coll2/./b")).status == "unchanged"
    await submit(services, B2, "coll2/./b")
    [replaced] = await services.ingestor.run_pending()
    assert (replaced.doc_id, replaced.version) == ("coll2/b", "v2")
    docs = [d.doc_id for d in await services.catalog.list_documents(tenant_id=TENANT)]
    assert docs == ["coll2/b"]
    v1 = await services.catalog.get_version(tenant_id=TENANT, doc_id="coll2/b", version="v1")
    v2 = await services.catalog.get_version(tenant_id=TENANT, doc_id="coll2/b", version="v2")
    assert v1 and v2 and read(v1.raw_path) == B1 and read(v2.raw_path) == B2
    assert await services.ingestor.withdraw(tenant_id=TENANT, doc_id="coll2/./b")


async def test_an_id_inside_another_documents_directory_is_refused_not_crashed(services: Services) -> None:
    await submit(services, B1, "nest2/x")
    assert [r.status for r in await services.ingestor.run_pending()] == ["published"]
    refused = await submit(services, B2, "nest2/x/v1.md")
    assert refused.status == "rejected" and "'v1.md' is a name Cairn uses" in (refused.message or "")
    assert await services.jobs.list(states=("queued",)) == []


async def test_a_tenant_that_is_a_path_is_refused_and_nothing_is_written(services: Services,
                                                                        tmp_path: Path) -> None:
    before = files_under(tmp_path)
    refused = await submit(services, B1, "x", tenant="../../x")
    assert refused.status == "rejected" and "tenant '../../x' is not valid" in (refused.message or "")
    assert files_under(tmp_path) - before == set()
