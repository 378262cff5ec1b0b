"""Odd bytes at the command line never abort a batch or lose a turn: `cairn eval --turns` reports a line of
invalid UTF-8, a line nested thousands deep and a line with numbers out of range each as that line's
result and runs the rest; the console and `cairn ask` replace lone surrogates and invalid bytes and
answer or escalate as for any question."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.bombs import nested_json
from tests.bot.cli.conftest import run

LONDON = "What is the nightly hotel limit in London?"


def test_eval_turns_survives_invalid_utf8_nesting_and_huge_numbers(handbook_home: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_bytes(b"\n".join([
        json.dumps({"id": "bytes", "question": "What is the nightly hotel limit in London? "}).encode()[:-2]
        + b"\xff\xfe\"}",
        nested_json(100_000).encode(),
        b'{"id": "big", "question": "x", "n": 1' + b"0" * 400 + b"}",
        json.dumps({"id": "odd", "question": LONDON + " \ud800"}).encode(),
        json.dumps({"id": "ok", "question": LONDON, "as": "bob"}).encode(),
    ]) + b"\n")
    code, out, err = run(capsys, "eval", str(batch), "--turns", "--json")
    assert len(out) == 5, out
    by_id = {o.get("id") or o["line"]: o for o in out}
    assert by_id["bytes"]["route"] in ("answer", "escalate") and "error" not in by_id["bytes"]
    assert "nested" in by_id[2]["error"]
    assert "number too large" in by_id[3]["error"]
    assert by_id["odd"]["route"] in ("answer", "escalate") and by_id["odd"]["turn_id"]
    assert by_id["ok"]["route"] in ("answer", "escalate") and by_id["ok"]["turn_id"]
    assert code == 1 and "2 input line(s) could not be evaluated" in err


def test_ask_and_chat_take_lone_surrogates_and_bad_bytes(handbook_home: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    code, [turn], _ = run(capsys, "ask", LONDON + " \udcff", "--json")  # an argv byte Python could not decode
    assert code == 0 and turn["route"] in ("answer", "escalate") and turn["turn_id"]
    stdin = io.TextIOWrapper(io.BytesIO(LONDON.encode() + b" \xff\xfe\nI want to talk to a person \xed\xa0\x80\n"),
                             encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    capsys.readouterr()
    from bot.cli.main import main

    assert main(["chat", "--as", "bob"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert len([line for line in captured.out.splitlines() if line.strip()]) >= 2  # both lines had their turn
