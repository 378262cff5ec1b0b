"""The console (`cairn chat`) as a new user meets it: small talk gets a reply and never an escalation,
a new question while a person looks at an earlier one is answered, an asker with no documents hears
so, and `/reply` / `/resolve` follow the access file's admin rule for the `/as` user."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.cli.main import main
from graph.messages import abstention, fixed

LONDON = "What is the nightly hotel limit in London?"
PERSON = "I want to talk to a person about my payslip"


@pytest.fixture
def chat(handbook_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    for name in ("CAIRN_CHAT_MODEL", "OPENAI_BASE_URL", "SLACK_BOT_TOKEN"):
        monkeypatch.delenv(name, raising=False)

    def run(*argv: str, stdin: str = "") -> tuple[int, str]:
        capsys.readouterr()
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main(list(argv))
        return code, capsys.readouterr().out

    return run


def escalation_ids(out: str) -> list[str]:
    return [part.split(":")[0] for part in out.split("(escalation ")[1:]]


def test_small_talk_and_a_question_never_escalate(chat) -> None:
    code, out = chat("chat", stdin=f"hi\n{LONDON}\nthanks\nok cool\nwhat can you do?\n/escalations\n")
    assert code == 0
    assert fixed("greeting", "en") in out and fixed("thanks", "en") in out
    assert fixed("acknowledgement", "en") in out and fixed("capabilities", "en") in out
    assert "GBP 210" in out and "[larkspur:finance/travel:" in out
    assert "passed your question to a person" not in out and "(escalation " not in out
    assert out.rstrip().endswith("no open escalations")
    code, out = chat("escalations", "--json")
    assert json.loads(out) == []
    code, out = chat("digest", "--json")
    assert json.loads(out)["counts"]["genuine"] == 0 and json.loads(out)["backlog"] == []
    assert json.loads(out)["until"] is not None  # the week so far


def test_a_new_question_is_answered_while_a_person_looks_at_the_first(chat) -> None:
    code, out = chat("chat", "--as", "bob", stdin=f"{PERSON}\n{LONDON}\nany update?\nthanks\n/escalations\n")
    assert code == 0
    first, *later = escalation_ids(out)
    assert out.count(abstention("user_requested_human", "en")) == 1
    assert "GBP 210" in out and fixed("aside_answer", "en") in out
    assert fixed("escalate_pending", "en") in out and later == [first]  # "any update?" joined the open one
    assert f"{fixed('thanks', 'en')} {fixed('aside_conversation', 'en')}" in out
    assert out.count(f"{first}  open") == 1 and out.count("  open  ") == 1


def test_an_asker_without_documents_is_told_so(chat) -> None:
    code, out = chat("chat", "--as", "hank", stdin=f"{LONDON}\n")
    assert code == 0
    assert abstention("no_eligible_source", "en") in out and "no_eligible_source" in out
    assert "can't search our policies right now" not in out


def test_console_replies_follow_the_access_files_admin_rule(chat) -> None:
    code, out = chat("chat", "--as", "bob", stdin=f"{PERSON}\n")
    [escalation_id] = escalation_ids(out)

    code, out = chat("chat", stdin=f"/as bob\n/reply {escalation_id} Yes, up to 30 a month.\n"
                                   f"/resolve {escalation_id}\n/escalations\n")
    assert "! bob is not an admin in the access file" in out and "user receives" not in out
    assert out.count("not an admin") == 2 and f"{escalation_id}  open" in out

    code, out = chat("chat", stdin=f"/as adam\n/reply {escalation_id} Yes, up to 30 a month.\n")
    assert "→ user receives: Answer from adam: Yes, up to 30 a month." in out
    code, out = chat("escalations", "--json")
    [answered] = json.loads(out)
    assert answered["status"] == "answered"
    code, out = chat("chat", stdin=f"/as adam\n/resolve {escalation_id}\n")
    assert f"resolved {escalation_id}" in out
    code, out = chat("escalations", "--json")
    assert code == 0 and json.loads(out)[0]["resolved_by"] == "U0ADMIN"
