"""Table printing and the small statistics every section needs (percentiles, AUROC, targets)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else math.nan


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(score of a random positive > score of a random negative), ties count half (Mann–Whitney)."""
    if not positives or not negatives:
        return math.nan
    pos = np.asarray(positives, dtype=np.float64)
    neg = np.asarray(negatives, dtype=np.float64)
    allv = np.concatenate([pos, neg])
    order = allv.argsort(kind="mergesort")
    ranks = np.empty(len(allv), dtype=np.float64)
    ranks[order] = np.arange(1, len(allv) + 1)
    # average ranks over ties
    sorted_vals = allv[order]
    i = 0
    while i < len(sorted_vals):
        j = i
        while j + 1 < len(sorted_vals) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        if j > i:
            ranks[order[i:j + 1]] = (i + j + 2) / 2
        i = j + 1
    r_pos = ranks[: len(pos)].sum()
    return float((r_pos - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def fmt(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.{digits}f}"
    return str(value)


def target(value: float | None, goal: float, *, higher: bool = True, digits: int = 3) -> str:
    """'0.912 (target ≥ 0.90: met)' — misses are printed as plainly as hits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"n/a (target {'≥' if higher else '≤'} {goal})"
    ok = value >= goal if higher else value <= goal
    return f"{value:.{digits}f} (target {'≥' if higher else '≤'} {goal}: {'met' if ok else 'MISSED'})"


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]], *, note: str | None = None) -> None:
    cells = [[fmt(c) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
              for i, h in enumerate(header)]
    print()
    print(f"### {title}")
    print()
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
    if note:
        print()
        for line in note.strip().splitlines():
            print(f"> {line}")
    print(flush=True)


def section_header(name: str, description: str) -> None:
    load = os.getloadavg()
    print()
    print("=" * 100)
    print(f"## {name} — {description}")
    print(f"(load average at start: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} on {os.cpu_count()} cores)")
    print("=" * 100, flush=True)


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """`with stopwatch() as t: ...` then t[0] is the elapsed seconds."""
    box: list[float] = [0.0]
    start = time.perf_counter()
    try:
        yield box
    finally:
        box[0] = time.perf_counter() - start


def log(message: str) -> None:
    print(f"  · {message}", flush=True)
