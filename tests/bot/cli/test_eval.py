"""`cairn eval FILE.jsonl --turns`: one full turn per input line, each in a new conversation, one output
line per input (the `ask --json` document plus `id` and `ms`); a line that cannot run is an error object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.cli.conftest import run

LONDON = "What is the nightly hotel limit in London?"
PETS = "What is our policy on bringing pets to the Tokyo office?"


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_eval_turns_runs_each_line_as_a_new_conversation(handbook_home: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    batch = write_lines(tmp_path / "q.jsonl",
                        json.dumps({"id": "london", "question": LONDON, "as": "bob"}),
                        "",
                        json.dumps({"id": "again", "question": LONDON}),
                        json.dumps({"id": "pets", "question": PETS, "as": "bob"}))
    code, out, _ = run(capsys, "eval", str(batch), "--turns", "--json")
    assert code == 0
    assert [o["id"] for o in out] == ["london", "again", "pets"]
    london, again, pets = out
    assert london["route"] == "answer" and "[larkspur:finance/travel:" in london["answer"]
    assert london["passages"] and london["turn_id"] and london["citations"]
    assert isinstance(london["ms"], float) and london["ms"] > 0
    assert again["route"] == "answer" and again["session_id"] != london["session_id"]  # a new conversation each
    assert pets["route"] == "escalate" and pets["reason"] == "below_score_floor" and pets["escalation_id"]


def test_eval_turns_reports_bad_lines_and_goes_on(handbook_home: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    batch = write_lines(tmp_path / "q.jsonl",
                        "{not json",
                        json.dumps(["a", "list"]),
                        json.dumps({"id": "blank", "question": "  "}),
                        json.dumps({"id": "ghost", "question": LONDON, "as": "nobody-here"}),
                        json.dumps({"id": "ok", "question": LONDON, "as": "bob"}))
    code, out, err = run(capsys, "eval", str(batch), "--turns")
    assert code == 1 and "4 input line(s) could not be evaluated" in err
    assert len(out) == 5
    assert out[0]["line"] == 1 and "not JSON" in out[0]["error"]
    assert out[1]["line"] == 2 and "expected an object" in out[1]["error"]
    assert out[2]["id"] == "blank" and "non-empty string" in out[2]["error"]
    assert out[3]["id"] == "ghost" and "unknown user" in out[3]["error"]
    assert out[4]["id"] == "ok" and out[4]["route"] == "answer" and "error" not in out[4]
