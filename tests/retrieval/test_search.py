"""Hybrid search over the ingested handbook: routing, fusion, leg failures, the gate, rerank fail-open.

Faults are injected by wrapping the real Qdrant Edge index and reranker, never by replacing them:
the legs that are not broken still run against the real index.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.services import Services
from retrieval.embed import DENSE, DENSE_ML, SPARSE_AR, SPARSE_EN, Embedder
from retrieval.index import Hit, VectorIndex
from retrieval.rerank import Candidate, Reranker, SentenceReranker
from retrieval.search import FINAL_K, RRF_K, Searcher, plan_legs, rrf_fuse
from store.records import Scope
from tests.conftest import handbook_copy

HOTEL = "What is the nightly hotel limit in Boston?"


@pytest.fixture(scope="module")
async def hb(tmp_path_factory: pytest.TempPathFactory, handbook_template: Path,
             embedder: Embedder) -> AsyncIterator[Services]:
    """A read-only copy of the ingested handbook shared by this module's tests."""
    async with handbook_copy(handbook_template, tmp_path_factory.mktemp("search") / "home", embedder) as svc:
        yield svc


@pytest.fixture
def bob(hb: Services) -> Scope:
    return hb.access.resolve_cli("bob")


class BrokenLegs:
    """The real index, except that some legs raise and some hang."""

    def __init__(self, inner: VectorIndex, *, fail: Sequence[str] = (), hang: Sequence[str] = (),
                 hang_s: float = 3.0) -> None:
        self.inner, self.fail, self.hang, self.hang_s = inner, set(fail), set(hang), hang_s
        self.backend = inner.backend
        self.calls: list[str] = []

    def search(self, *, vector_name: str, **kwargs: Any) -> list[Hit]:
        self.calls.append(vector_name)
        if vector_name in self.fail:
            raise ConnectionError(f"{vector_name} shard unreachable")
        if vector_name in self.hang:
            time.sleep(self.hang_s)
            return []
        return self.inner.search(vector_name=vector_name, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RaisingReranker:
    name = "broken-reranker"

    def score(self, **kwargs: Any) -> list[float]:
        raise RuntimeError("model crashed")


class SlowReranker:
    name = "slow-reranker"

    def score(self, *, candidates: Sequence[Candidate], **kwargs: Any) -> list[float]:
        time.sleep(2.0)
        return [1.0] * len(candidates)


def searcher(hb: Services, *, index: VectorIndex | None = None, reranker: Reranker | None = None,
             **kwargs: Any) -> Searcher:
    options: dict[str, Any] = {"min_score": hb.settings.rerank_min_score, "leg_timeout_s": 2.0}
    options.update(kwargs)
    return Searcher(index=index or hb.index, catalog=hb.catalog, embedder=hb.embedder,
                    reranker=reranker or SentenceReranker(), **options)


# -- the language router -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "mode", "multilingual", "legs"),
    [
        ("en", "hybrid", True, (DENSE, SPARSE_EN)),
        ("ar", "hybrid", True, (DENSE_ML, SPARSE_AR)),
        ("mixed", "hybrid", True, (DENSE, DENSE_ML, SPARSE_EN, SPARSE_AR)),
        ("ar", "hybrid", False, (DENSE, SPARSE_AR)),
        ("mixed", "hybrid", False, (DENSE, SPARSE_EN, SPARSE_AR)),
        ("en", "dense", True, (DENSE,)),
        ("ar", "dense", True, (DENSE_ML,)),
        ("en", "bm25", True, (SPARSE_EN,)),
        ("ar", "bm25", True, (SPARSE_AR,)),
        ("mixed", "bm25", True, (SPARSE_EN, SPARSE_AR)),
    ],
)
def test_router_plans_legs_by_language_and_mode(language: str, mode: str, multilingual: bool,
                                                legs: tuple[str, ...]) -> None:
    assert plan_legs(language, mode, multilingual=multilingual) == legs  # type: ignore[arg-type]


