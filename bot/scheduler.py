"""Scheduled jobs, registered in one place: `register_jobs(scheduler, services, slack_client=…, clock=…)`.

Each job is a short async function that calls a service and returns what it did; `_guarded` catches
and logs any exception so a failing job never disturbs the bot or the scheduler. All of them are
idempotent, so a restart, an overlapping trigger or a second process changes nothing twice:

| id                    | when                                         | does |
|-----------------------|----------------------------------------------|------|
| cairn.classify        | every CAIRN_CLASSIFY_MINUTES (5), one replica | label unlabelled escalations (kind, topic) |
| cairn.expiry          | every minute, one replica                    | reminder at half the deadline, then expire |
| cairn.relays          | every minute                                 | show askers the admin replies never shown |
| cairn.digest          | CAIRN_DIGEST_DAY CAIRN_DIGEST_TIME, CAIRN_TIMEZONE | post last week's digest (once per week) |
| cairn.digest_catch_up | once, a minute after start                   | post the due digest if its time passed < 24 h ago |
| cairn.publish_due     | every 5 minutes                              | future-effective versions become current |
| cairn.index_cleanup   | hourly                                       | retry removing vectors of retired versions |
| cairn.retention       | daily 03:30 (CAIRN_TIMEZONE)                 | purge turn traces older than the retention |
| cairn.sources         | every minute                                 | sync the sources whose `--every` has come round |

"One replica": of several `cairn serve` on one database, the first to claim the period runs it
(`once_per_period`); the digest is claimed per week, a relay per reply, a source's sync per run.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services, Store, build_topic_classifier, escalation_desk
from bot.settings import Settings
from bot.slack.app import build_web_client
from bot.slack.digest_post import PostResult, post_digest
from bot.slack.escalation_posting import EscalationThreads
from escalations.classifier import ClassifyReport, TopicClassifier, classify_pending, document_taxonomy
from escalations.expiry import ExpiryReport, expire_due, send_reminders
from escalations.notifier import Notifier
from escalations.taxonomy import load_taxonomy
from escalations.weeks import digest_clock, digest_day_name, due_week
from retrieval.sync import SyncReport, SyncRunner
from store.access import AccessPolicy
from store.db import utcnow
from store.reports import EscalationReports
from store.retention import purge_old_turns

log = logging.getLogger(__name__)

EXPIRY_EVERY = timedelta(minutes=1)
RELAY_EVERY = timedelta(minutes=1)
PUBLISH_EVERY = timedelta(minutes=5)
SOURCES_EVERY = timedelta(minutes=1)
DIGEST_CATCH_UP = timedelta(hours=24)

Clock = Callable[[], datetime]
T = TypeVar("T")


@dataclass
class JobContext:
    """What the jobs share; built once by register_jobs (also handy for calling a job directly)."""

    services: Services
    queries: EscalationReports
    classifier: TopicClassifier
    slack: AsyncWebClient | None
    notifier: Notifier | None
    clock: Clock


def build_context(services: Services, *, slack_client: AsyncWebClient | None = None,
                  clock: Clock = utcnow) -> JobContext:
    settings = services.settings
    taxonomy = load_taxonomy(settings.topics_file)  # a bad topics file fails at start, not every 5 minutes
    notifier = EscalationThreads(client=slack_client, services=services) if slack_client is not None else None
    return JobContext(services=services, queries=services.store.reports,
                      classifier=build_topic_classifier(settings, embedder=services.embedder, taxonomy=taxonomy),
                      slack=slack_client, notifier=notifier, clock=clock)


def _guarded(job: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T | None]]:
    @functools.wraps(job)
    async def run(*args: Any, **kwargs: Any) -> T | None:
        try:
            return await job(*args, **kwargs)
        except Exception:
            log.exception("scheduled job %s failed", job.__name__)
            return None

    return run


def once_per_period(job: Callable[..., Awaitable[T]], name: str, every: timedelta
                    ) -> Callable[..., Awaitable[T | None]]:
    """`job`, run by one replica per period of `every`: each replica's scheduler fires it, and the first
    to claim the period's run key ("classify:<period>") runs it, the others skip that period (replicas
    on one database would otherwise label the same escalations, or post the same reminder, at once).
    A run that fails or dies is not retried within its period; the next period's run takes up its work."""
    @functools.wraps(job)
    async def run(ctx: JobContext, **kwargs: Any) -> T | None:
        now = ctx.clock()
        period = int(now.timestamp() // every.total_seconds())
        claims = ctx.services.store.runs
        claim = await claims.claim_run(run_key=f"{name}:{period}", now=now, stale_after=every)
        if claim is None:
            return None
        await claims.forget_runs_before(prefix=f"{name}:", before=now - 2 * every)  # past periods' keys
        try:
            return await job(ctx, **kwargs)
        finally:
            await claims.mark_run(claim, state="done", now=ctx.clock())

    return run


# -- the jobs -----------------------------------------------------------------------------------------


async def classify_escalations(ctx: JobContext) -> ClassifyReport:
    settings, catalog = ctx.services.settings, ctx.services.catalog
    report = await classify_pending(queries=ctx.queries, classifier=ctx.classifier,
                                    max_attempts=settings.label_max_attempts,
                                    topics_for=None if settings.topics_file else
                                    functools.partial(document_taxonomy, catalog))
    if report.labelled:
        log.info("classifier labelled %d escalation(s) (%d unclassified)", report.labelled, report.unclassified)
    return report


async def expire_escalations(ctx: JobContext) -> ExpiryReport:
    now = ctx.clock()
    report = await send_reminders(queries=ctx.queries, notifier=ctx.notifier, now=now)
    return await expire_due(queries=ctx.queries, runner=ctx.services.runner, notifier=ctx.notifier, now=now,
                            deadline_hours=ctx.services.settings.escalation_deadline_hours, report=report)


def digest_targets(settings: Settings, access: AccessPolicy) -> list[tuple[str, str]]:
    """(tenant, channel) for every tenant whose leads get a weekly digest: each tenant's own channel from
    the access file; CAIRN_DIGEST_CHANNEL stands in for the default tenant only."""
    return [(tenant, channel) for tenant in sorted(access.tenants)
            if (channel := access.digest_channel_for(tenant, fallback=settings.digest_channel))]


async def post_weekly_digest(ctx: JobContext, *, catch_up: bool = False) -> list[PostResult]:
    """Last week's digest, one per tenant, each to that tenant's channel (never one tenant's to another)."""
    settings = ctx.services.settings
    targets = digest_targets(settings, ctx.services.access)
    if ctx.slack is None or not targets:
        return []
    now = ctx.clock()
    week, moment = due_week(now, ZoneInfo(settings.timezone), day=settings.digest_day, at=settings.digest_time)
    if catch_up and now - moment > DIGEST_CATCH_UP:
        return []
    await _guarded(classify_escalations)(ctx)  # fresh topics for the digest; failure is not fatal
    results = []
    for tenant, channel in targets:
        try:
            result = await post_digest(reports=ctx.queries, runs=ctx.services.store.runs, client=ctx.slack,
                                       channel=channel, week=week, timezone=settings.timezone, now=now,
                                       tenant_id=tenant, default_tenant=ctx.services.access.default_tenant)
        except Exception:  # one tenant's refusal (not_in_channel…) must not cost the others their digest
            log.exception("weekly digest %s for %s failed", week, tenant)
            continue
        log.info("weekly digest %s for %s: %s", week, tenant, result.status)
        results.append(result)
    return results


async def post_digest_now(settings: Settings, store: Store, access: AccessPolicy, *, tenant: str, channel: str,
                          week: str, now: datetime, force: bool = False) -> PostResult:
    """`cairn digest --post`: the same claimed, once-per-week post as the scheduled job, from a terminal."""
    return await post_digest(reports=store.reports, runs=store.runs, client=build_web_client(settings),
                             channel=channel, week=week, timezone=settings.timezone, now=now, force=force,
                             tenant_id=tenant, default_tenant=access.default_tenant)


async def relay_pending_replies(ctx: JobContext) -> list[str]:
    """Admins' replies an asker was never shown (Slack refused, or a restart cut in): shown now, once."""
    if ctx.notifier is None:
        return []
    relayed = await escalation_desk(ctx.services, ctx.notifier).relay_pending(now=ctx.clock())
    if relayed:
        log.info("relayed %d pending admin repl(ies)", len(relayed))
    return relayed


async def publish_due_versions(ctx: JobContext) -> list[str]:
    published = await ctx.services.ingestor.publish_due(now=ctx.clock())
    if published:
        log.info("published by date: %s", ", ".join(published))
    return published


async def clean_up_index(ctx: JobContext) -> int:
    return await ctx.services.ingestor.cleanup()


async def sync_due_sources(ctx: JobContext) -> list[SyncReport]:
    """Sources whose schedule has come round, one after another. This process holds the index, but the
    ingestion worker runs the queued jobs (so their rows show progress as any upload's do)."""
    services = ctx.services
    sources = services.store.sources
    runner = SyncRunner(sources=sources, submitter=services.ingestor.submitter, catalog=services.catalog,
                        jobs=services.jobs, ingestor=services.ingestor, run_jobs=False)
    reports = []
    for source in await sources.due(now=ctx.clock()):
        report = await runner.run(source)
        log.info("source %s synced: %s %s", source.location, report.status, report.counts)
        reports.append(report)
    return reports


async def purge_traces(ctx: JobContext) -> int:
    return await purge_old_turns(ctx.services.db, older_than_days=ctx.services.settings.trace_retention_days,
                                 now=ctx.clock())


# -- registration -------------------------------------------------------------------------------------


def register_jobs(scheduler: Any, services: Services, *, slack_client: AsyncWebClient | None = None,
                  clock: Clock = utcnow) -> JobContext:
    """Add every Cairn job to an APScheduler 3 scheduler (AsyncIOScheduler); returns their context."""
    settings = services.settings
    tz = ZoneInfo(settings.timezone)
    ctx = build_context(services, slack_client=slack_client, clock=clock)
    common = {"kwargs": {"ctx": ctx}, "replace_existing": True, "max_instances": 1, "coalesce": True}

    def add(job: Callable[..., Awaitable[Any]], trigger: Any, job_id: str, **extra: Any) -> None:
        scheduler.add_job(_guarded(job), trigger, id=job_id, name=job_id, **{**common, **extra})

    classify_every = timedelta(minutes=settings.classify_minutes)
    add(once_per_period(classify_escalations, "classify", classify_every),
        IntervalTrigger(seconds=classify_every.total_seconds()), "cairn.classify", misfire_grace_time=None)
    add(once_per_period(expire_escalations, "expiry", EXPIRY_EVERY),
        IntervalTrigger(seconds=EXPIRY_EVERY.total_seconds()), "cairn.expiry", misfire_grace_time=None)
    if slack_client is not None and digest_targets(settings, services.access):
        hour, minute = digest_clock(settings.digest_time)
        add(post_weekly_digest, CronTrigger(day_of_week=digest_day_name(settings.digest_day), hour=hour,
                                            minute=minute, timezone=tz), "cairn.digest", misfire_grace_time=3600)
        add(post_weekly_digest, DateTrigger(run_date=clock() + timedelta(minutes=1)), "cairn.digest_catch_up",
            kwargs={"ctx": ctx, "catch_up": True}, misfire_grace_time=None)
    else:
        log.info("weekly digest not scheduled: it needs a Slack client and a digest channel (CAIRN_DIGEST_CHANNEL "
                 "or a tenant's digest_channel in the access file)")
    add(relay_pending_replies, IntervalTrigger(seconds=RELAY_EVERY.total_seconds()), "cairn.relays",
        misfire_grace_time=None)
    add(publish_due_versions, IntervalTrigger(seconds=PUBLISH_EVERY.total_seconds()), "cairn.publish_due",
        misfire_grace_time=None)
    add(clean_up_index, IntervalTrigger(hours=1), "cairn.index_cleanup", misfire_grace_time=None)
    add(purge_traces, CronTrigger(hour=3, minute=30, timezone=tz), "cairn.retention", misfire_grace_time=3600)
    add(sync_due_sources, IntervalTrigger(seconds=SOURCES_EVERY.total_seconds()), "cairn.sources",
        misfire_grace_time=None)
    return ctx


async def run_jobs(services: Services, *, slack_client: AsyncWebClient | None = None,
                   clock: Clock = utcnow) -> None:
    """Run the scheduler until cancelled (a task of `cairn serve`); running jobs are cancelled with it."""
    scheduler = AsyncIOScheduler(timezone=ZoneInfo(services.settings.timezone))
    register_jobs(scheduler, services, slack_client=slack_client, clock=clock)
    scheduler.start()
    log.info("scheduled jobs: %s", ", ".join(job.id for job in scheduler.get_jobs()))
    try:
        await asyncio.Event().wait()
    finally:
        scheduler.shutdown(wait=False)
        await asyncio.sleep(0)  # let the cancelled jobs unwind before the services close
