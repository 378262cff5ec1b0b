"""Admin answers become knowledge, through the real CLI, ingestion and graph: an answer filed from an
escalation is never shown until an owner approves it; once approved, the next identical question is
answered from it, with a citation of its document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.cli.conftest import run

QUESTION = "What is the guest wifi password at the Lisbon office?"
ANSWER = "The guest wifi password at the Lisbon office is Harbour-2026, on the LarkspurGuest network."
SECRET = "Harbour-2026"


def ask(capsys: pytest.CaptureFixture[str]) -> dict:
    code, [out], _ = run(capsys, "ask", QUESTION, "--as", "bob", "--json")
    assert code == 0
    return out


def test_an_approved_admin_answer_is_cited_next_time_and_an_unapproved_one_is_never_shown(
        handbook_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = ask(capsys)
    assert first["route"] == "escalate" and first["escalation_id"], first
    escalation_id = first["escalation_id"]

    code, [replied], _ = run(capsys, "reply", escalation_id, ANSWER, "--as", "adam", "--propose", "--json")
    assert code == 0 and replied["delivered"]
    proposal = replied["proposal"]
    assert proposal["status"] == "proposed" and proposal["groups"] == ["everyone"]
    assert proposal["owner"] == "#finance-policy" and proposal["question"] == QUESTION
    pid = proposal["proposal_id"]
    code, [listed], _ = run(capsys, "proposals", "--json")
    assert [p["proposal_id"] for p in listed] == [pid]

    # Filed, not approved: nobody is shown it, not the same asker, not a search.
    code, _, _ = run(capsys, "resolve", escalation_id, "--as", "adam", "--json")
    assert code == 0
    again = ask(capsys)
    assert SECRET not in (again["answer"] or "")
    assert not any(SECRET in p["text"] for p in again["passages"])
    code, [found], _ = run(capsys, "search", QUESTION, "--as", "bob", "--json")
    assert not any(SECRET in p["text"] or p["doc_id"].startswith("answers/") for p in found["passages"])

    # Only an owner of its groups (or an admin) decides.
    code, _, err = run(capsys, "proposals", "approve", pid, "--as", "bob", "--json")
    assert code == 2 and "may not decide" in err
    code, [approved], _ = run(capsys, "proposals", "approve", pid, "--as", "olivia", "--json")
    assert code == 0 and approved["status"] == "approved" and approved["decided_by"] == "U0OLIVIA"
    assert approved["doc_id"] == f"answers/{pid}" and approved["ingest"]["status"] == "published"
    code, _, err = run(capsys, "proposals", "approve", pid, "--as", "olivia", "--json")
    assert code == 2 and "already approved" in err
    code, [docs], _ = run(capsys, "docs", "--json")
    [doc] = [d for d in docs if d["doc_id"] == f"answers/{pid}"]
    assert (doc["version"], doc["groups"], doc["owner"], doc["title"]) == ("v1", ["everyone"], "#finance-policy",
                                                                           QUESTION)

    # The next identical question is answered from it, and cites it.
    answered = ask(capsys)
    assert answered["route"] == "answer", json.dumps(answered)[:3000]
    assert SECRET in answered["answer"]
    cited = [p for p in answered["passages"] if p["doc_id"] == f"answers/{pid}"]
    assert cited and f"[{cited[0]['chunk_id']}]" in answered["answer"]


def test_a_rejected_answer_is_never_ingested(handbook_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = ask(capsys)
    escalation_id = first["escalation_id"]
    assert run(capsys, "reply", escalation_id, ANSWER, "--as", "adam", "--json")[0] == 0
    code, [resolved], _ = run(capsys, "resolve", escalation_id, "--as", "adam", "--propose", "--json")
    assert code == 0 and resolved["proposal"]["answer"] == ANSWER  # the last answer given, filed at resolve
    pid = resolved["proposal"]["proposal_id"]
    code, [rejected], _ = run(capsys, "proposals", "reject", pid, "--as", "adam", "--json")
    assert code == 0 and rejected["status"] == "rejected" and rejected["doc_id"] is None
    assert run(capsys, "proposals", "--json")[1] == [[]]
    code, [docs], _ = run(capsys, "docs", "--json")
    assert not [d for d in docs if d["doc_id"].startswith("answers/")]
    assert SECRET not in (ask(capsys)["answer"] or "")
