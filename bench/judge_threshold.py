"""The judge's one threshold, chosen on the TUNE split's end-to-end turns (never the report split's).

    python -m bench judge [--home DIR]    (CAIRN_BENCH_WRITE_THRESHOLD=1 writes it into the weights)

Every tune-split turn runs with the threshold at 0, so the judge's answerable probability and the
answer it would show are both recorded; then each candidate threshold τ is replayed on those turns:
a turn whose probability is under τ escalates (needless when it was answerable, correct when it had
to), the others show their answer (right or wrong as scored on its text). The chosen τ maximises,
per set and then averaged over sets, right − 2 × wrong shown (a wrong answer shown is the worst
outcome; a needless escalation costs the right answer it could have been).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from bench.answers import RUNNERS, Turn, _limit, write_rows
from bench.report import log, table
from bench.workspace import Workspace
from models.judge import WEIGHTS

SETS = ("sample", "handbooks", "staff", "squad", "xquad")
GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))
WRONG_COST = 2.0


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


def replay(turns: Sequence[Turn], tau: float) -> Outcome:
    right = wrong = needless = correct = 0
    for t in turns:
        shown = not t.escalated and (t.judge is None or t.judge >= tau)
        if t.case.expect == "answer":
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


def choose(by_set: dict[str, list[Turn]]) -> tuple[float, dict[float, dict[str, Outcome]]]:
    curves = {tau: {name: replay(turns, tau) for name, turns in by_set.items()} for tau in GRID}
    best = max(GRID, key=lambda tau: (sum(o.utility for o in curves[tau].values()), -tau))
    return best, curves


async def section_judge(ws: Workspace) -> None:
    judge = ws.services.answerer.judge if hasattr(ws.services.answerer, "judge") else None
    if judge is None:
        log("judge: the workspace's answerer has no judge; nothing to tune")
        return
    kept = judge.answerable_at
    judge.answerable_at = 0.0
    by_set: dict[str, list[Turn]] = {}
    try:
        for name in SETS:
            make, run = RUNNERS[name]
            cases = _limit(make(), ["tune"])
            by_set[name] = await run(ws, cases)
            write_rows(f"judge-{name}", by_set[name])
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
    if os.environ.get("CAIRN_BENCH_WRITE_THRESHOLD") == "1":
        path = WEIGHTS / "calibration.json"
        calibration = json.loads(path.read_text())
        calibration["answerable_at"] = best
        path.write_text(json.dumps(calibration, indent=2) + "\n")
        log(f"judge: answerable_at = {best} written to {path}")
    ws.results["judge_threshold"] = best
