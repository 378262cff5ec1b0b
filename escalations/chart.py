"""The digest's chart: genuine vs avoidable escalations per week, the last 8 weeks.

`weekly_series` is pure (rows in, counts out) so tests assert on the data the plot receives;
`render_chart` only draws it, on matplotlib's Agg canvas (no display; safe in a worker thread: a
Figure object with a FigureCanvasAgg, never pyplot's global state).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path

from escalations.taxonomy import AVOIDABLE, GENUINE, kind_for_reason
from escalations.weeks import week_label, week_start_local

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class TrendSeries:
    weeks: list[str]
    genuine: list[int]
    avoidable: list[int]


def weekly_series(rows: Iterable[tuple[str, str]], weeks: Sequence[str], tz: tzinfo) -> TrendSeries:
    """Count (created_at, reason) rows per week label and kind; weeks outside `weeks` are ignored."""
    position = {w: i for i, w in enumerate(weeks)}
    genuine, avoidable = [0] * len(weeks), [0] * len(weeks)
    for created_at, reason in rows:
        i = position.get(week_label(datetime.fromisoformat(created_at), tz))
        if i is None:
            continue
        kind = kind_for_reason(reason)
        if kind == GENUINE:
            genuine[i] += 1
        elif kind == AVOIDABLE:
            avoidable[i] += 1
    return TrendSeries(weeks=list(weeks), genuine=genuine, avoidable=avoidable)


def render_chart(series: TrendSeries, tz: tzinfo, target: Path | io.BytesIO | None = None) -> bytes:
    """Draw the series as grouped bars; write PNG to `target` if given, and return the bytes."""
    # The Agg canvas directly, not matplotlib.use()/pyplot: no process-wide backend switch, no global figures.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(8, 3.6), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = list(range(len(series.weeks)))
    width = 0.38
    bars_g = ax.bar([x - width / 2 for x in xs], series.genuine, width, label="genuine (no answer existed)",
                    color="#5b7fa6")
    bars_a = ax.bar([x + width / 2 for x in xs], series.avoidable, width,
                    label="avoidable (knowledge base to fix)", color="#e08a2c")
    for bars, values in ((bars_g, series.genuine), (bars_a, series.avoidable)):
        ax.bar_label(bars, labels=[str(v) if v else "" for v in values], fontsize=8, padding=1)
    labels = [f"{w[-3:]}\n{week_start_local(w, tz):%d %b}" for w in series.weeks]
    ax.set_xticks(xs, labels, fontsize=8)
    ax.set_ylabel("escalations")
    top = max([*series.genuine, *series.avoidable, 1])
    ax.set_ylim(0, top * 1.25 + 0.5)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(f"Escalations per week, {series.weeks[0]} to {series.weeks[-1]}" if series.weeks
                 else "Escalations per week", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    data = buffer.getvalue()
    if isinstance(target, Path):
        target.write_bytes(data)
    elif target is not None:
        target.write(data)
    return data
