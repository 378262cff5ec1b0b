"""Hybrid retrieval with an answerability gate.

question → language router → legs (dense / multilingual dense / BM25 en / BM25 ar) fetched
concurrently, each under its own timeout → RRF (k=60) → access check against the catalog →
rerank the fused top 12 → top 4 → score floor.

An Arabic question shares no word with an English page: it reaches English pages through the
multilingual dense leg, and is read against their sentences by the answer judge's multilingual
reader (models/judge), never through a word list.

A leg that fails or times out is dropped and the turn goes on; a reranker failure falls back to
the RRF order (fail-open) and the result says so. The gate: nothing found and the scope may read no
published document → `no_eligible_source`; no leg answered or nothing fused → `retrieval_unavailable`;
best reranked score under the floor → `below_score_floor`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from retrieval.embed import DENSE, DENSE_ML, SPARSE_AR, SPARSE_EN, Embedder
from retrieval.index import Hit, VectorIndex
from retrieval.language import detect_language
from retrieval.rerank import Candidate, Reranker
from store.catalog import Catalog
from store.records import ChunkRecord, Scope

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "dense", "bm25"]
Gate = Literal["no_eligible_source", "retrieval_unavailable", "below_score_floor"]
RRF_K = 60
FETCH_K = 20
FUSE_K = 12
FINAL_K = 4
# The legs' own threads, shared by every Searcher of the process: ingestion's embedding batches on
# the default executor never delay a question's index queries.
_LEG_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="cairn-leg")


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    doc_id: str
    version: str
    title: str
    source_path: str
    page: int | None
    heading: str
    text: str
    score: float
    rrf: float
    owner: str | None
    policy_id: str | None
    lang: str
    effective_at: str | None = None
    # which of the tenant's organisations the document belongs to, where it holds several
    # (graph/tenant_names.py; set by the graph's tools node, not by the search)
    organisation: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"chunk_id": self.chunk_id, "doc_id": self.doc_id, "version": self.version,
                "title": self.title, "source": {"path": self.source_path, "page": self.page},
                "heading": self.heading, "score": round(self.score, 4), "rrf": round(self.rrf, 5),
                "owner": self.owner, "policy_id": self.policy_id, "lang": self.lang,
                "effective_at": self.effective_at, "text": self.text}


@dataclass(frozen=True)
class LegReport:
    status: str  # ok | timeout | error | skipped
    hits: int = 0
    ms: float = 0.0
    error: str | None = None


@dataclass(frozen=True)
class SearchResult:
    query: str
    language: str
    mode: str
    passages: list[Passage]
    gate: Gate | None
    top_score: float | None
    legs: dict[str, LegReport]
    reranker: str
    rerank_fail_open: bool
    min_score: float
    timings: dict[str, float] = field(default_factory=dict)

    def trace(self) -> dict[str, object]:
        return {"language": self.language, "mode": self.mode, "gate": self.gate, "top_score": self.top_score,
                "min_score": self.min_score, "reranker": self.reranker,
                "rerank_fail_open": self.rerank_fail_open,
                "legs": {k: vars(v) for k, v in self.legs.items()}, "timings_ms": self.timings,
                "chunks": [{"chunk_id": p.chunk_id, "score": round(p.score, 4), "rrf": round(p.rrf, 5)}
                           for p in self.passages]}


def plan_legs(language: str, mode: Mode, *, multilingual: bool) -> tuple[str, ...]:
    """The router: English skips Arabic BM25, Arabic skips English BM25, mixed runs everything.

    The dense side is never language-filtered; an Arabic question uses the multilingual vector
    so it can land on an English policy.
    """
    dense: tuple[str, ...]
    if language == "en" or not multilingual:
        dense = (DENSE,)
    elif language == "ar":
        dense = (DENSE_ML,)
    else:
        dense = (DENSE, DENSE_ML)
    sparse = {"en": (SPARSE_EN,), "ar": (SPARSE_AR,)}.get(language, (SPARSE_EN, SPARSE_AR))
    if mode == "dense":
        return dense
    if mode == "bm25":
        return sparse
    return dense + sparse


def rrf_fuse(rankings: dict[str, list[Hit]], *, k: int = RRF_K) -> list[tuple[str, float]]:
    scores: dict[str, float] = {}
    for hits in rankings.values():
        for rank, hit in enumerate(hits):
            scores[hit.point_id] = scores.get(hit.point_id, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


class Searcher:
    def __init__(self, *, index: VectorIndex, catalog: Catalog, embedder: Embedder, reranker: Reranker,
                 min_score: float, leg_timeout_s: float = 2.0, rerank_timeout_s: float = 2.0,
                 metrics: object | None = None) -> None:
        self.index = index
        self.catalog = catalog
        self.embedder = embedder
        self.reranker = reranker
        self.min_score = min_score
        self.leg_timeout_s = leg_timeout_s
        self.rerank_timeout_s = rerank_timeout_s
        self.metrics = metrics
        self.start_timeout_s = max(5 * leg_timeout_s, 10.0)

    async def search(self, query: str, scope: Scope, *, mode: Mode = "hybrid", top_k: int = FINAL_K,
                     now: datetime | None = None) -> SearchResult:
        started = time.perf_counter()
        language = detect_language(query)
        legs = plan_legs(language, mode, multilingual=self.embedder.multilingual)
        # The reranker needs the question's own-language terms and its dense vectors even when a
        # single leg runs: MiniLM's for an English question, the multilingual one otherwise (a
        # non-English question is never compared in MiniLM's space while the multilingual model is on).
        wanted = {*legs, SPARSE_AR if language == "ar" else SPARSE_EN}
        if language == "en" or not self.embedder.multilingual:
            wanted.add(DENSE)
        if language != "en":
            wanted.add(DENSE_ML)
        vectors = tuple(sorted(wanted))
        # A question seen before (a retry, a common question) has its vectors cached: no thread hop.
        query_vecs = self.embedder.cached_query(query, vectors=vectors)
        if query_vecs is None:
            query_vecs = await asyncio.to_thread(self.embedder.embed_query, query, vectors=vectors)
        t_embed = time.perf_counter()
        reports: dict[str, LegReport] = {}
        rankings = await self._run_legs(legs, query_vecs, scope, reports, exclude=())
        fused = rrf_fuse(rankings)
        eligible = await self.catalog.eligible_chunks(point_ids=[pid for pid, _ in fused], scope=scope, now=now)
        if fused and len(eligible) < min(FUSE_K, len(fused)):
            # The index filter is a narrowing, not the authority: fetch one more bounded batch
            # past what the catalog refused, never a wider scope.
            refused = [pid for pid, _ in fused if pid not in eligible]
            more = await self._run_legs(legs, query_vecs, scope, {}, exclude=refused)
            for leg, hits in more.items():
                rankings[leg] = rankings.get(leg, []) + [h for h in hits if h.point_id not in eligible]
            fused = rrf_fuse(rankings)
            # Decide on one snapshot: merging the first answer with a second one taken after a
            # publication would return the old version and the new one together.
            eligible = await self.catalog.eligible_chunks(point_ids=[pid for pid, _ in fused], scope=scope,
                                                          now=now)
        candidates = [(pid, rrf, eligible[pid]) for pid, rrf in fused if pid in eligible][:FUSE_K]
        t_fuse = time.perf_counter()
        dense_scores = {h.point_id: h.score for leg in (DENSE_ML, DENSE) for h in rankings.get(leg, [])}
        passages, fail_open = await self._rerank(query, query_vecs, language, candidates, top_k, dense_scores)
        t_rerank = time.perf_counter()

        answered_legs = [r for r in reports.values() if r.status == "ok"]
        gate: Gate | None = None
        top = passages[0].score if passages else None
        if not passages and not await self.catalog.has_eligible_documents(scope=scope, now=now):
            gate = "no_eligible_source"  # nothing published for this scope: not an outage
        elif not answered_legs or not fused:
            gate = "retrieval_unavailable"
        elif not passages or top is None or top < self.min_score:
            gate = "below_score_floor"
        return SearchResult(
            query=query, language=language, mode=mode, passages=passages, gate=gate, top_score=top,
            legs=reports, reranker=self.reranker.name, rerank_fail_open=fail_open, min_score=self.min_score,
            timings={"embed": _ms(started, t_embed), "legs+fuse": _ms(t_embed, t_fuse),
                     "rerank": _ms(t_fuse, t_rerank), "total": _ms(started, t_rerank)},
        )

    async def _run_legs(self, legs: Sequence[str], query_vecs: dict[str, object], scope: Scope,
                        reports: dict[str, LegReport], *, exclude: Sequence[str]) -> dict[str, list[Hit]]:
        async def one(leg: str) -> tuple[str, list[Hit] | None]:
            t0 = time.perf_counter()
            try:
                hits, t0 = await self._timed_leg(lambda: self.index.search(
                    vector_name=leg, vector=query_vecs[leg], tenant_id=scope.tenant_id,
                    groups=scope.groups, limit=FETCH_K, exclude=exclude))
            except TimeoutError as exc:
                log.warning("retrieval leg %s timed out: %s", leg, exc)
                reports[leg] = LegReport(status="timeout", ms=_ms(t0, time.perf_counter()))
                self._count("leg_timeout", leg)
                return leg, None
            except Exception as exc:
                log.warning("retrieval leg %s failed: %s", leg, exc)
                reports[leg] = LegReport(status="error", ms=_ms(t0, time.perf_counter()),
                                         error=type(exc).__name__)
                self._count("leg_error", leg)
                return leg, None
            reports[leg] = LegReport(status="ok", hits=len(hits), ms=_ms(t0, time.perf_counter()))
            return leg, hits

        if not scope.groups:
            for leg in legs:
                reports[leg] = LegReport(status="skipped")
            return {}
        results = await asyncio.gather(*(one(leg) for leg in legs))
        return {leg: hits for leg, hits in results if hits is not None}

    async def _rerank(self, query: str, query_vecs: dict[str, object], language: str,
                      candidates: list[tuple[str, float, ChunkRecord]], top_k: int,
                      dense_scores: dict[str, float]) -> tuple[list[Passage], bool]:
        if not candidates:
            return [], False
        rows = await self.catalog.load_vectors(chunk_ids=[c.chunk_id for _, _, c in candidates])
        cands = [Candidate(point_id=pid, chunk_id=c.chunk_id, text=c.text, lang=c.lang, vectors=rows.get(c.chunk_id))
                 for pid, _, c in candidates]
        fail_open = False
        try:
            scores = await asyncio.wait_for(asyncio.to_thread(
                self.reranker.score, query=query, query_vecs=query_vecs, language=language, candidates=cands),
                timeout=self.rerank_timeout_s)
            order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
        except Exception as exc:
            # Fail-open: keep the RRF order and gate on the dense cosine (a BM25-only hit scores 0),
            # so an outage of the reranker never turns into a confident guess.
            log.warning("reranker failed open: %s", type(exc).__name__)
            self._count("rerank_fail_open", self.reranker.name)
            fail_open = True
            scores = [dense_scores.get(pid, 0.0) for pid, _, _ in candidates]
            order = list(range(len(candidates)))
        return [_passage(candidates[i][2], score=float(scores[i]), rrf=candidates[i][1])
                for i in order[:top_k]], fail_open

    async def _timed_leg(self, call: Callable[[], list[Hit]]) -> tuple[list[Hit], float]:
        """Run one index query on the legs' own threads; its timeout counts from when it starts.

        Waiting for a thread on a busy machine is slowness, not an outage: only the query itself is
        held to `leg_timeout_s` (a leg that cannot even start within `start_timeout_s` is reported as
        timed out too). Returns the hits and the moment the query started."""
        loop = asyncio.get_running_loop()
        started: asyncio.Future[float] = loop.create_future()

        def run() -> list[Hit]:
            loop.call_soon_threadsafe(_resolve, started, time.perf_counter())
            return call()

        work = loop.run_in_executor(_LEG_POOL, run)
        try:
            t0 = await asyncio.wait_for(asyncio.shield(started), timeout=self.start_timeout_s)
        except TimeoutError:
            work.cancel()  # never started: drop it from the queue
            raise TimeoutError(f"did not start within {self.start_timeout_s:.1f}s") from None
        remaining = self.leg_timeout_s - (time.perf_counter() - t0)
        try:
            return await asyncio.wait_for(work, timeout=max(remaining, 0.001)), t0
        except TimeoutError:
            raise TimeoutError(f"no answer within {self.leg_timeout_s:.1f}s") from None

    async def warm_up(self) -> None:
        """Load the models and touch every leg of the index once, so the first question of a new
        process is not the one that pays for it (a cold first inference takes seconds)."""
        await asyncio.to_thread(self.embedder.warm_up)
        query_vecs = await asyncio.to_thread(
            self.embedder.embed_query, "warm up", vectors=(*self.embedder.dense_names, SPARSE_EN, SPARSE_AR))
        for leg, vector in query_vecs.items():
            try:
                await asyncio.to_thread(self.index.search, vector_name=leg, vector=vector, tenant_id="",
                                        groups=("",), limit=1)
            except Exception as exc:  # an index problem shows in the first real question's legs
                log.warning("warm-up of retrieval leg %s failed: %s", leg, type(exc).__name__)

    def _count(self, event: str, label: str) -> None:
        if self.metrics is not None:
            self.metrics.count(event, label)  # type: ignore[attr-defined]


def _passage(c: ChunkRecord, *, score: float, rrf: float) -> Passage:
    return Passage(chunk_id=c.chunk_id, doc_id=c.doc_id, version=c.version, title=c.title,
                   source_path=c.source_path, page=c.page, heading=c.heading, text=c.text, score=score,
                   rrf=rrf, owner=c.owner, policy_id=c.policy_id, lang=c.lang, effective_at=c.effective_at)


def _resolve(future: asyncio.Future[float], value: float) -> None:
    if not future.done():
        future.set_result(value)


def _ms(a: float, b: float) -> float:
    return round((b - a) * 1000, 2)
