"""The digest of a seeded week matches the numbers worked out by hand in seeded_week.py."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from bot.slack.digest_view import render_slack
from escalations.digest import (
    BACKLOG_SHOWN,
    KindCounts,
    TopicCount,
    build_digest,
    change,
    duration,
    render_markdown,
)
from escalations.weeks import (
    WeekError,
    due_week,
    parse_week,
    recent_weeks,
    week_bounds,
    week_label,
)
from tests.escalations.conftest import NOW, WEEK, Store, at, seed
from tests.escalations.seeded_week import TREND_AVOIDABLE, TREND_GENUINE, TREND_WEEKS, seed_week


async def test_seeded_week_numbers(store: Store) -> None:
    ids = await seed_week(store)
    d = await build_digest(store.queries, week=WEEK, timezone="UTC")
    assert (d.start, d.end) == (datetime(2026, 1, 26, tzinfo=UTC), datetime(2026, 2, 2, tzinfo=UTC))
    assert d.counts == KindCounts(genuine=2, avoidable=3, other=1) and d.counts.total == 6
    assert d.previous == KindCounts(genuine=2, avoidable=3, other=0)
    assert d.median_first_reply_s == 7200 and d.replied == 3
    assert d.expired == 2
    assert d.top_topics == [TopicCount("travel", 2, 2), TopicCount("expenses", 1, 1),
                            TopicCount("it & equipment", 1, 0), TopicCount("leave", 1, 0),
                            TopicCount("unlabelled", 1, 0)]
    assert (d.feedback.down, d.feedback.up) == (2, 1)
    assert d.feedback.down_questions == ["How do I book a hotel in Dubai?"]
    assert (d.trend.weeks, d.trend.genuine, d.trend.avoidable) == (TREND_WEEKS, TREND_GENUINE, TREND_AVOIDABLE)

    assert [b.escalation_id for b in d.backlog] == [ids["e1"], ids["e2"], ids["e3"]]
    e1, e2, e3 = d.backlog
    assert (e1.question, e1.reason, e1.topic) == ("What is the nightly hotel limit in London?", "below_score_floor",
                                                  "travel")
    assert (e1.chunk_id, e1.chunk_heading, e1.score) == ("larkspur:finance/travel:v1:0003", "Hotels > Boston", 0.31)
    assert e1.link == "slack://channel?id=C0ESC&message=1700000001.000100"
    assert (e2.chunk_id, e2.score, e2.link) == (None, None, None)
    assert (e3.reason, e3.score) == ("conflicting_sources", 0.82)


async def test_permalinks_when_slack_gives_them(store: Store) -> None:
    await seed_week(store)

    async def link_for(channel: str, ts: str) -> str | None:
        if ts.endswith("003.000100"):
            raise RuntimeError("slack is down")
        return f"https://larkspur.slack.com/archives/{channel}/p{ts.replace('.', '')}"

    d = await build_digest(store.queries, week=WEEK, timezone="UTC", link_for=link_for)
    assert d.backlog[0].link == "https://larkspur.slack.com/archives/C0ESC/p1700000001000100"
    assert d.backlog[2].link == "slack://channel?id=C0ESC&message=1700000003.000100"  # fallback


async def test_weeks_follow_the_digest_timezone(store: Store) -> None:
    await seed_week(store)
    d = await build_digest(store.queries, week=WEEK, timezone="Asia/Dubai")
    # Dubai is UTC+4: the week runs Sun 25 Jan 20:00 UTC – Sun 1 Feb 20:00 UTC, so e12 and e8 move in
    # and e5 (Sun 23:59:59 UTC = Mon 03:59 in Dubai) moves out.
    assert (d.start, d.end) == (datetime(2026, 1, 25, 20, tzinfo=UTC), datetime(2026, 2, 1, 20, tzinfo=UTC))
    assert d.counts == KindCounts(genuine=2, avoidable=4, other=1)


async def test_empty_week_and_previous(store: Store) -> None:
    d = await build_digest(store.queries, week="2026-W10", timezone="UTC")
    assert d.counts.total == 0 and d.median_first_reply_s is None and d.backlog == []
    text = render_markdown(d)
    assert "Nothing avoidable this week." in text and "no replies yet" in text


async def test_markdown_shows_what_leads_need(store: Store) -> None:
    await seed_week(store)
    d = await build_digest(store.queries, week=WEEK, timezone="UTC")
    md = render_markdown(d, chart_file="digest.png")
    assert md.startswith("# Cairn escalation digest — 2026-W05")
    assert "_Mon 26 Jan – Sun 01 Feb 2026 (UTC)_" in md
    assert "| escalations | 6 | 5 | ▲1 from 5 |" in md
    assert "| genuine (no answer existed) | 2 (33%) | 2 | no change |" in md
    assert "| **avoidable** (knowledge base to fix) | **3** (50%) | 3 | no change |" in md
    assert "**Median time to first admin reply:** 2.0 h (over 3 answered)" in md
    assert "**Expired without a reply:** 2" in md and "**👎 feedback on answers:** 2 (👍 1)" in md
    assert "![Genuine vs avoidable escalations, last 8 weeks](digest.png)" in md
    assert "| travel | 2 | 2 |" in md
    assert ("1. **What is the nightly hotel limit in London?** — `below_score_floor`, topic travel, "
            "[thread](slack://channel?id=C0ESC&message=1700000001.000100)") in md
    assert ("best passage it had: Travel and Expenses Policy › Hotels > Boston "
            "(`larkspur:finance/travel:v1:0003`, score 0.31)") in md
    assert "(no Slack thread)" in md  # e2 came from the CLI


async def test_slack_blocks_are_valid_sizes(store: Store) -> None:
    await seed_week(store)
    for i in range(BACKLOG_SHOWN + 5):
        await seed(store, f"bulk{i}", reason="below_score_floor", created_at=at(31, 10, i),
                   question="What is the <policy> & rule for " + "x" * 150, channel="C0ESC", thread_ts=f"17.{i}")
    d = await build_digest(store.queries, week=WEEK, timezone="UTC")
    text, blocks = render_slack(d)
    assert text.startswith("Cairn escalation digest 2026-W05: 31 escalations, 2 genuine, 28 avoidable")
    assert len(blocks) <= 50
    for block in blocks:
        body = block.get("text", {}).get("text", "")
        assert len(body) <= 3000
    joined = "\n".join(str(b) for b in blocks)
    assert "&lt;policy&gt; &amp; rule" in joined and "<policy>" not in joined
    assert "…and 8 more." in joined
    assert "<slack://channel?id=C0ESC&message=1700000001.000100|thread>" in joined


def test_formatting_helpers() -> None:
    assert change(5, 3) == "▲2 from 3" and change(1, 4) == "▼3 from 4" and change(2, 2) == "no change"
    assert duration(None) == "no replies yet" and duration(30) == "under 1 min" and duration(90) == "2 min" and duration(1800) == "30 min"
    assert duration(7200) == "2.0 h" and duration(3 * 86400) == "3.0 days"


def test_weeks() -> None:
    assert parse_week("2026-W05") == (2026, 5)
    for bad in ("2026-5", "2026-W5", "2025-W53", "W05-2026"):
        with pytest.raises(WeekError):
            parse_week(bad)
    assert week_label(datetime(2025, 12, 29, tzinfo=UTC), UTC) == "2026-W01"
    assert recent_weeks(WEEK, 8) == TREND_WEEKS
    assert week_bounds("2026-W01", UTC)[0] == datetime(2025, 12, 29, tzinfo=UTC)
    # Monday 09:00 posts last week; Monday 08:59 still belongs to the previous digest
    assert due_week(NOW, UTC, day="mon", at="09:00") == (WEEK, NOW)
    assert due_week(at(2, 8, 59, month=2), UTC, day="mon", at="09:00")[0] == "2026-W04"
    assert due_week(at(4, 10, month=2), UTC, day="mon", at="09:00")[0] == WEEK
    friday = due_week(at(6, 17, month=2), ZoneInfo("America/New_York"), day="fri", at="12:00")
    assert friday == (WEEK, datetime(2026, 2, 6, 12, tzinfo=ZoneInfo("America/New_York")))
