"""The vector index: Qdrant Edge embedded under CAIRN_HOME, or a Qdrant server by URL.

Both speak the same small interface so ingestion and search do not care which one runs.
Point ids are uuid5 of the stable chunk id, so re-running an ingest overwrites, never duplicates.
"""

from __future__ import annotations

import threading
import uuid
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from retrieval.embed import DENSE, DENSE_ML, DENSE_SIZES, SPARSE_AR, SPARSE_EN, Sparse

_NAMESPACE = uuid.UUID("5b0c1f2e-2f4d-4d8e-9a55-0c7c9a1d6e11")


def point_id_for(chunk_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, chunk_id))


@dataclass(frozen=True)
class IndexPoint:
    point_id: str
    vectors: dict[str, object]
    payload: dict[str, object]


@dataclass(frozen=True)
class Hit:
    point_id: str
    score: float


class IndexLockedError(RuntimeError):
    """Another process (normally `cairn serve`) holds the embedded index."""


class VectorIndex(Protocol):
    backend: str

    def upsert(self, points: Sequence[IndexPoint]) -> None: ...
    def existing(self, point_ids: Sequence[str]) -> set[str]: ...
    def delete(self, point_ids: Sequence[str]) -> None: ...
    def set_groups(self, point_ids: Sequence[str], groups: Sequence[str]) -> None: ...
    def search(self, *, vector_name: str, vector: object, tenant_id: str, groups: Iterable[str],
               limit: int, exclude: Sequence[str] = ()) -> list[Hit]: ...
    def count(self) -> int: ...
    def filter_indexes(self) -> set[str]: ...
    def close(self) -> None: ...


class EdgeIndex:
    backend = "qdrant-edge"

    def __init__(self, path: Path, *, dense_names: Sequence[str] = (DENSE, DENSE_ML)) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self._lock = threading.Lock()
        self._closed = False
        config = qe.EdgeConfig(
            vectors={name: qe.EdgeVectorParams(size=DENSE_SIZES[name], distance=qe.Distance.Cosine)
                     for name in dense_names},
            sparse_vectors={name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)
                            for name in (SPARSE_EN, SPARSE_AR)},
        )
        try:
            if (path / "wal").exists() or any(path.glob("segments*")):
                self._shard = qe.EdgeShard.load(str(path))
            else:
                path.mkdir(parents=True, exist_ok=True)
                self._shard = qe.EdgeShard.create(str(path), config)
        except Exception as exc:  # the engine reports a held WAL as a generic runtime error
            if "WouldBlock" in str(exc):
                raise IndexLockedError(
                    f"the index at {path} is held by another process (is `cairn serve` running?)"
                ) from exc
            raise
        self.dense_names = tuple(dense_names)
        self._ensure_filter_indexes()

    def _ensure_filter_indexes(self) -> None:
        """Every search filters on tenant and groups; without payload indexes on them a dense leg
        scans every point's payload (~50 ms at 10k chunks instead of under 1 ms). Shards made
        before the indexes existed get them on load."""
        qe = self._qe
        present = set(self._shard.info().payload_schema or {})
        wanted = {"tenant_id": qe.KeywordIndexParams(is_tenant=True), "groups": qe.PayloadSchemaType.Keyword}
        missing = {field: schema for field, schema in wanted.items() if field not in present}
        if not missing:
            return
        with self._lock:
            for field, schema in missing.items():
                self._shard.update(qe.UpdateOperation.create_field_index(field, schema))
            self._shard.flush()

    def filter_indexes(self) -> set[str]:
        return set(self._shard.info().payload_schema or {})

    def _vector(self, value: object) -> object:
        if isinstance(value, Sparse):
            return self._qe.SparseVector(indices=value.indices, values=value.values)
        return value

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        qe = self._qe
        batch = [qe.Point(p.point_id, {k: self._vector(v) for k, v in p.vectors.items()
                                       if k in self.dense_names or k in (SPARSE_EN, SPARSE_AR)}, p.payload)
                 for p in points]
        with self._lock:
            self._shard.update(qe.UpdateOperation.upsert_points(batch))
            self._shard.flush()

    def existing(self, point_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(point_ids), 512):
            records = self._shard.retrieve(list(point_ids[start:start + 512]), False, False)
            found |= {str(r.id) for r in records}
        return found

    def delete(self, point_ids: Sequence[str]) -> None:
        if not point_ids:
            return
        with self._lock:
            self._shard.update(self._qe.UpdateOperation.delete_points(list(point_ids)))
            self._shard.flush()

    def set_groups(self, point_ids: Sequence[str], groups: Sequence[str]) -> None:
        if not point_ids:
            return
        with self._lock:
            self._shard.update(self._qe.UpdateOperation.set_payload(list(point_ids), {"groups": list(groups)}))
            self._shard.flush()

    def search(self, *, vector_name: str, vector: object, tenant_id: str, groups: Iterable[str],
               limit: int, exclude: Sequence[str] = ()) -> list[Hit]:
        qe = self._qe
        must: list[Any] = [qe.FieldCondition("tenant_id", match=qe.MatchValue(tenant_id)),
                           qe.FieldCondition("groups", match=qe.MatchAny(sorted(groups)))]
        must_not: list[Any] = [qe.HasIdCondition(set(exclude))] if exclude else []
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(self._vector(vector), using=vector_name),
            filter=qe.Filter(must=must, must_not=must_not or None),
            with_payload=False,
        )
        return [Hit(str(p.id), float(p.score)) for p in self._shard.query(request)]

    def count(self) -> int:
        return int(self._shard.info().points_count)

    def close(self) -> None:
        with self._lock:
            if self._closed:  # closing twice (an owner's shutdown after a failure) is harmless
                return
            self._closed = True
            self._shard.flush()
            self._shard.close()


