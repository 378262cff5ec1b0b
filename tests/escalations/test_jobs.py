"""bot/scheduler.py: one place registers every job; jobs are thin, guarded and idempotent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from slack_sdk.web.async_client import AsyncWebClient

from bot import scheduler as jobs
from bot.scheduler import build_context, post_weekly_digest, register_jobs
from bot.services import Services, open_services
from retrieval.embed import Embedder
from store.reports import EscalationReports
from tests.conftest import SAMPLE_ACCESS, make_settings
from tests.escalations.conftest import NOW, WEEK, Clock, Store, at, seed
from tests.escalations.seeded_week import seed_week
from tests.escalations.slack_files import FakeSlackWithFiles

ALL_JOBS = {"cairn.classify", "cairn.expiry", "cairn.digest", "cairn.digest_catch_up", "cairn.publish_due",
            "cairn.index_cleanup", "cairn.retention", "cairn.sources", "cairn.relays"}


@pytest.fixture
async def svc(tmp_path: Path, embedder: Embedder) -> AsyncIterator[Services]:
    settings = make_settings(tmp_path / "home", CAIRN_DIGEST_CHANNEL="C0LEADS", CAIRN_DIGEST_DAY="fri",
                             CAIRN_DIGEST_TIME="16:30", CAIRN_TIMEZONE="Asia/Dubai")
    async with open_services(settings, embedder=embedder) as services:
        yield services


def store_of(services: Services, tmp_path: Path) -> Store:
    return Store(services.db, services.conversations, EscalationReports(services.db, services.conversations), tmp_path)


async def test_register_jobs_in_one_place(svc: Services, slack_client: AsyncWebClient) -> None:
    scheduler = AsyncIOScheduler(timezone=UTC)
    register_jobs(scheduler, svc, slack_client=slack_client, clock=Clock(NOW))
    by_id = {job.id: job for job in scheduler.get_jobs()}
    assert set(by_id) == ALL_JOBS
    digest = by_id["cairn.digest"].trigger
    # Friday 16:30 in Dubai (UTC+4) after Monday 2 Feb 09:00 UTC
    assert digest.get_next_fire_time(None, NOW) == datetime(2026, 2, 6, 16, 30, tzinfo=ZoneInfo("Asia/Dubai"))
    assert by_id["cairn.classify"].trigger.interval == timedelta(minutes=5)
    assert by_id["cairn.digest_catch_up"].kwargs["catch_up"] is True
    assert all(asyncio.iscoroutinefunction(job.func) for job in by_id.values())
    # registering again on a running scheduler replaces the jobs by id, never duplicates them
    scheduler.start(paused=True)
    try:
        register_jobs(scheduler, svc, slack_client=slack_client, clock=Clock(NOW))
        assert len(scheduler.get_jobs()) == len(ALL_JOBS)
    finally:
        scheduler.shutdown(wait=False)


async def test_no_digest_job_without_slack(svc: Services) -> None:
    scheduler = AsyncIOScheduler(timezone=UTC)
    register_jobs(scheduler, svc)
    assert {job.id for job in scheduler.get_jobs()} == ALL_JOBS - {"cairn.digest", "cairn.digest_catch_up"}


async def test_jobs_run_in_the_scheduler(svc: Services, tmp_path: Path) -> None:
    await asyncio.to_thread(svc.embedder.encode_sentences, ["load the model before timing the job"])
    store = store_of(svc, tmp_path)
    esc = await seed(store, "sched", reason="below_score_floor", created_at=at(27),
                     question="How many days of annual leave do I get?")
    scheduler = AsyncIOScheduler(timezone=UTC)
    register_jobs(scheduler, svc)
    scheduler.start()
    try:
        scheduler.get_job("cairn.classify").modify(next_run_time=datetime.now(UTC))
        for _ in range(600):
            labelled = await svc.conversations.get_escalation(escalation_id=esc.escalation_id)
            if labelled is not None and labelled.topic:
                break
            await asyncio.sleep(0.05)
    finally:
        scheduler.shutdown(wait=False)
    assert labelled is not None and (labelled.kind, labelled.topic) == ("avoidable", "leave")


async def test_a_periodic_job_runs_once_a_period_across_replicas(svc: Services) -> None:
    runs: list[str] = []

    async def job(ctx: jobs.JobContext, *, who: str) -> str:
        runs.append(who)
        return who

    every = timedelta(minutes=5)
    clock = Clock(NOW)
    guarded = jobs.once_per_period(job, "classify", every)
    # Two replicas' schedulers firing in the same period (the claim across processes is the run claims'
    # own test: tests/store/test_claims_across_processes.py).
    first, second = build_context(svc, clock=clock), build_context(svc, clock=clock)
    assert await asyncio.gather(guarded(first, who="one"), guarded(second, who="two")) in (["one", None], [None, "two"])
    clock.now = NOW + every
    assert await guarded(second, who="two") == "two"  # the next period runs again
    clock.now = NOW + 3 * every
    assert await guarded(first, who="one") == "one"
    assert await svc.store.runs.get_run(run_key=f"classify:{int(NOW.timestamp() // 300)}") is None  # forgotten
    assert len(runs) == 3


async def test_weekly_digest_job_posts_last_week_once(tmp_path: Path, embedder: Embedder,
                                                      fake_slack: FakeSlackWithFiles,
                                                      slack_client: AsyncWebClient) -> None:
    settings = make_settings(tmp_path / "home", CAIRN_DIGEST_CHANNEL="C0LEADS")  # Monday 09:00 UTC
    async with open_services(settings, embedder=embedder) as services:
        await seed_week(store_of(services, tmp_path))
        clock = Clock(NOW + timedelta(minutes=2))
        ctx = build_context(services, slack_client=slack_client, clock=clock)
        [first] = await post_weekly_digest(ctx)
        assert first is not None and (first.week, first.status) == (WEEK, "posted")
        # the catch-up at start and a second trigger find it done
        assert [r.status for r in await post_weekly_digest(ctx, catch_up=True)] == ["already_posted"]
        clock.now = NOW + timedelta(days=3)
        assert [r.status for r in await post_weekly_digest(ctx)] == ["already_posted"]
        assert len(fake_slack.calls_to("chat.postMessage")) == 1
        # the digest job labelled the rows first
        unlabelled = await ctx.queries.unlabelled_escalations(max_attempts=3)
        assert unlabelled == []


async def test_catch_up_only_shortly_after_the_digest_time(tmp_path: Path, embedder: Embedder,
                                                           fake_slack: FakeSlackWithFiles,
                                                           slack_client: AsyncWebClient) -> None:
    settings = make_settings(tmp_path / "home", CAIRN_DIGEST_CHANNEL="C0LEADS")
    async with open_services(settings, embedder=embedder) as services:
        late = build_context(services, slack_client=slack_client, clock=Clock(NOW + timedelta(hours=30)))
        assert await post_weekly_digest(late, catch_up=True) == []
        soon = build_context(services, slack_client=slack_client, clock=Clock(NOW + timedelta(hours=3)))
        [result] = await post_weekly_digest(soon, catch_up=True)
        assert (result.week, result.status) == (WEEK, "posted")


async def test_a_failing_job_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(ctx: object) -> int:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="bot.scheduler"):
        assert await jobs._guarded(broken)(ctx=None) is None
    assert "scheduled job broken failed" in caplog.text


async def test_maintenance_jobs(svc: Services) -> None:
    ctx = build_context(svc, clock=Clock(NOW))
    assert await jobs.publish_due_versions(ctx) == []
    assert await jobs.clean_up_index(ctx) == 0
    assert await jobs.purge_traces(ctx) == 0


async def test_run_jobs_until_cancelled(svc: Services) -> None:
    task = asyncio.create_task(jobs.run_jobs(svc))
    await asyncio.sleep(0.1)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_bad_topics_file_fails_at_registration(tmp_path: Path, embedder: Embedder) -> None:
    from escalations.taxonomy import TaxonomyError

    bad = tmp_path / "topics.yml"
    bad.write_text("unclassified: no\n")
    async with open_services(make_settings(tmp_path / "home", CAIRN_TOPICS=bad), embedder=embedder) as services:
        with pytest.raises(TaxonomyError):
            register_jobs(AsyncIOScheduler(timezone=UTC), services)


async def test_each_tenant_gets_its_own_digest_in_its_own_channel(tmp_path: Path, embedder: Embedder,
                                                                  fake_slack: FakeSlackWithFiles,
                                                                  slack_client: AsyncWebClient) -> None:
    access = tmp_path / "access.yml"
    access.write_text(SAMPLE_ACCESS.read_text().replace(
        "  harbor:               # a second tenant, for cross-tenant tests\n    groups: [everyone, customer]",
        "  harbor:               # a second tenant, for cross-tenant tests\n    groups: [everyone, customer]\n"
        "    digest_channel: C0HARBORLEADS"))
    settings = make_settings(tmp_path / "home", CAIRN_DIGEST_CHANNEL="C0LEADS", CAIRN_ACCESS_FILE=access)
    async with open_services(settings, embedder=embedder) as services:
        store = Store(services.db, services.conversations, services.store.reports, tmp_path)
        await seed(store, "lark", reason="below_score_floor", created_at=at(27), question="Larkspur hotel cap?")
        harbor = await seed(store, "harb", reason="below_score_floor", created_at=at(28), question="Harbor dock fees?")
        await services.db.execute("UPDATE escalations SET tenant_id='harbor' WHERE escalation_id=?",
                                  (harbor.escalation_id,))
        ctx = build_context(services, slack_client=slack_client, clock=Clock(NOW))
        results = await post_weekly_digest(ctx)
    assert sorted(r.channel for r in results) == ["C0HARBORLEADS", "C0LEADS"]
    posted = {c.channel: c.text for c in fake_slack.calls_to("chat.postMessage")}
    assert "Larkspur hotel cap?" in posted["C0LEADS"] and "Harbor dock fees?" not in posted["C0LEADS"]
    assert "Harbor dock fees?" in posted["C0HARBORLEADS"] and "Larkspur hotel cap?" not in posted["C0HARBORLEADS"]
