"""The judge's one threshold, chosen on the TUNE split's end-to-end turns (never the report split's).

    python -m bench judge [--home DIR]    (CAIRN_BENCH_WRITE_THRESHOLD=1 writes it into the weights)

Every tune-split turn runs with the threshold at 0, so the judge's answerable probability and the
answer it would show are both recorded; then each candidate threshold τ is replayed on those turns:
a turn whose probability is under τ escalates (needless when it was answerable, correct when it had
to), the others show their answer (right or wrong as scored on its text). The chosen τ maximises,
per set and then averaged over sets, right − 2 × wrong shown (a wrong answer shown is the worst
outcome; a needless escalation costs the right answer it could have been).

How much the tune split can tell apart: its sets are small (a few dozen handbook turns), so the sum
moves by chance with the questions drawn. Each run prints the spread of its Σ over resamplings of
the tune questions (per set, with replacement, BOOTSTRAP_DRAWS times, a fixed seed). With
CAIRN_BENCH_JUDGE_AGAINST=DIR (a folder holding another run's answers-judge-<set>.jsonl rows,
bench/out/ of another reader, say) it prints the paired difference instead: this run at its τ
against that run at its own, over the same resampled questions. A difference whose interval
holds 0 is not a difference this split can show.

What no threshold can mend: each run also prints, per set, how far its answerable turns got toward a
right answer (REACHES): shown right when every answer is shown (τ = 0: the most any threshold can
keep), else a gold answer in a sentence the judge read (what a perfect judge choosing among those
sentences could quote), in a passage the answerer read but not in a sentence read, ranked out of the
passages read, or not retrieved (`bench.answers.gold_at`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.answer_scoring import contains_fact
from bench.answers import RUNNERS, Turn, _limit, write_rows
from bench.report import log, table
from bench.workspace import Workspace
from models.judge import WEIGHTS

SETS = ("sample", "handbooks", "staff", "squad", "xquad")
GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
WRONG_COST = 2.0
BOOTSTRAP_DRAWS = 1000
BOOTSTRAP_SEED = 20261207
# How far an answerable turn run at τ = 0 got toward a right answer, nearest first.
REACHES = ("right", "sentence read", "passage read", "ranked out", "not retrieved")


def reach_of(verdict: str, reading: Mapping[str, Any] | None, golds: Sequence[str], gold_at: str | None) -> str:
    """Which of REACHES an answerable turn got to: its verdict at τ = 0, the sentences the judge read
    (as the trace keeps them: the first graph.answerers.extractive.TRACE_CHARS characters of each) and
    where its gold stood in the search."""
    if verdict == "right":
        return "right"
    if reading and any(contains_fact(s.get("text"), golds) for s in reading.get("sentences") or []):
        return "sentence read"
    if gold_at == "read":
        return "passage read"
    return gold_at or "not retrieved"


@dataclass(frozen=True)
class Replayed:
    """What replaying a threshold needs of a tune turn run at τ = 0: what it had to do, whether it
    escalated anyway, the judge's answerable probability (None: not read), its verdict and, for an
    answerable one, its reach (one of REACHES; "" for a turn that had to escalate)."""

    qid: str
    expect: str
    escalated: bool
    judge: float | None
    verdict: str
    reach: str = ""

    @classmethod
    def of_turn(cls, t: Turn) -> Replayed:
        reach = reach_of(t.verdict, t.reading, t.case.answers, t.gold_at) if t.case.expect == "answer" else ""
        return cls(t.case.qid, t.case.expect, t.escalated, t.judge, t.verdict, reach)

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Replayed:
        """From a row of bench/out/answers-judge-<set>.jsonl (bench.answers.write_rows)."""
        expect, verdict = str(row["expected"]), str(row["verdict"])
        reach = reach_of(verdict, row.get("reading"), row.get("gold") or [], row.get("gold_at")) if expect == "answer" else ""
        return cls(str(row["id"]), expect, row["route"] != "answer", row["judge"], verdict, reach)

    def shown(self, tau: float) -> bool:
        """Whether its answer is shown at threshold τ (else it escalates)."""
        return not self.escalated and (self.judge is None or self.judge >= tau)

    def points(self, tau: float) -> float:
        """This turn's share of right − WRONG_COST × wrong shown at τ (an escalation counts 0)."""
        if not self.shown(tau):
            return 0.0
        return 1.0 if self.expect == "answer" and self.verdict == "right" else -WRONG_COST


@dataclass(frozen=True)
class Outcome:
    right: int
    wrong: int
    needless: int
    correct: int
    n: int

    @property
    def utility(self) -> float:
        return (self.right - WRONG_COST * self.wrong) / max(1, self.n)


def replay(turns: Sequence[Replayed], tau: float) -> Outcome:
    right = wrong = needless = correct = 0
    for t in turns:
        shown = t.shown(tau)
        if t.expect == "answer":
            if not shown:
                needless += 1
            elif t.verdict == "right":
                right += 1
            else:
                wrong += 1
        elif shown:
            wrong += 1
        else:
            correct += 1
    return Outcome(right, wrong, needless, correct, len(turns))


def choose(by_set: Mapping[str, Sequence[Replayed]]) -> tuple[float, dict[float, dict[str, Outcome]]]:
    curves = {tau: {name: replay(turns, tau) for name, turns in by_set.items()} for tau in GRID}
    best = max(GRID, key=lambda tau: (sum(o.utility for o in curves[tau].values()), -tau))
    return best, curves


@dataclass(frozen=True)
class Spread:
    """Σ utility (or a difference of two) at its point, and its spread over resampled questions."""

    point: float
    sd: float
    low: float  # 5th percentile
    high: float  # 95th percentile


