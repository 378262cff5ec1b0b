"""Run labelled questions through `Searcher.search` and score them (Recall@4, MRR@10, abstention).

One call per question and mode with top_k=10: the reranked order does not depend on top_k, so
its first four passages are exactly what top_k=4 returns (Recall@4) and all ten give MRR@10.
For hybrid searches the reranker's inputs are kept, so calibration can replay them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.datasets import Question
from bench.report import auroc, log, percentile, table
from bench.workspace import Workspace

MODES = ("hybrid", "dense", "bm25")
WARMUP = 10


@dataclass
class Outcome:
    question: Question
    mode: str
    tenant: str
    rank: int | None  # 1-based rank of the first gold passage in the top 10
    top_score: float | None
    gate: str | None
    ms: float
    degraded: bool  # a leg failed/timed out or the reranker failed open
    replay: dict[str, Any] | None = None
    gold_candidates: tuple[bool, ...] = ()
    top_doc: str | None = None

    @property
    def abstained(self) -> bool:
        return self.gate is not None

    @property
    def score(self) -> float:
        return -1.0 if self.top_score is None else self.top_score


def is_gold(q: Question, chunk_id: str, doc_id: str) -> bool:
    if q.gold_chunks is not None:
        return chunk_id in q.gold_chunks
    return doc_id in q.gold_docs


def doc_of(chunk_id: str) -> str:
    """chunk ids are tenant:doc:version:seq and doc ids cannot contain ':'."""
    return chunk_id.split(":")[1]


async def warm(ws: Workspace, tenant: str, texts: Sequence[str], modes: Sequence[str] = MODES) -> None:
    for text in list(texts)[:WARMUP]:
        for mode in modes:
            await ws.search(text, tenant, mode=mode)


async def run_questions(ws: Workspace, questions: Sequence[Question], tenant: str, *,
                        modes: Sequence[str] = MODES, label: str = "") -> list[Outcome]:
    out: list[Outcome] = []
    await warm(ws, tenant, [q.text for q in questions], modes)
    for mode in modes:
        for q in questions:
            result, ms, replay = await ws.search(q.text, tenant, mode=mode, top_k=10)
            rank = next((i for i, p in enumerate(result.passages, 1) if is_gold(q, p.chunk_id, p.doc_id)), None)
            degraded = result.rerank_fail_open or any(r.status in ("timeout", "error") for r in result.legs.values())
            keep = replay if mode == "hybrid" else None
            gold = tuple(is_gold(q, c.chunk_id, doc_of(c.chunk_id)) for c in keep["candidates"]) if keep else ()
            out.append(Outcome(q, mode, tenant, rank, result.top_score, result.gate, ms, degraded, keep, gold,
                               result.passages[0].doc_id if result.passages else None))
    log(f"{label or tenant}: {len(questions)} questions × {len(modes)} modes searched")
    return out


@dataclass(frozen=True)
class Summary:
    n_answerable: int
    n_abstain: int
    recall4: float
    mrr10: float
    answered: float  # answered-when-answerable at the configured floor
    abstained: float  # abstained-when-must-abstain at the configured floor
    p50: float
    p95: float
    degraded: int


def summarize(outcomes: Sequence[Outcome]) -> Summary:
    ans = [o for o in outcomes if not o.question.must_abstain]
    neg = [o for o in outcomes if o.question.must_abstain]
    ms = [o.ms for o in outcomes]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else math.nan

    return Summary(
        n_answerable=len(ans), n_abstain=len(neg),
        recall4=mean([1.0 if o.rank is not None and o.rank <= 4 else 0.0 for o in ans]),
        mrr10=mean([1.0 / o.rank if o.rank else 0.0 for o in ans]),
        answered=mean([0.0 if o.abstained else 1.0 for o in ans]),
        abstained=mean([1.0 if o.abstained else 0.0 for o in neg]),
        p50=percentile(ms, 50), p95=percentile(ms, 95), degraded=sum(o.degraded for o in outcomes),
    )


def mode_table(title: str, outcomes: Sequence[Outcome], *, floor: float, note: str | None = None,
               kinds_label: str = "must abstain") -> dict[str, Summary]:
    rows, sums = [], {}
    for mode in MODES:
        mine = [o for o in outcomes if o.mode == mode]
        if not mine:
            continue
        s = summarize(mine)
        sums[mode] = s
        rows.append([mode, s.n_answerable, s.recall4, s.mrr10, s.answered, s.n_abstain,
                     s.abstained if s.n_abstain else None, s.p50, s.p95, s.degraded])
    table(title, ["mode", "answerable n", "Recall@4", "MRR@10", f"answered @floor {floor:.2f}",
                  f"{kinds_label} n", f"abstained @floor {floor:.2f}", "p50 ms", "p95 ms", "degraded"],
          rows, note=note)
    return sums


def separation(pos: Sequence[Outcome], neg: Sequence[Outcome]) -> float:
    return auroc([o.score for o in pos], [o.score for o in neg])
