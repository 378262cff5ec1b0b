"""`cairn classify` and `cairn digest`: the state store only (never the index), so they work while `cairn serve` holds the index."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path

import pytest

from bot.cli.main import main
from bot.services import Services, open_services
from escalations.chart import PNG_SIGNATURE
from retrieval.embed import Embedder
from store.conversations import ConversationStore
from store.db import open_db
from tests.conftest import SAMPLE_ACCESS, make_settings
from tests.escalations.conftest import WEEK, Store, at, seed
from tests.escalations.seeded_week import seed_week
from tests.escalations.slack_files import FakeSlackWithFiles


@pytest.fixture
async def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """A CAIRN_HOME whose database holds the seeded week; the environment points the CLI at it."""
    home = tmp_path / "home"
    db = await open_db(make_settings(home).database)
    try:
        conversations = ConversationStore(db)
        from store.reports import EscalationReports

        await seed_week(Store(db, conversations, EscalationReports(db, conversations), home))
    finally:
        await db.close()
    monkeypatch.chdir(tmp_path)
    for name in ("SLACK_BOT_TOKEN", "CAIRN_DIGEST_CHANNEL", "CAIRN_CHAT_MODEL", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("CAIRN_ACCESS_FILE", str(SAMPLE_ACCESS))
    yield home


async def cairn(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_digest_out_writes_markdown_and_chart(home: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports" / "digest.md"
    assert await cairn("digest", "--week", WEEK, "--out", str(out)) == 0
    md = out.read_text(encoding="utf-8")
    assert md.startswith("# Cairn escalation digest — 2026-W05")
    assert "](digest.png)" in md and "| escalations | 6 | 5 |" in md
    png = out.with_suffix(".png").read_bytes()
    assert png[:8] == PNG_SIGNATURE and len(png) > 10_000
    assert f"wrote {out}" in capsys.readouterr().out


async def test_digest_prints_markdown_or_json(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await cairn("digest", "--week", WEEK) == 0
    assert "## Knowledge-base backlog (3 avoidable)" in capsys.readouterr().out
    assert await cairn("digest", "--week", WEEK, "--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"] == {"genuine": 2, "avoidable": 3, "other": 1, "restricted": 0, "no_documents": 0}
    assert data["trend"]["avoidable"] == [0, 0, 0, 0, 0, 1, 3, 3]


async def test_digest_errors_are_clear(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await cairn("digest", "--week", "2026-5") == 2
    assert "not in the form YYYY-Www" in capsys.readouterr().err
    assert await cairn("digest", "--week", WEEK, "--post") == 2
    err = capsys.readouterr().err
    assert "--post needs SLACK_BOT_TOKEN and CAIRN_DIGEST_CHANNEL" in err
    assert await cairn("digest", "--force") == 2


async def test_digest_post_once(home: Path, fake_slack: FakeSlackWithFiles, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url.rstrip("/"))  # a missing slash is forgiven
    monkeypatch.setenv("CAIRN_DIGEST_CHANNEL", "C0LEADS")
    assert await cairn("digest", "--week", WEEK, "--post") == 0
    assert "posted the 2026-W05 digest to C0LEADS" in capsys.readouterr().out
    assert await cairn("digest", "--week", WEEK, "--post") == 0
    assert "already posted" in capsys.readouterr().out
    assert len(fake_slack.calls_to("chat.postMessage")) == 1 and len(fake_slack.uploads) == 1
    fake_slack.reject_channel("C0LEADS", "channel_not_found")
    assert await cairn("digest", "--week", "2026-W04", "--post") == 2
    assert "Slack refused the digest: channel_not_found" in capsys.readouterr().err


async def test_digest_post_to_a_channel_the_bot_is_not_in_joins_a_public_one_and_names_a_private_one(
        home: Path, fake_slack: FakeSlackWithFiles, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_API_URL", fake_slack.url)
    monkeypatch.setenv("CAIRN_DIGEST_CHANNEL", "C0LEADS")
    fake_slack.reject_channel("C0LEADS", "not_in_channel")  # public, never invited: Cairn joins it
    assert await cairn("digest", "--week", WEEK, "--post") == 0
    assert "posted the 2026-W05 digest to C0LEADS" in capsys.readouterr().out
    assert [c.channel for c in fake_slack.calls_to("conversations.join")] == ["C0LEADS"]

    monkeypatch.setenv("CAIRN_DIGEST_CHANNEL", "G0LEADS")
    fake_slack.reject_channel("G0LEADS", "not_in_channel")  # private: only an invitation lets the bot in
    assert await cairn("digest", "--week", "2026-W04", "--post") == 2
    err = capsys.readouterr().err
    assert "not in the digest channel G0LEADS" in err and "/invite @Cairn in G0LEADS" in err and "private" in err
    assert not fake_slack.messages.get("G0LEADS")  # refused, and not retried blindly


async def test_classify_once_prints_counts(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert await cairn("classify") == 0
    out = capsys.readouterr().out
    # seeded: 15 escalations, 5 already have topics (e1, e2, e3, e4, e6): the other 10 are labelled now
    assert "labelled 10 escalation(s) with the embedding classifier" in out
    assert "kinds:  avoidable 6, genuine 4" in out
    assert await cairn("classify", "--json") == 0
    assert json.loads(capsys.readouterr().out)["labelled"] == 0


async def test_works_while_the_server_holds_the_index(home: Path, tmp_path: Path, embedder: Embedder,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    async with open_services(make_settings(home), embedder=embedder) as services:  # "cairn serve"
        await seed(Store(services.db, services.conversations, None, home),  # type: ignore[arg-type]
                   "live", reason="below_score_floor", created_at=at(30), question="What is the per diem in Riyadh?")
        assert await cairn("classify", "--json") == 0
        report = json.loads(capsys.readouterr().out)
        assert report["labelled"] == 11 and report["errors"] == []
        assert await cairn("digest", "--week", WEEK, "--out", str(tmp_path / "d.md")) == 0
        assert "per diem in Riyadh" in (tmp_path / "d.md").read_text(encoding="utf-8")


@pytest.mark.slow
async def test_digest_of_the_sample_escalations(handbook: Services, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs example, as a test: the sample's escalating questions through the runner, then --out."""
    from escalations.taxonomy import AVOIDABLE, RESTRICTED, kind_of
    from escalations.weeks import week_label
    from store.db import utcnow

    escalated = []
    for line in (SAMPLE_ACCESS.parent / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if item.get("expect") != "escalate":
            continue
        outcome = await handbook.runner.ask(session_id=f"doc-{item['id']}", question=item["question"],
                                            scope=handbook.access.resolve_cli(item.get("as")))
        # The digest is the default tenant's: another tenant's questions never reach its leads.
        if outcome.route == "escalate" and outcome.escalation and outcome.escalation.tenant_id == "larkspur":
            escalated.append(outcome)
    assert escalated
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAIRN_HOME", str(handbook.settings.cairn_home))
    monkeypatch.setenv("CAIRN_ACCESS_FILE", str(SAMPLE_ACCESS))
    assert await cairn("classify", "--json") == 0
    out = tmp_path / "digest.md"
    week = week_label(utcnow(), UTC)
    assert await cairn("digest", "--week", week, "--out", str(out)) == 0
    md = out.read_text(encoding="utf-8")
    avoidable = [o for o in escalated if o.escalation and kind_of(o.escalation) == AVOIDABLE]
    restricted = [o for o in escalated if o.escalation and kind_of(o.escalation) == RESTRICTED]
    assert f"| escalations | {len(escalated)} |" in md
    assert f"## Knowledge-base backlog ({len(avoidable)} avoidable)" in md
    for o in avoidable + restricted:
        assert o.escalation is not None and o.escalation.question in md
    if restricted:  # the sample's executive allowances, asked by someone who may not read them
        assert f"## In a document the asker may not read ({len(restricted)})" in md
        assert "Executive Allowances (finance/executive-allowances)" in md
    assert "unlabelled" not in md  # classify labelled every one
    assert out.with_suffix(".png").read_bytes()[:8] == PNG_SIGNATURE
