"""One contract, two backends: Qdrant Edge (embedded) and qdrant-client (here in its local mode).

Ingestion and search only speak `VectorIndex`, so both backends must agree on upsert, existing,
delete, set_groups and filtered search. Vectors are synthetic: the contract is about the index,
not the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import QdrantClient

from retrieval.embed import DENSE, DENSE_ML, DENSE_SIZES, SPARSE_AR, SPARSE_EN, Sparse
from retrieval.index import EdgeIndex, IndexLockedError, IndexPoint, ServerIndex, VectorIndex, point_id_for

EVERYONE = ["everyone"]


def _unit(rng: np.random.Generator, dim: int) -> list[float]:
    v = rng.normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


def _points() -> list[IndexPoint]:
    """Six points: c0..c2 in tenant acme (c2 finance-only), c3..c5 in tenant harbor.

    Sparse term i belongs to point i only; term 100 is shared by every point.
    """
    rng = np.random.default_rng(7)
    points = []
    for i in range(6):
        tenant = "acme" if i < 3 else "harbor"
        groups = ["finance"] if i == 2 else ["everyone"]
        points.append(IndexPoint(
            point_id=point_id_for(f"{tenant}:doc{i}:v1:0000"),
            vectors={DENSE: _unit(rng, DENSE_SIZES[DENSE]), DENSE_ML: _unit(rng, DENSE_SIZES[DENSE_ML]),
                     SPARSE_EN: Sparse([i, 100], [1.0, 0.5]), SPARSE_AR: Sparse([i + 50], [1.0])},
            payload={"tenant_id": tenant, "doc_id": f"doc{i}", "version": "v1", "groups": groups},
        ))
    return points


@pytest.fixture(params=["edge", "server"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    if request.param == "edge":
        idx: VectorIndex = EdgeIndex(tmp_path / "index")
    else:
        idx = ServerIndex(QdrantClient(":memory:"), collection="contract")
    yield idx
    idx.close()


def _ids(hits: list) -> list[str]:
    return [h.point_id for h in hits]


def test_point_ids_are_stable_uuids_of_the_chunk_id() -> None:
    assert point_id_for("acme:travel:v1:0000") == point_id_for("acme:travel:v1:0000")
    assert point_id_for("acme:travel:v1:0000") != point_id_for("acme:travel:v2:0000")
    assert len(point_id_for("x").split("-")) == 5


def test_upsert_then_existing_reports_exactly_the_stored_points(index: VectorIndex) -> None:
    points = _points()
    assert index.count() == 0
    index.upsert(points)
    ids = [p.point_id for p in points]
    unknown = point_id_for("never:stored:v1:0000")
    assert index.existing([*ids, unknown]) == set(ids)
    assert index.existing([]) == set()
    assert index.count() == 6


def test_upserting_the_same_ids_again_overwrites_instead_of_duplicating(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    index.upsert(points)
    assert index.count() == len(points)


def test_dense_search_ranks_the_nearest_point_first_and_stays_in_its_tenant(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    for name in (DENSE, DENSE_ML):
        hits = index.search(vector_name=name, vector=points[0].vectors[name], tenant_id="acme",
                            groups=EVERYONE, limit=10)
        assert _ids(hits)[0] == points[0].point_id
        assert hits[0].score == pytest.approx(1.0, abs=1e-3)
        # c2 is finance-only, c3..c5 belong to another tenant: none may come back.
        assert set(_ids(hits)) == {points[0].point_id, points[1].point_id}
    # Asking from the other tenant with the exact vector of an acme point never reaches it.
    other = index.search(vector_name=DENSE, vector=points[0].vectors[DENSE], tenant_id="harbor",
                         groups=EVERYONE, limit=10)
    assert points[0].point_id not in _ids(other)
    assert set(_ids(other)) == {p.point_id for p in points[3:]}


def test_group_filter_matches_any_of_the_callers_groups(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    query = points[2].vectors[DENSE]
    assert points[2].point_id not in _ids(index.search(vector_name=DENSE, vector=query, tenant_id="acme",
                                                       groups=EVERYONE, limit=10))
    hits = index.search(vector_name=DENSE, vector=query, tenant_id="acme", groups=["everyone", "finance"],
                        limit=10)
    assert _ids(hits)[0] == points[2].point_id
    assert index.search(vector_name=DENSE, vector=query, tenant_id="acme", groups=["nobody"], limit=10) == []


def test_sparse_search_finds_term_overlap_only(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    hits = index.search(vector_name=SPARSE_EN, vector=Sparse([1], [1.0]), tenant_id="acme", groups=EVERYONE,
                        limit=10)
    assert _ids(hits) == [points[1].point_id]
    arabic = index.search(vector_name=SPARSE_AR, vector=Sparse([50], [1.0]), tenant_id="acme",
                          groups=EVERYONE, limit=10)
    assert _ids(arabic) == [points[0].point_id]
    shared = index.search(vector_name=SPARSE_EN, vector=Sparse([100], [1.0]), tenant_id="acme",
                          groups=EVERYONE, limit=10)
    assert set(_ids(shared)) == {points[0].point_id, points[1].point_id}


def test_limit_and_exclude(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    query = Sparse([100], [1.0])
    assert len(index.search(vector_name=SPARSE_EN, vector=query, tenant_id="harbor", groups=EVERYONE,
                            limit=2)) == 2
    hits = index.search(vector_name=SPARSE_EN, vector=query, tenant_id="harbor", groups=EVERYONE, limit=10,
                        exclude=[points[3].point_id, points[4].point_id])
    assert _ids(hits) == [points[5].point_id]


def test_set_groups_moves_points_between_audiences_without_reindex(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    target = points[0]
    index.set_groups([target.point_id], ["executives"])
    index.set_groups([], ["ignored"])  # no ids: a no-op, not an error
    query = target.vectors[DENSE]
    assert target.point_id not in _ids(index.search(vector_name=DENSE, vector=query, tenant_id="acme",
                                                     groups=EVERYONE, limit=10))
    hits = index.search(vector_name=DENSE, vector=query, tenant_id="acme", groups=["executives"], limit=10)
    assert _ids(hits) == [target.point_id]
    assert index.count() == 6  # payload change only


def test_delete_removes_points_from_existing_count_and_search(index: VectorIndex) -> None:
    points = _points()
    index.upsert(points)
    gone = [points[0].point_id, points[1].point_id]
    index.delete(gone)
    index.delete([])  # no-op
    assert index.existing(gone) == set()
    assert index.count() == 4
    for name, vector in ((DENSE, points[0].vectors[DENSE]), (SPARSE_EN, Sparse([100], [1.0]))):
        hits = index.search(vector_name=name, vector=vector, tenant_id="acme", groups=["everyone", "finance"],
                            limit=10)
        assert not set(_ids(hits)) & set(gone)
    # Deleting again (cleanup re-runs after a crash) is harmless.
    index.delete(gone)
    assert index.count() == 4


def test_edge_index_persists_and_refuses_a_second_opener(tmp_path: Path) -> None:
    path = tmp_path / "index"
    first = EdgeIndex(path)
    first.upsert(_points())
    with pytest.raises(IndexLockedError, match="held by another process"):
        EdgeIndex(path)
    first.close()
    reopened = EdgeIndex(path)
    try:
        assert reopened.count() == 6
    finally:
        reopened.close()


def test_edge_index_filters_through_payload_indexes_on_tenant_and_groups(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index")
    try:
        assert {"tenant_id", "groups"} <= index.filter_indexes()
    finally:
        index.close()


def test_a_shard_made_without_filter_indexes_gets_them_on_load_and_answers_the_same(tmp_path: Path) -> None:
    import qdrant_edge as qe

    path = tmp_path / "index"
    old = qe.EdgeShard.create(str(path), qe.EdgeConfig(
        vectors={n: qe.EdgeVectorParams(size=DENSE_SIZES[n], distance=qe.Distance.Cosine) for n in (DENSE, DENSE_ML)},
        sparse_vectors={n: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf) for n in (SPARSE_EN, SPARSE_AR)},
    ))
    old.close()
    index = EdgeIndex(path)
    try:
        assert {"tenant_id", "groups"} <= index.filter_indexes()
        points = _points()
        index.upsert(points)
        hits = index.search(vector_name=DENSE, vector=points[0].vectors[DENSE], tenant_id="acme",
                            groups=["everyone"], limit=10)
        assert hits and hits[0].point_id == points[0].point_id
        assert {h.point_id for h in hits} == {p.point_id for p in points
                                             if p.payload["tenant_id"] == "acme" and "everyone" in p.payload["groups"]}
    finally:
        index.close()