def resampled(this: Mapping[str, Sequence[Replayed]], tau: float,
              against: Mapping[str, Sequence[Replayed]] | None = None, against_tau: float = 0.0, *,
              draws: int = BOOTSTRAP_DRAWS, seed: int = BOOTSTRAP_SEED) -> Spread:
    """Σ utility at τ over resamplings of each set's questions (with replacement); with `against`, the
    paired difference Σ(this at τ) − Σ(against at against_tau) over the questions both ran."""
    rng = np.random.default_rng(seed)
    per_set: list[np.ndarray] = []
    for name in sorted(this):
        mine = {t.qid: t.points(tau) for t in this[name]}
        if against is not None:
            theirs = {t.qid: t.points(against_tau) for t in against.get(name, ())}
            mine = {q: p - theirs[q] for q, p in mine.items() if q in theirs}
        if mine:
            per_set.append(np.array(list(mine.values())))
    point = float(sum(points.mean() for points in per_set))
    sums = np.zeros(draws)
    for points in per_set:
        sums += points[rng.integers(0, len(points), size=(draws, len(points)))].mean(axis=1)
    return Spread(point, float(sums.std()), float(np.percentile(sums, 5)), float(np.percentile(sums, 95)))


def reaches(by_set: Mapping[str, Sequence[Replayed]], tau: float) -> list[list[str]]:
    """Per set: its answerable turns, the share right at τ, then the shares within each of REACHES,
    nearest first and cumulative (a perfect threshold keeps the first; a perfect judge over the
    sentences it read, the second; a perfect reader of the passages read, the third)."""
    rows = []
    for name, turns in by_set.items():
        mine = [t for t in turns if t.expect == "answer"]
        n = max(1, len(mine))
        cells, within = [], 0
        for reach in REACHES[:3]:
            within += sum(t.reach == reach for t in mine)
            cells.append(f"{within / n:.2f}")
        rows.append([name, str(len(mine)), f"{replay(turns, tau).right / n:.2f}", *cells,
                     *(str(sum(t.reach == reach for t in mine)) for reach in REACHES[3:])])
    return rows


def rows_of(folder: Path) -> dict[str, list[Replayed]]:
    """Another run's tune turns, from the answers-judge-<set>.jsonl rows it wrote to `folder`."""
    out: dict[str, list[Replayed]] = {}
    for name in SETS:
        path = folder / f"answers-judge-{name}.jsonl"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no rows of that run for the {name} set")
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        out[name] = [Replayed.of_row(r) for r in rows if r.get("split") == "tune"]
    return out


async def section_judge(ws: Workspace) -> None:
    judge = ws.services.answerer.judge if hasattr(ws.services.answerer, "judge") else None
    if judge is None:
        log("judge: the workspace's answerer has no judge; nothing to tune")
        return
    kept = judge.answerable_at
    judge.answerable_at = 0.0
    against_dir = os.environ.get("CAIRN_BENCH_JUDGE_AGAINST", "").strip()
    against = rows_of(Path(against_dir)) if against_dir else None  # read first: a bad folder fails before the run
    by_set: dict[str, list[Replayed]] = {}
    try:
        for name in SETS:
            make, run = RUNNERS[name]
            cases = _limit(make(), ["tune"])
            turns = await run(ws, cases)
            write_rows(f"judge-{name}", turns)
            by_set[name] = [Replayed.of_turn(t) for t in turns]
            log(f"judge: {name} tune, {len(cases)} turns")
    finally:
        judge.answerable_at = kept
    best, curves = choose(by_set)
    rows = []
    for tau in GRID:
        cells = []
        for name in SETS:
            o = curves[tau][name]
            cells.append(f"{o.right}/{o.wrong}/{o.needless}/{o.correct}")
        rows.append([f"{tau:.2f}" + (" ←" if tau == best else ""), *cells,
                     f"{sum(o.utility for o in curves[tau].values()):.3f}"])
    table("Judge threshold on the TUNE split (right / wrong shown / needless / correct escalations)",
          ["τ", *SETS, "Σ utility"], rows,
          note=f"utility per set = (right − {WRONG_COST:g} × wrong shown) / turns; the chosen τ maximises the sum.")
    table("How far the tune split's answerable turns got (shares of them, cumulative; τ = 0 shows every answer)",
          ["set", "answerable", f"right at τ {best:.2f}", "right at τ 0", "… or gold in a sentence the judge read",
           "… or in a passage read", *REACHES[3:]], reaches(by_set, best),
          note="a threshold cannot lift right answers above the τ 0 share, nor a judge over what it reads above the next")
    spread = resampled(by_set, best)
    log(f"judge: Σ {spread.point:.3f} at τ {best:.2f}; over {BOOTSTRAP_DRAWS} resamplings of the tune questions "
        f"sd {spread.sd:.3f}, 90 % within {spread.low:.3f} … {spread.high:.3f}")
    if against is not None:
        their_tau, _ = choose(against)
        diff = resampled(by_set, best, against, their_tau)
        log(f"judge: against {against_dir} (its τ {their_tau:.2f}): Σ difference {diff.point:+.3f}, "
            f"sd {diff.sd:.3f}, 90 % within {diff.low:+.3f} … {diff.high:+.3f}"
            + (" — not a difference this split can show" if diff.low <= 0 <= diff.high else ""))
    if os.environ.get("CAIRN_BENCH_WRITE_THRESHOLD") == "1":
        path = WEIGHTS / "calibration.json"
        calibration = json.loads(path.read_text())
        calibration["answerable_at"] = best
        path.write_text(json.dumps(calibration, indent=2) + "\n")
        log(f"judge: answerable_at = {best} written to {path}")
    ws.results["judge_threshold"] = best
