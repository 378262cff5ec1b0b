"""The chart: its series is computed by a pure function (asserted here), and the file is a real PNG."""

from __future__ import annotations

import struct
from datetime import UTC
from pathlib import Path
from zoneinfo import ZoneInfo

from escalations.chart import PNG_SIGNATURE, TrendSeries, render_chart, weekly_series
from tests.escalations.seeded_week import TREND_AVOIDABLE, TREND_GENUINE, TREND_WEEKS


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_weekly_series_is_pure_counting() -> None:
    rows = [
        ("2026-01-26T10:00:00.000000+00:00", "below_score_floor"),
        ("2026-01-27T10:00:00.000000+00:00", "conflicting_sources"),
        ("2026-01-28T10:00:00.000000+00:00", "user_requested_human"),
        ("2026-01-29T10:00:00.000000+00:00", "internal_error"),        # neither kind
        ("2026-01-25T23:59:59.000000+00:00", "retrieval_unavailable"),  # the week before
        ("2026-02-02T00:00:00.000000+00:00", "below_score_floor"),      # after the window
        ("2025-11-01T00:00:00.000000+00:00", "below_score_floor"),      # before the window
    ]
    series = weekly_series(rows, ["2026-W04", "2026-W05"], UTC)
    assert series == TrendSeries(weeks=["2026-W04", "2026-W05"], genuine=[1, 1], avoidable=[0, 2])
    # the same instant is Monday in Dubai: it moves to W05
    dubai = weekly_series(rows, ["2026-W04", "2026-W05"], ZoneInfo("Asia/Dubai"))
    assert dubai.genuine == [0, 2]


def test_chart_is_a_png(tmp_path: Path) -> None:
    series = TrendSeries(weeks=TREND_WEEKS, genuine=TREND_GENUINE, avoidable=TREND_AVOIDABLE)
    target = tmp_path / "chart.png"
    data = render_chart(series, UTC, target)
    assert target.read_bytes() == data
    assert len(data) > 10_000
    width, height = png_size(data)
    assert (width, height) == (880, 396)


def test_chart_of_an_empty_history(tmp_path: Path) -> None:
    series = TrendSeries(weeks=TREND_WEEKS, genuine=[0] * 8, avoidable=[0] * 8)
    assert png_size(render_chart(series, UTC))[0] == 880