# -- reciprocal rank fusion ----------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks_across_legs() -> None:
    rankings = {
        "dense": [Hit("a", 0.9), Hit("b", 0.8), Hit("c", 0.1)],
        "sparse_en": [Hit("b", 12.0), Hit("d", 3.0)],
    }
    fused = dict(rrf_fuse(rankings))
    assert fused["a"] == pytest.approx(1 / (RRF_K + 1))
    assert fused["b"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused["c"] == pytest.approx(1 / (RRF_K + 3))
    assert fused["d"] == pytest.approx(1 / (RRF_K + 2))
    # b is in both legs and wins; raw scores (cosine vs BM25) never enter the fusion.
    assert [pid for pid, _ in rrf_fuse(rankings)] == ["b", "a", "d", "c"]


def test_rrf_breaks_ties_by_id_and_handles_empty_input() -> None:
    assert rrf_fuse({}) == []
    assert rrf_fuse({"dense": []}) == []
    tied = rrf_fuse({"x": [Hit("z", 1.0)], "y": [Hit("m", 1.0)]}, k=10)
    assert tied == [("m", pytest.approx(1 / 11)), ("z", pytest.approx(1 / 11))]


# -- search end to end ---------------------------------------------------------------------------


async def test_hybrid_search_answers_from_the_right_document(hb: Services, bob: Scope) -> None:
    result = await searcher(hb).search(HOTEL, bob)
    assert result.gate is None and result.language == "en"
    assert set(result.legs) == {DENSE, SPARSE_EN}
    assert all(r.status == "ok" and r.hits > 0 for r in result.legs.values())
    assert 0 < len(result.passages) <= FINAL_K
    assert result.passages[0].doc_id in {"finance/travel", "ops/events-travel"}
    assert any("250" in p.text for p in result.passages if p.doc_id == "finance/travel")
    scores = [p.score for p in result.passages]
    assert scores == sorted(scores, reverse=True)
    assert result.top_score == scores[0]
    assert not result.rerank_fail_open


async def test_arabic_question_uses_the_multilingual_and_arabic_legs(hb: Services, bob: Scope) -> None:
    result = await searcher(hb).search("كم عدد أيام الإجازة السنوية؟", bob)
    assert result.language == "ar"
    assert set(result.legs) == {DENSE_ML, SPARSE_AR}
    assert {"hr/ar/leave-ar", "hr/leave"} & {p.doc_id for p in result.passages}
    mixed = await searcher(hb).search("كم يوما من الإجازة السنوية في Larkspur؟", bob)
    assert mixed.language == "mixed"
    assert {DENSE_ML, SPARSE_AR, SPARSE_EN} <= set(mixed.legs)  # its Latin words are read in English too


async def test_an_arabic_question_reaches_an_english_only_page_through_the_multilingual_leg(
        hb: Services, bob: Scope) -> None:
    """The mileage notice exists only in English and shares no word with the Arabic question: the
    multilingual dense leg finds it, with no word list between the languages."""
    result = await searcher(hb).search("كم يعوض الموظف عن كل ميل عند قيادة سيارته للعمل؟", bob, mode="dense")
    assert set(result.legs) == {DENSE_ML}
    assert "finance/mileage-2026" in {p.doc_id for p in result.passages}


@pytest.mark.parametrize(("mode", "legs"), [("dense", {DENSE}), ("bm25", {SPARSE_EN})])
async def test_single_mode_runs_only_its_legs(hb: Services, bob: Scope, mode: str, legs: set[str]) -> None:
    index = BrokenLegs(hb.index)
    result = await searcher(hb, index=index).search(HOTEL, bob, mode=mode)  # type: ignore[arg-type]
    assert set(result.legs) == legs and set(index.calls) == legs
    assert result.mode == mode and result.passages


async def test_a_failing_leg_is_dropped_and_the_turn_goes_on(hb: Services, bob: Scope) -> None:
    result = await searcher(hb, index=BrokenLegs(hb.index, fail=[SPARSE_EN])).search(HOTEL, bob)
    assert result.legs[SPARSE_EN].status == "error"
    assert result.legs[SPARSE_EN].error == "ConnectionError"
    assert result.legs[DENSE].status == "ok"
    assert result.gate != "retrieval_unavailable" and result.passages
    assert "finance/travel" in {p.doc_id for p in result.passages}


async def test_a_hanging_leg_times_out_without_holding_the_turn(hb: Services, bob: Scope) -> None:
    index = BrokenLegs(hb.index, hang=[DENSE], hang_s=3.0)
    started = time.perf_counter()
    result = await searcher(hb, index=index, leg_timeout_s=0.3).search(HOTEL, bob)
    elapsed = time.perf_counter() - started
    assert result.legs[DENSE].status == "timeout"
    assert result.legs[SPARSE_EN].status == "ok"
    assert result.passages and result.gate != "retrieval_unavailable"
    assert elapsed < 2.5, f"the turn waited for the hung leg ({elapsed:.1f}s)"


async def test_every_leg_failing_gates_retrieval_unavailable(hb: Services, bob: Scope) -> None:
    index = BrokenLegs(hb.index, fail=[DENSE, DENSE_ML, SPARSE_EN, SPARSE_AR])
    result = await searcher(hb, index=index).search(HOTEL, bob)
    assert result.gate == "retrieval_unavailable"
    assert result.passages == [] and result.top_score is None
    assert {r.status for r in result.legs.values()} == {"error"}


async def test_reranker_failure_fails_open_in_rrf_order(hb: Services, bob: Scope) -> None:
    result = await searcher(hb, reranker=RaisingReranker()).search(HOTEL, bob)
    assert result.rerank_fail_open and result.reranker == "broken-reranker"
    assert result.passages
    rrf = [p.rrf for p in result.passages]
    assert rrf == sorted(rrf, reverse=True)
    # Scores fall back to the dense cosine, so the floor still means something.
    assert all(-1.0 <= p.score <= 1.0 for p in result.passages)
    healthy = await searcher(hb).search(HOTEL, bob)
    assert not healthy.rerank_fail_open
    # Fail-open keeps the fused order: its first passage is the best RRF candidate of all.
    assert result.passages[0].rrf >= max(p.rrf for p in healthy.passages)


async def test_reranker_timeout_fails_open_too(hb: Services, bob: Scope) -> None:
    started = time.perf_counter()
    result = await searcher(hb, reranker=SlowReranker(), rerank_timeout_s=0.3).search(HOTEL, bob)
    assert result.rerank_fail_open and result.passages
    assert time.perf_counter() - started < 1.8


async def test_score_floor_gates_and_still_returns_passages(hb: Services, bob: Scope) -> None:
    strict = await searcher(hb, min_score=1.01).search(HOTEL, bob)
    assert strict.gate == "below_score_floor" and strict.passages
    lenient = await searcher(hb, min_score=0.0).search(HOTEL, bob)
    assert lenient.gate is None


async def test_trace_names_legs_chunks_and_timings(hb: Services, bob: Scope) -> None:
    result = await searcher(hb).search(HOTEL, bob)
    trace = result.trace()
    assert trace["legs"][DENSE]["status"] == "ok"
    assert [c["chunk_id"] for c in trace["chunks"]] == [p.chunk_id for p in result.passages]
    assert set(result.timings) == {"embed", "legs+fuse", "rerank", "total"}
