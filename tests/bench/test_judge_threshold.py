"""The judge threshold's replay and how much the tune split can tell apart (bench/judge_threshold.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.judge_threshold import (
    REACHES,
    SETS,
    Replayed,
    choose,
    reach_of,
    reaches,
    replay,
    resampled,
    rows_of,
)


def _turns(n: int, *, right_from: float) -> list[Replayed]:
    """n answerable turns read at 0, 1/n, …: right where read at or above `right_from`, else wrong;
    and n that must escalate, read low."""
    out = [Replayed(f"a{i}", "answer", False, i / n, "right" if i / n >= right_from else "wrong") for i in range(n)]
    return out + [Replayed(f"e{i}", "escalate", False, 0.5 * i / n, "wrong") for i in range(n)]


def test_a_turns_points_sum_to_the_replayed_utility() -> None:
    by_set = {"a": _turns(20, right_from=0.4), "b": _turns(10, right_from=0.7)}
    for tau in (0.0, 0.3, 0.55, 0.9):
        curves = {name: replay(turns, tau) for name, turns in by_set.items()}
        assert resampled(by_set, tau).point == pytest.approx(sum(o.utility for o in curves.values()))
    best, _ = choose(by_set)
    assert 0.5 <= best <= 0.7  # over the must-escalate readings, where the wrong answers stop


def test_a_run_against_itself_differs_by_nothing_and_a_better_one_shows() -> None:
    this = {"a": _turns(40, right_from=0.3)}
    same = resampled(this, 0.5, this, 0.5)
    assert same.point == 0.0 and same.sd == 0.0
    worse = {"a": [Replayed(t.qid, t.expect, t.escalated, t.judge, "wrong") for t in this["a"]]}
    better = resampled(this, 0.5, worse, 0.5)
    assert better.point > 0 and better.low > 0


def test_a_small_set_gives_a_wide_spread() -> None:
    small, large = {"a": _turns(10, right_from=0.5)}, {"a": _turns(200, right_from=0.5)}
    assert resampled(small, 0.5).sd > 2 * resampled(large, 0.5).sd


def test_another_run_s_rows_are_read_back_tune_turns_only(tmp_path: Path) -> None:
    for name in SETS:
        rows = [{"id": "q1", "split": "tune", "expected": "answer", "route": "answer", "judge": 0.8, "verdict": "right"},
                {"id": "q2", "split": "tune", "expected": "escalate", "route": "escalate", "judge": None,
                 "verdict": "correct_escalation"},
                {"id": "q3", "split": "report", "expected": "answer", "route": "answer", "judge": 0.9, "verdict": "right"}]
        (tmp_path / f"answers-judge-{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = rows_of(tmp_path)
    assert set(read) == set(SETS)
    assert [t.qid for t in read["squad"]] == ["q1", "q2"]
    assert read["squad"][1].escalated and read["squad"][0].points(0.85) == 0.0 and read["squad"][0].points(0.5) == 1.0


def test_a_folder_missing_a_set_s_rows_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"answers-judge-sample\.jsonl"):
        rows_of(tmp_path)


def test_an_answerable_turn_s_reach_is_the_nearest_place_its_gold_got_to() -> None:
    reading = {"sentences": [{"text": "Hotels are booked through the portal."},
                             {"text": "The nightly limit is USD 250 in Boston."}]}
    assert reach_of("right", None, ["$250"], None) == "right"
    assert reach_of("wrong", reading, ["$250"], "read") == "sentence read"  # "USD 250" = "$250"
    assert reach_of("needless_escalation", reading, ["USD 300"], "read") == "passage read"
    assert reach_of("wrong", None, ["USD 300"], "ranked out") == "ranked out"
    assert reach_of("wrong", {"sentences": []}, ["USD 300"], None) == "not retrieved"


def test_the_reaches_table_is_cumulative_and_counts_only_answerable_turns() -> None:
    turns = [Replayed("a1", "answer", False, 0.9, "right", "right"),
             Replayed("a2", "answer", False, 0.2, "right", "right"),
             Replayed("a3", "answer", False, 0.8, "wrong", "sentence read"),
             Replayed("a4", "answer", True, None, "needless_escalation", "ranked out"),
             Replayed("e1", "escalate", False, 0.1, "wrong")]
    [row] = reaches({"s": turns}, 0.5)
    assert row == ["s", "4", "0.25", "0.50", "0.75", "0.75", "1", "0"]
    assert len(row) == 3 + len(REACHES)


def test_a_row_s_reach_is_read_back_from_its_reading_and_gold(tmp_path: Path) -> None:
    row = {"id": "q", "split": "tune", "expected": "answer", "route": "answer", "judge": 0.3, "verdict": "wrong",
           "gold": ["30 days"], "gold_at": "read",
           "reading": {"sentences": [{"text": "Returns are accepted within 30 days."}]}}
    for name in SETS:
        (tmp_path / f"answers-judge-{name}.jsonl").write_text(json.dumps(row) + "\n")
    assert rows_of(tmp_path)["sample"][0].reach == "sentence read"
