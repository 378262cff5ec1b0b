"""Choosing the score floor and the reranker's constants (issue 3, point 3).

Every hybrid search of the retrieval sections kept the reranker's exact inputs (question vectors,
the fused candidates and their stored vectors), so other constants are tried by calling the real
`SentenceReranker.score` again on those inputs — identical to searching again, minus the search.

Procedure (held-out numbers are never used to choose):
1. blend constants (SENTENCE_WEIGHT, COVERAGE_FLOOR) — best AUROC answerable vs out-of-corpus on
   the SQuAD tuning split (articles split in two by name), Recall@4 not allowed to drop, and only
   if it beats the configured pair by MIN_GAIN;
2. the floor — on the same tuning split, the point that maximises the smaller of the two margins
   (answered − 0.90, abstained − 0.95);
3. multilingual calibration (ML_SCALE, ML_SHIFT) — Arabic questions (XQuAD ar→en, ar→ar, ARCD)
   against Arabic questions asked of collections without the answer, tuning half, at that floor,
   Arabic Recall@4 within 0.01 of the grid's best (scores are capped at 1.0: a steep scale makes ties);
4. report everything on the held-out halves and on the handbook questions (never tuned on).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import retrieval.rerank as rr
from bench.evaluate import Outcome
from bench.report import auroc, log, table
from bench.workspace import Workspace

OUT = Path(__file__).resolve().parent / "out"
DOCS = Path(__file__).resolve().parent.parent / "docs"
CONSTANTS = ("SENTENCE_WEIGHT", "COVERAGE_FLOOR", "ML_SCALE", "ML_SHIFT", "ML_SENTENCE_WEIGHT", "ML_COVERAGE_FLOOR")
FLOORS = np.round(np.arange(0.0, 1.0001, 0.005), 3)
ANSWER_TARGET, ABSTAIN_TARGET = 0.90, 0.95
MIN_GAIN = 0.005  # AUROC gain on the tuning split that justifies changing a blend constant


@contextmanager
def constants(**values: float) -> Iterator[None]:
    old = {k: getattr(rr, k) for k in values}
    for k, v in values.items():
        setattr(rr, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(rr, k, v)


def current() -> dict[str, float]:
    return {k: float(getattr(rr, k)) for k in CONSTANTS if hasattr(rr, k)}


@dataclass(frozen=True)
class Scored:
    top: np.ndarray  # top score per question (-inf when nothing was retrieved)
    hit4: np.ndarray  # gold in top 4
    must_abstain: np.ndarray

    def answered(self, floor: float) -> float:
        pos = ~self.must_abstain
        return float((self.top[pos] >= floor).mean()) if pos.any() else float("nan")

    def abstained(self, floor: float) -> float:
        neg = self.must_abstain
        return float((self.top[neg] < floor).mean()) if neg.any() else float("nan")

    @property
    def auc(self) -> float:
        return auroc(list(self.top[~self.must_abstain]), list(self.top[self.must_abstain]))

    @property
    def recall4(self) -> float:
        return float(self.hit4[~self.must_abstain].mean())


def rescore(outcomes: Sequence[Outcome], **values: float) -> Scored:
    reranker = rr.SentenceReranker()
    tops, hits = [], []
    with constants(**values):
        for o in outcomes:
            rp = o.replay
            if not rp or not rp["candidates"]:
                tops.append(-np.inf)
                hits.append(False)
                continue
            scores = reranker.score(**rp)
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
            tops.append(scores[order[0]])
            hits.append(any(o.gold_candidates[i] for i in order[:4]))
    return Scored(np.asarray(tops, dtype=np.float64), np.asarray(hits),
                  np.asarray([o.question.must_abstain for o in outcomes]))


def _cross(o: Outcome) -> bool:
    """An Arabic question asked of an English collection (XQuAD en paragraphs or the handbooks)."""
    return o.tenant.split(":")[0] in ("xq_en", "eval")


def choose_floor(s: Scored) -> float:
    margins = [min(s.answered(f) - ANSWER_TARGET, s.abstained(f) - ABSTAIN_TARGET) for f in FLOORS]
    best = max(margins)
    # the middle of the plateau of best floors, rounded to what a person would configure
    ties = [f for f, m in zip(FLOORS, margins, strict=True) if m >= best - 1e-9]
    return round(float(np.median(ties)), 2)


async def _need(ws: Workspace, key: str) -> list[Outcome]:
    if key not in ws.results:
        from bench.retrieval import section_arcd, section_handbooks, section_squad, section_xquad

        await {"squad": section_squad, "handbooks": section_handbooks, "xquad": section_xquad,
               "arcd": section_arcd, "arabic_ooc": section_arcd}[key](ws)
    return [o for o in ws.results.get(key, []) if o.mode == "hybrid"]


async def section_calibrate(ws: Workspace) -> None:
    if not isinstance(ws.recorder.inner, rr.SentenceReranker):
        print(f"(reranker is {ws.recorder.name}: the sentence reranker's constants do not apply; skipped)")
        return
    squad = await _need(ws, "squad")
    handbooks = await _need(ws, "handbooks")
    arabic = [*(o for o in await _need(ws, "xquad") if o.question.lang == "ar"), *await _need(ws, "arcd"),
              *await _need(ws, "arabic_ooc")]
    base = current()
    configured_floor = ws.services.searcher.min_score

    # sanity: replaying with the configured constants reproduces the live scores
    live = np.asarray([o.score for o in squad])
    again = rescore(squad, **base).top
    drift = float(np.max(np.abs(np.where(np.isfinite(again), again, -1.0) - live))) if len(live) else 0.0
    log(f"replay check: max |replayed − live top score| over {len(squad)} SQuAD searches = {drift:.2e}")

    sq = [o for o in squad if o.question.kind in ("answerable", "ooc")]
    tune = [o for o in sq if o.question.split == "tune"]
    held = [o for o in sq if o.question.split == "heldout"]
    adv_held = [o for o in squad if o.question.split == "heldout" and o.question.kind in ("answerable", "adversarial")]
    log(f"SQuAD tuning split: {sum(not o.question.must_abstain for o in tune)} answerable / "
        f"{sum(o.question.must_abstain for o in tune)} out-of-corpus; held-out: "
        f"{sum(not o.question.must_abstain for o in held)} / {sum(o.question.must_abstain for o in held)}")

    # 1. blend constants
    grid = []
    for sw, cf in itertools.product((0.5, 0.6, 0.7, 0.8, 0.9, 1.0), (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)):
        s = rescore(tune, SENTENCE_WEIGHT=sw, COVERAGE_FLOOR=cf)
        grid.append((sw, cf, s.auc, s.recall4))
    base_tune = rescore(tune, SENTENCE_WEIGHT=base["SENTENCE_WEIGHT"], COVERAGE_FLOOR=base["COVERAGE_FLOOR"])
    allowed = [g for g in grid if g[3] >= base_tune.recall4 - 0.01]
    best = max(allowed, key=lambda g: (round(g[2], 3), g[3]))
    # a change has to earn its keep: under MIN_GAIN of AUROC is noise at this sample size
    sw, cf = (best[0], best[1]) if best[2] >= base_tune.auc + MIN_GAIN else (base["SENTENCE_WEIGHT"],
                                                                            base["COVERAGE_FLOOR"])
    grid.sort(key=lambda g: -g[2])
    table("Blend constants on the SQuAD tuning split (top 8 of 36 by AUROC, plus the configured pair)",
          ["SENTENCE_WEIGHT", "COVERAGE_FLOOR", "AUROC ans vs out-of-corpus", "Recall@4"],
          [*([g[0], g[1], g[2], g[3]] for g in grid[:8]),
           [f"{base['SENTENCE_WEIGHT']} (configured)", base["COVERAGE_FLOOR"], base_tune.auc, base_tune.recall4]],
          note=f"chosen: SENTENCE_WEIGHT={sw}, COVERAGE_FLOOR={cf} (the best pair, Recall@4 within 0.01 of the "
               f"configured pair, replaces the configured one only if its AUROC is at least {MIN_GAIN} higher).")
    en = {"SENTENCE_WEIGHT": sw, "COVERAGE_FLOOR": cf}

    # 2. the floor
    s_tune = rescore(tune, **en)
    floor = choose_floor(s_tune)

    # 3. multilingual calibration at that floor
    ar_tune = [o for o in arabic if o.question.split == "tune"]
    ar_held = [o for o in arabic if o.question.split == "heldout"]
    ml_grid = []
    for scale, shift in itertools.product((1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.2, 2.6, 3.0),
                                          np.round(np.arange(-0.60, 0.401, 0.05), 2)):
        s = rescore(ar_tune, **en, ML_SCALE=scale, ML_SHIFT=float(shift))
        margin = min(s.answered(floor) - ANSWER_TARGET, s.abstained(floor) - ABSTAIN_TARGET)
        ml_grid.append((round(margin, 3), -abs(scale - base["ML_SCALE"]) - abs(shift - base["ML_SHIFT"]),
                        scale, float(shift), s))
    # scores are capped at 1.0: a steep scale makes the best candidates tie and ranking suffers
    best_recall = max(g[4].recall4 for g in ml_grid)
    ml_grid = [g for g in ml_grid if g[4].recall4 >= best_recall - 0.01]
    _, _, scale, shift, _ = max(ml_grid, key=lambda g: (g[0], g[1]))
    ml = {"ML_SCALE": scale, "ML_SHIFT": shift}
    chosen = {**en, **ml}

    # 4. report: configured vs chosen, tuning vs held-out
    def row(label: str, outs: Sequence[Outcome], values: dict[str, float], f: float) -> list[object]:
        s = rescore(outs, **values)
        return [label, int((~s.must_abstain).sum()), int(s.must_abstain.sum()), s.auc, s.recall4,
                s.answered(f), s.abstained(f)]

    rows = []
    for name, values, f in (("configured", base, configured_floor), ("chosen", chosen, floor)):
        tag = f"{name} (floor {f:.2f})"
        rows += [[tag, *row("SQuAD tune", tune, values, f)], [tag, *row("SQuAD held-out", held, values, f)],
                 [tag, *row("SQuAD held-out adversarial", adv_held, values, f)],
                 [tag, *row("Arabic tune", ar_tune, values, f)], [tag, *row("Arabic held-out", ar_held, values, f)],
                 [tag, *row("  of which ar question → en collection", [o for o in ar_held if _cross(o)], values, f)],
                 [tag, *row("  of which ar question → ar collection", [o for o in ar_held if not _cross(o)], values, f)],
                 [tag, *row("Handbooks (never tuned on)", handbooks, values, f)]]
    table("Calibration — configured vs chosen constants (targets: answered ≥ 0.90, abstained ≥ 0.95)",
          ["constants", "set", "answerable", "must abstain", "AUROC", "Recall@4", "answered", "abstained"], rows,
          note="configured: " + ", ".join(f"{k}={v}" for k, v in base.items()) + f", floor {configured_floor}\n"
               "chosen:     " + ", ".join(f"{k}={v}" for k, v in chosen.items()) + f", floor {floor}")

    # the curve, on held-out data, with the chosen constants
    curves = {"SQuAD held-out": rescore(held, **chosen),
              "SQuAD adversarial (held-out)": rescore(adv_held, **chosen),
              "Handbooks": rescore(handbooks, **chosen), "Arabic held-out": rescore(ar_held, **chosen)}
    show = [round(f, 2) for f in np.arange(0.20, 0.901, 0.05)]
    if floor not in show:
        show = sorted({*show, floor})
    table("Floor curve (chosen constants): answered-when-answerable / abstained-when-not",
          ["floor", *[f"{k}: answered / abstained" for k in curves]],
          [[f"{f:.2f}{' ◀ chosen' if f == floor else ''}",
            *(f"{s.answered(f):.3f} / {s.abstained(f):.3f}" for s in curves.values())] for f in show])
    ws.results["calibration"] = {"floor": floor, "constants": chosen, "configured": base,
                                 "configured_floor": configured_floor}
    plot(curves, floor)
    print(f"\nRecommended: RERANK_MIN_SCORE={floor:.2f}; " + ", ".join(f"{k}={v}" for k, v in chosen.items())
          + f"  (configured now: floor {configured_floor:.2f}; "
          + ", ".join(f"{k}={v}" for k, v in base.items()) + ")")


def plot(curves: dict[str, Scored], floor: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, roc) = plt.subplots(1, 2, figsize=(13, 5.2))
    colors = dict(zip(curves, ("tab:blue", "tab:purple", "tab:green", "tab:orange"), strict=False))
    xs = FLOORS
    for name, s in curves.items():
        if (~s.must_abstain).any() and "adversarial" not in name:
            ax.plot(xs, [s.answered(f) for f in xs], color=colors[name], label=f"{name}: answered when answerable")
        ax.plot(xs, [s.abstained(f) for f in xs], color=colors[name], linestyle="--",
                label=f"{name}: abstained when {'adversarial' if 'adversarial' in name else 'not answerable'}")
    ax.axhline(ANSWER_TARGET, color="grey", linewidth=0.8, linestyle=":")
    ax.axhline(ABSTAIN_TARGET, color="grey", linewidth=0.8, linestyle=":")
    ax.axvline(floor, color="black", linewidth=1.2)
    ax.text(floor + 0.01, 0.55, f"floor {floor:.2f}", fontsize=9)
    ax.set_xlim(0.1, 1.0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("RERANK_MIN_SCORE (floor on the top reranked score)")
    ax.set_ylabel("rate")
    ax.set_title("Answer / abstain trade-off by floor (held-out)")
    ax.legend(fontsize=7, loc="center right")
    for name, s in curves.items():
        pos, neg = s.top[~s.must_abstain], s.top[s.must_abstain]
        if not len(pos) or not len(neg):
            continue
        thr = np.unique(np.concatenate([pos, neg, [np.inf, -np.inf]]))[::-1]
        tpr = [(pos >= t).mean() for t in thr]
        fpr = [(neg >= t).mean() for t in thr]
        roc.plot(fpr, tpr, color=colors[name], label=f"{name} (AUROC {s.auc:.3f})")
        roc.scatter([(neg >= floor).mean()], [(pos >= floor).mean()], color=colors[name], s=25, zorder=3)
    roc.plot([0, 1], [0, 1], color="grey", linewidth=0.6, linestyle=":")
    roc.set_xlabel("answered when it should abstain")
    roc.set_ylabel("answered when answerable")
    roc.set_title("ROC of the top score (dots: the chosen floor)")
    roc.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "calibration.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    DOCS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, DOCS / "calibration.png")
    log(f"calibration plot written to {path} and {DOCS / 'calibration.png'}")
