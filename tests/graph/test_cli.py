"""The terminal surface: `cairn ask/chat/escalations/reply/resolve/trace` in-process, on a copy of the
ingested handbook (the loaded embedding model is shared with the rest of the session)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.cli.conversation import run_turn_json
from bot.cli.main import main
from tests.conftest import SAMPLE_ACCESS
from tests.graph.conftest import LONDON, bob

UNKNOWN = "What is the policy on bringing dogs to the office?"


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("CAIRN_ACCESS_FILE", str(SAMPLE_ACCESS))
    for name in ("CAIRN_CHAT_MODEL", "OPENAI_BASE_URL", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)

    def run(*argv: str, stdin: str | None = None) -> tuple[int, str]:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main(list(argv))
        return code, capsys.readouterr().out

    return run


def test_ask_json_shape_then_the_escalation_queue_and_trace(cli) -> None:
    code, out = cli("ask", LONDON, "--as", "bob", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["route"] == "answer" and answer["reason"] is None
    assert {"id", "route", "reason", "top_score", "passages", "answer", "turn_id"} <= set(answer)
    p = answer["passages"][0]
    assert {"chunk_id", "doc_id", "version", "source", "heading", "score", "text"} <= set(p)
    assert p["source"]["path"] == "finance/travel.md" and "GBP 210" in answer["answer"]

    code, out = cli("ask", UNKNOWN, "--as", "bob", "--json")
    escalated = json.loads(out)
    assert (escalated["route"], escalated["reason"]) == ("escalate", "below_score_floor")
    escalation_id = escalated["escalation_id"]

    code, out = cli("escalations", "--open", "--json")
    assert [e["escalation_id"] for e in json.loads(out)] == [escalation_id]

    code, out = cli("reply", escalation_id, "Only guide dogs.", "--key", "k-1")
    assert code == 0 and out.strip() == "user receives: Answer from local: Only guide dogs."
    code, out = cli("reply", escalation_id, "Only guide dogs.", "--key", "k-1")
    assert out.strip() == "already delivered: nothing sent"

    code, out = cli("resolve", escalation_id)
    assert out.startswith(f"resolved {escalation_id}")
    code, out = cli("escalations", "--open", "--json")
    assert json.loads(out) == []

    code, out = cli("trace", answer["turn_id"], "--json")
    trace = json.loads(out)
    assert trace["route"] == "answer" and trace["route_fired"] == "validate→END"
    assert trace["answerer"] == "extractive" and trace["validation"]["ok"] is True
    assert trace["searches"][0]["chunks"][0]["chunk_id"] == p["chunk_id"]
    code, out = cli("trace", answer["turn_id"])
    assert "route: answer" in out and "validation:" in out


def test_chat_reads_lines_until_end_of_input(cli) -> None:
    code, out = cli("chat", "--as", "bob", stdin=f"{LONDON}\nI want to talk to a person\n/escalations\n")
    assert code == 0
    assert "GBP 210" in out and "passed your question to a person" in out
    escalation_id = out.split("(escalation ")[1].split(":")[0]
    assert escalation_id.startswith("esc-") and f"{escalation_id}  open" in out

    code, out = cli("chat", stdin=f"/reply {escalation_id} Hello Bob\n/resolve {escalation_id}\n/bogus\n/quit\n")
    assert "→ user receives: Answer from local: Hello Bob" in out
    assert f"resolved {escalation_id}" in out and "unknown command /bogus" in out


async def test_run_turn_json_for_eval(open_home) -> None:
    async with open_home() as svc:
        result = await run_turn_json(svc, LONDON, bob(svc), "q-7")
    assert result["id"] == "q-7" and result["route"] == "answer" and result["turn_id"]
