"""`cairn reply` and `cairn resolve` from a terminal reach the Slack asker: the same escalation use case as
a reply in the thread, told through Slack's Web API (the fake Slack) with the bot token."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.cli.main import main
from tests.bot.conftest import ESCALATION_CHANNEL, Cairn
from tests.bot.slack.test_escalations import ask_and_escalate
from tests.conftest import SAMPLE_ACCESS

ANSWER = "Only certified assistance dogs are allowed in the Tokyo office."


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


@pytest.fixture
def cli_env(cairn: Cairn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cairn:
    """The environment of an operator's shell on the server: same CAIRN_HOME and Slack app."""
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name, value in {"CAIRN_HOME": cairn.home, "CAIRN_ACCESS_FILE": SAMPLE_ACCESS, "SLACK_BOT_TOKEN": "xoxb-test",
                        "SLACK_API_URL": cairn.fake.url, "CAIRN_ESCALATION_CHANNEL": ESCALATION_CHANNEL}.items():
        monkeypatch.setenv(name, str(value))
    for name in ("CAIRN_CHAT_MODEL", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    return cairn


async def test_cairn_reply_reaches_the_slack_asker_once(cli_env: Cairn, capsys: pytest.CaptureFixture[str]) -> None:
    cairn = cli_env
    event, root = await ask_and_escalate(cairn)
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    await cairn.close()  # the embedded index has one owner: the CLI opens it now

    assert await cli("reply", escalation_id, ANSWER, "--as", "adam", "--key", "k-1", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["delivered"] is True and shown["relay"] == "relayed"
    to_asker = cairn.fake.posts_in("D0BOB", thread_ts=event["ts"])
    relayed = [c for c in to_asker if ANSWER in c.text]
    assert len(relayed) == 1 and "adam" in relayed[0].text.lower()
    # The people handling it see the answer in the thread too.
    assert any(ANSWER in c.text for c in cairn.fake.posts_in(ESCALATION_CHANNEL, thread_ts=thread))

    assert await cli("reply", escalation_id, ANSWER, "--as", "adam", "--key", "k-1") == 0  # the same key again
    assert "already delivered" in capsys.readouterr().out
    assert len([c for c in cairn.fake.posts_in("D0BOB", thread_ts=event["ts"]) if ANSWER in c.text]) == 1


async def test_cairn_resolve_tells_the_asker_and_updates_the_thread(cli_env: Cairn,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cairn = cli_env
    event, root = await ask_and_escalate(cairn)
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    thread = next(iter(cairn.fake.messages[ESCALATION_CHANNEL]))
    await cairn.close()

    assert await cli("resolve", escalation_id, "--as", "adam") == 0
    assert f"resolved {escalation_id}" in capsys.readouterr().out
    closing = cairn.fake.posts_in("D0BOB", thread_ts=event["ts"])[-1]
    assert "couldn't find this" not in closing.text and closing.text.strip()
    assert cairn.fake.calls_to("chat.update", lambda c: c.channel == ESCALATION_CHANNEL and c.params["ts"] == thread)
    assert await cli("resolve", escalation_id, "--as", "adam") == 0
    assert "was already resolved" in capsys.readouterr().out


async def test_a_guest_named_with_as_may_not_reply(cli_env: Cairn, capsys: pytest.CaptureFixture[str]) -> None:
    cairn = cli_env
    _, root = await ask_and_escalate(cairn)
    escalation_id = root.params["blocks"][-1]["elements"][0]["value"]
    await cairn.close()
    assert await cli("reply", escalation_id, "hello", "--as", "carla") == 2
    assert "not an admin" in capsys.readouterr().err