class ServerIndex:
    """qdrant-client against a Qdrant server/cluster (or its local mode, in tests)."""

    backend = "qdrant-server"

    def __init__(self, client: Any, *, collection: str = "cairn",
                 dense_names: Sequence[str] = (DENSE, DENSE_ML)) -> None:
        from qdrant_client import models

        self._client = client
        self._m = models
        self.collection = collection
        self.dense_names = tuple(dense_names)
        if not client.collection_exists(collection):
            client.create_collection(
                collection,
                vectors_config={n: models.VectorParams(size=DENSE_SIZES[n], distance=models.Distance.COSINE)
                                for n in self.dense_names},
                sparse_vectors_config={n: models.SparseVectorParams(modifier=models.Modifier.IDF)
                                       for n in (SPARSE_EN, SPARSE_AR)},
            )
        self._ensure_filter_indexes()

    def _ensure_filter_indexes(self) -> None:
        m = self._m
        present = set(self._client.get_collection(self.collection).payload_schema or {})
        wanted = {"tenant_id": m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True),
                  "groups": m.PayloadSchemaType.KEYWORD}
        for field, schema in wanted.items():
            if field not in present:
                with warnings.catch_warnings():  # qdrant-client's local mode has no payload indexes
                    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                    self._client.create_payload_index(self.collection, field, field_schema=schema, wait=True)

    def filter_indexes(self) -> set[str]:
        return set(self._client.get_collection(self.collection).payload_schema or {})

    @classmethod
    def connect(cls, url: str, *, api_key: str | None, collection: str,
                dense_names: Sequence[str]) -> ServerIndex:
        from qdrant_client import QdrantClient

        return cls(QdrantClient(url=url, api_key=api_key, timeout=10), collection=collection,
                   dense_names=dense_names)

    def _vector(self, value: object) -> object:
        if isinstance(value, Sparse):
            return self._m.SparseVector(indices=value.indices, values=value.values)
        return value

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        m = self._m
        self._client.upsert(self.collection, wait=True, points=[
            m.PointStruct(id=p.point_id, payload=p.payload,
                          vector={k: self._vector(v) for k, v in p.vectors.items()
                                  if k in self.dense_names or k in (SPARSE_EN, SPARSE_AR)})
            for p in points
        ])

    def existing(self, point_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(point_ids), 512):
            records = self._client.retrieve(self.collection, ids=list(point_ids[start:start + 512]),
                                            with_payload=False, with_vectors=False)
            found |= {str(r.id) for r in records}
        return found

    def delete(self, point_ids: Sequence[str]) -> None:
        if point_ids:
            self._client.delete(self.collection, points_selector=self._m.PointIdsList(points=list(point_ids)),
                                wait=True)

    def set_groups(self, point_ids: Sequence[str], groups: Sequence[str]) -> None:
        if point_ids:
            self._client.set_payload(self.collection, payload={"groups": list(groups)},
                                     points=list(point_ids), wait=True)

    def search(self, *, vector_name: str, vector: object, tenant_id: str, groups: Iterable[str],
               limit: int, exclude: Sequence[str] = ()) -> list[Hit]:
        m = self._m
        flt = m.Filter(
            must=[m.FieldCondition(key="tenant_id", match=m.MatchValue(value=tenant_id)),
                  m.FieldCondition(key="groups", match=m.MatchAny(any=sorted(groups)))],
            must_not=[m.HasIdCondition(has_id=list(exclude))] if exclude else None,
        )
        result = self._client.query_points(self.collection, query=self._vector(vector), using=vector_name,
                                           query_filter=flt, limit=limit, with_payload=False)
        return [Hit(str(p.id), float(p.score)) for p in result.points]

    def count(self) -> int:
        return int(self._client.count(self.collection, exact=True).count)

    def close(self) -> None:
        self._client.close()


def open_index(*, path: Path, url: str | None, api_key: str | None, collection: str,
               dense_names: Sequence[str]) -> VectorIndex:
    if url:
        return ServerIndex.connect(url, api_key=api_key, collection=collection, dense_names=dense_names)
    return EdgeIndex(path, dense_names=dense_names)
