"""Posting the digest: once per week however often it is triggered; a crash or a Slack failure retries."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

import bot.slack.digest_post as publish
from bot.slack.digest_post import post_digest, run_key
from escalations.chart import PNG_SIGNATURE, TrendSeries
from store.run_claims import RunClaim, RunClaims
from tests.escalations.conftest import NOW, WEEK, Store
from tests.escalations.seeded_week import TREND_AVOIDABLE, TREND_GENUINE, TREND_WEEKS, seed_week
from tests.escalations.slack_files import FakeSlackWithFiles

HISTORY_SCOPES = {"channels:history", "groups:history", "im:history", "mpim:history"}


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
    # what a process taking over after a crash looks for in the channel
    assert message.params["metadata"] == {"event_type": "cairn_digest",
                                          "event_payload": {"week": WEEK, "tenant": "", "token": run.detail["token"]}}


class DiesBeforeRecordingThePost(RunClaims):
    """The process is killed after Slack accepted chat.postMessage, before the `posted` row is written."""

    async def mark_run(self, claim: RunClaim, *, state: str, now: datetime, **extra: object) -> bool:
        if state == "posted":
            raise SystemExit("killed")
        return await super().mark_run(claim, state=state, now=now, **extra)


async def _post_then_die(store: Store, client: AsyncWebClient) -> str:
    with pytest.raises(SystemExit):
        await post(store, client, runs=DiesBeforeRecordingThePost(store.db))
    run = await store.runs.get_run(run_key=run_key(WEEK))
    assert run is not None and run.state == "claimed"  # the week looks unposted
    return run.detail["token"]


async def test_a_crash_after_slack_accepted_the_post_does_not_post_it_twice(
        store: Store, fake_slack: FakeSlackWithFiles, slack_client: AsyncWebClient) -> None:
    fake_slack.ts_base = int(NOW.timestamp())  # messages are posted now, after the claim
    await seed_week(store)
    await _post_then_die(store, slack_client)
    [first] = list(fake_slack.messages["C0LEADS"])
    assert not fake_slack.uploads
    # the channel goes on: other messages, and another week's digest, land after it (more than a page)
    for n in range(230):
        await slack_client.chat_postMessage(channel="C0LEADS", text=f"chatter {n}")
    await slack_client.chat_postMessage(channel="C0LEADS", text="older digest", metadata={
        "event_type": "cairn_digest", "event_payload": {"week": "2026-W04", "tenant": "", "token": "t-old"}})

    later = await post(store, slack_client, now=NOW + timedelta(minutes=16))
    assert (later.status, later.ts, later.channel) == ("already_posted", first, "C0LEADS")
    assert len(fake_slack.calls_to("chat.postMessage", lambda c: "Cairn escalation digest" in c.text)) == 1
    [history, *more] = fake_slack.calls_to("conversations.history")
    assert more and history.params["include_all_metadata"] in ("1", "true", True)
    assert float(history.params["oldest"]) < NOW.timestamp()  # from before the first claim
    assert later.chart_uploaded and len(fake_slack.uploads) == 1  # the chart the dead process never sent
    run = await store.runs.get_run(run_key=run_key(WEEK))
    assert run is not None and (run.state, run.detail["ts"]) == ("done", first)
    assert (await post(store, slack_client, now=NOW + timedelta(hours=1))).status == "already_posted"
    assert len(fake_slack.uploads) == 1


async def test_history_that_cannot_be_read_means_posting_again_with_a_warning(
        store: Store, fake_slack: FakeSlackWithFiles, slack_client: AsyncWebClient,
        caplog: pytest.LogCaptureFixture) -> None:
    fake_slack.ts_base = int(NOW.timestamp())
    fake_slack.scopes = fake_slack.scopes - HISTORY_SCOPES  # installed without the history scopes
    await seed_week(store)
    await _post_then_die(store, slack_client)
    with caplog.at_level(logging.WARNING, logger="bot.slack.digest_post"):
        later = await post(store, slack_client, now=NOW + timedelta(minutes=16))
    assert later.status == "posted"  # at-least-once: a duplicate rather than no digest
    assert len(fake_slack.calls_to("chat.postMessage")) == 2
    assert any("cannot read C0LEADS's history" in r.getMessage() and "missing_scope" in r.getMessage()
               and "channels:history" in r.getMessage() for r in caplog.records)


class AnswerLost:
    """A client whose chat.postMessage reaches Slack but whose answer never comes back."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def chat_postMessage(self, **kwargs: Any) -> Any:
        await self._client.chat_postMessage(**kwargs)
        raise TimeoutError


async def test_a_post_whose_answer_never_came_is_checked_by_the_next_trigger(
        store: Store, fake_slack: FakeSlackWithFiles, slack_client: AsyncWebClient) -> None:
    fake_slack.ts_base = int(NOW.timestamp())
    await seed_week(store)
    with pytest.raises(TimeoutError):
        await post(store, AnswerLost(slack_client))  # type: ignore[arg-type]
    [first] = list(fake_slack.messages["C0LEADS"])
    # not released (a later trigger would post blindly) and not left for STALE_CLAIM: taken over at once
    retry = await post(store, slack_client, now=NOW + timedelta(minutes=1))
    assert (retry.status, retry.ts) == ("already_posted", first)
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


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
