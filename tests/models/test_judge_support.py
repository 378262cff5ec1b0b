"""The judge's claim-support threshold: shipped in calibration.json, read with a default, stated in
the card, and the judge reads a drafted sentence against the sentence it restates above it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from models.judge import SUPPORT_AT, WEIGHTS, Candidate, Judge, shared_judge


def test_the_support_threshold_is_shipped_and_stated_in_the_card() -> None:
    calibration = json.loads((WEIGHTS / "calibration.json").read_text())
    assert 0.0 < calibration["support_at"] < calibration["answerable_at"]
    card = (WEIGHTS / "README.md").read_text()
    assert "## Claim support" in card and f"`support_at` in `calibration.json` ({calibration['support_at']})" in card


def test_weights_without_a_support_threshold_get_the_default(tmp_path: Path) -> None:
    weights = tmp_path / "weights"
    shutil.copytree(WEIGHTS, weights)
    calibration = json.loads((weights / "calibration.json").read_text())
    del calibration["support_at"]
    (weights / "calibration.json").write_text(json.dumps(calibration))
    assert Judge(weights).support_at == SUPPORT_AT


@pytest.mark.slow
def test_a_restated_sentence_reads_above_the_threshold_and_an_unrelated_one_below() -> None:
    judge = shared_judge()
    claim = "Hotels in London are capped at GBP 210 a night."
    p = judge.read(claim, [Candidate(0, "Travel > Hotels", "The nightly hotel limit in London is GBP 210."),
                           Candidate(0, "Security > Passwords", "Passwords must be at least 15 characters long.")])
    assert p[0] >= judge.support_at > p[1], p
