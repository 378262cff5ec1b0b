"""Posting the digest: once per week however often it is triggered; a crash or a Slack failure retries."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, timedelta

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

import bot.slack.digest_post as publish
from bot.slack.digest_post import post_digest, run_key
from escalations.chart import PNG_SIGNATURE, TrendSeries
from tests.escalations.conftest import NOW, WEEK, Store
from tests.escalations.seeded_week import TREND_AVOIDABLE, TREND_GENUINE, TREND_WEEKS, seed_week
from tests.escalations.slack_files import FakeSlackWithFiles


async def post(store: Store, client: AsyncWebClient, **kwargs: object) -> publish.PostResult:
    args: dict = {"reports": store.queries, "runs": store.runs, "client": client, "channel": "C0LEADS", "week": WEEK,
                  "timezone": "UTC", "now": NOW}
    args.update(kwargs)
    return await post_digest(**args)


async def test_posts_the_digest_and_its_chart(store: Store, fake_slack: FakeSlackWithFiles,
                                              slack_client: AsyncWebClient,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    await seed_week(store)
    plotted: list[TrendSeries] = []
    real = publish.render_chart

    def spy(series: TrendSeries, tz, target=None):  # type: ignore[no-untyped-def]
        plotted.append(series)
        return real(series, tz, target)

    monkeypatch.setattr(publish, "render_chart", spy)
    result = await post(store, slack_client)
    assert result.status == "posted" and result.channel == "C0LEADS" and result.chart_uploaded
    [message] = fake_slack.calls_to("chat.postMessage")
    assert message.channel == "C0LEADS"
    assert "Cairn escalation digest — 2026-W05" in message.text
    assert "*6* escalations (▲1 from 5): *2* genuine (no change), *3* avoidable (no change)" in message.text
    assert "Median time to first admin reply: *2.0 h*" in message.text
    # backlog links come from chat.getPermalink
    assert "<https://larkspur.slack.com/archives/C0ESC/p1700000001000100|thread>" in message.text
    assert len(fake_slack.calls_to("chat.getPermalink")) == 2  # e1 and e3 have threads; e2 came from the CLI
    # the series handed to the plot is the expected weekly counts
    assert plotted == [TrendSeries(weeks=TREND_WEEKS, genuine=TREND_GENUINE, avoidable=TREND_AVOIDABLE)]
    [upload] = list(fake_slack.uploads.values())
    assert upload[:8] == PNG_SIGNATURE and len(upload) > 10_000
    assert fake_slack.shared == [{"id": "F0001", "channel": "C0LEADS",
                                  "title": "Escalations per week, genuine vs avoidable (2025-W50 to 2026-W05)"}]
    run = await store.runs.get_run(run_key=run_key(WEEK))
    assert run is not None and run.state == "done"
    assert run.detail["ts"] == result.ts and run.detail["chart_uploaded"] is True


async def test_posting_twice_posts_once(store: Store, fake_slack: FakeSlackWithFiles,
                                        slack_client: AsyncWebClient) -> None:
    await seed_week(store)
    first = await post(store, slack_client)
    second = await post(store, slack_client, now=NOW + timedelta(days=1))
    assert (first.status, second.status) == ("posted", "already_posted")
    assert second.ts == first.ts
    assert len(fake_slack.calls_to("chat.postMessage")) == 1 and len(fake_slack.uploads) == 1


async def test_a_double_trigger_at_the_same_moment_posts_once(store: Store, fake_slack: FakeSlackWithFiles,
                                                              slack_client: AsyncWebClient) -> None:
    await seed_week(store)
    results = await asyncio.gather(*(post(store, slack_client) for _ in range(3)))
    assert sorted(r.status for r in results) == ["in_progress", "in_progress", "posted"]
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


async def test_a_crash_between_claim_and_post_is_recovered_once(store: Store, fake_slack: FakeSlackWithFiles,
                                                                slack_client: AsyncWebClient) -> None:
    await seed_week(store)
    dead = await store.runs.claim_run(run_key=run_key(WEEK), now=NOW, stale_after=timedelta(minutes=15))
    assert dead is not None  # a process claimed the week, then died before posting
    soon = await post(store, slack_client, now=NOW + timedelta(minutes=5))
    assert soon.status == "in_progress" and not fake_slack.calls_to("chat.postMessage")
    later = await post(store, slack_client, now=NOW + timedelta(minutes=16))
    assert later.status == "posted"
    again = await post(store, slack_client, now=NOW + timedelta(minutes=30))
    assert again.status == "already_posted"
    assert len(fake_slack.calls_to("chat.postMessage")) == 1
    # the dead process's claim is gone: it cannot mark the run as its own
    assert not await store.runs.mark_run(dead, state="done", now=NOW)


async def test_a_slack_failure_releases_the_claim(store: Store, fake_slack: FakeSlackWithFiles,
                                                  slack_client: AsyncWebClient) -> None:
    await seed_week(store)
    fake_slack.fail_next("chat.postMessage", error="channel_not_found")
    with pytest.raises(SlackApiError):
        await post(store, slack_client)
    assert await store.runs.get_run(run_key=run_key(WEEK)) is None
    assert (await post(store, slack_client)).status == "posted"


async def test_a_failed_chart_upload_does_not_repost(store: Store, fake_slack: FakeSlackWithFiles,
                                                     slack_client: AsyncWebClient) -> None:
    await seed_week(store)
    fake_slack.fail_next("files.getUploadURLExternal", error="not_allowed_token_type")
    result = await post(store, slack_client)
    assert result.status == "posted" and not result.chart_uploaded
    assert (await post(store, slack_client)).status == "already_posted"
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


async def test_force_posts_again(store: Store, fake_slack: FakeSlackWithFiles, slack_client: AsyncWebClient) -> None:
    await post(store, slack_client)
    assert (await post(store, slack_client, force=True)).status == "posted"
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    row = await store.runs.get_run(run_key=run_key(WEEK))
    assert row is not None and json.loads(json.dumps(row.detail))["state"] == "done"


def test_run_key() -> None:
    assert run_key("2026-W05") == "digest:2026-W05"
    assert NOW.tzinfo is UTC
