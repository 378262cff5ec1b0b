"""`cairn classify` and `cairn digest`: escalation analytics from a terminal.

Both open only the SQLite database (never the index), so they work while `cairn serve` holds it.
`cairn digest --post` claims the same `digest:{week}` run as the scheduled job: whichever comes
first posts, the other reports that it was already posted (`--force` posts again on purpose).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.cli.common import CommandError, emit_json
from bot.services import build_topic_classifier, open_store
from bot.settings import Settings
from escalations.digest import build_digest, render_markdown
from escalations.taxonomy import TaxonomyError, load_taxonomy
from escalations.weeks import WeekError, parse_week, shift_week, week_label
from store.access import AccessFileError, AccessPolicy
from store.db import utcnow


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("classify", help="label unlabelled escalations once (genuine/avoidable and a topic)",
                       description="Run the escalation classifier once over every unlabelled escalation and "
                                   "print the counts. Uses CAIRN_CHAT_MODEL when set, else the bundled "
                                   "embedding model; topics are the tenant's document titles, or CAIRN_TOPICS "
                                   "when it names a topics file.")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=classify)

    p = sub.add_parser("digest", help="the weekly escalation digest: print it, write it, or post it",
                       description="Build the digest of one ISO week (default: the week so far in "
                                   "CAIRN_TIMEZONE, and it says so; with --post, the last complete week, as the "
                                   "scheduled digest). Without --post or --out, print the Markdown.")
    p.add_argument("--week", metavar="YYYY-Www", help="ISO week, e.g. 2026-W05 (the current week: so far)")
    p.add_argument("--tenant", help="whose escalations (default: the access file's default tenant); each "
                                    "tenant's digest goes to its own channel")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--post", action="store_true",
                       help="post to CAIRN_DIGEST_CHANNEL through the Slack Web API (at most once per week)")
    where.add_argument("--out", type=Path, metavar="FILE",
                       help="write the Markdown to FILE and the chart to FILE with a .png suffix")
    p.add_argument("--force", action="store_true", help="with --post: post even if this week was posted")
    p.add_argument("--json", action="store_true", help="print the digest's data as one JSON object")
    p.set_defaults(handler=digest)


def _zone(settings: Settings) -> ZoneInfo:
    try:
        return ZoneInfo(settings.timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise CommandError(f"CAIRN_TIMEZONE={settings.timezone!r} is not a known timezone") from exc


async def classify(args: argparse.Namespace, settings: Settings) -> int:
    import functools

    from escalations.classifier import classify_pending, document_taxonomy

    try:
        taxonomy = load_taxonomy(settings.topics_file)
    except TaxonomyError as exc:
        raise CommandError(str(exc)) from exc
    embedder = None
    if not settings.chat_model or "llm" in settings.paused_kinds:
        from bot.services import shared_embedder

        embedder = shared_embedder(settings)
    classifier = build_topic_classifier(settings, embedder=embedder, taxonomy=taxonomy)
    async with open_store(settings) as store:
        report = await classify_pending(queries=store.reports, classifier=classifier,
                                        max_attempts=settings.label_max_attempts, limit=10_000,
                                        topics_for=None if settings.topics_file else
                                        functools.partial(document_taxonomy, store.catalog))
    if args.json:
        emit_json(report.as_json())
        return 0
    if not report.labelled:
        print("nothing to label: every escalation already has a label")
        return 0
    kinds = ", ".join(f"{k} {n}" for k, n in report.kinds.most_common())
    topics = ", ".join(f"{t} {n}" for t, n in report.topics.most_common())
    print(f"labelled {report.labelled} escalation(s) with the {report.classifier} classifier")
    print(f"  kinds:  {kinds}")
    print(f"  topics: {topics}")
    if report.unclassified:
        print(f"  {report.unclassified} left 'unclassified' (tried again next run, up to "
              f"{settings.label_max_attempts} attempts)", file=sys.stderr)
    return 0


async def digest(args: argparse.Namespace, settings: Settings) -> int:
    tz = _zone(settings)
    now: datetime = utcnow()
    try:
        # Printing or writing it, the week so far (a new install sees its first days); posting, the last
        # complete week, the one the scheduled digest claims.
        current = week_label(now, tz)
        week = args.week.strip() if args.week else shift_week(current, -1) if args.post else current
        parse_week(week)
    except WeekError as exc:
        raise CommandError(str(exc)) from exc
    if args.force and not args.post:
        raise CommandError("--force only applies to --post")
    try:
        access = AccessPolicy.load(settings.access_file)
    except AccessFileError as exc:
        raise CommandError(str(exc)) from exc
    tenant = args.tenant or access.default_tenant
    if args.post:
        return await _post(args, settings, access, tenant, week, now)
    async with open_store(settings) as store:
        data = await build_digest(store.reports, week=week, timezone=settings.timezone, tenant_id=tenant,
                                  until=now if week == current else None)
    if args.out:
        chart = args.out.with_suffix(".png")
        if args.out == chart:
            raise CommandError("--out names the Markdown file; give it a .md suffix (the chart gets .png)")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        from escalations.chart import render_chart  # matplotlib

        await asyncio.to_thread(render_chart, data.trend, tz, chart)
        args.out.write_text(render_markdown(data, chart_file=chart.name), encoding="utf-8")
    if args.json:
        emit_json({**dataclasses.asdict(data), "out": str(args.out) if args.out else None})
    elif args.out:
        print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    else:
        sys.stdout.write(render_markdown(data))
    return 0


async def _post(args: argparse.Namespace, settings: Settings, access: AccessPolicy, tenant: str, week: str,
                now: datetime) -> int:
    from slack_sdk.errors import SlackApiError

    from bot.scheduler import post_digest_now  # the Slack client and the digest poster
    from bot.slack.digest_post import NotInChannelError

    channel = access.digest_channel_for(tenant, fallback=settings.digest_channel)
    where = "CAIRN_DIGEST_CHANNEL" if tenant == access.default_tenant else f"a digest_channel for tenant {tenant}"
    missing = [name for name, value in (("SLACK_BOT_TOKEN", settings.slack_bot_token), (where, channel)) if not value]
    if missing:
        raise CommandError(f"--post needs {' and '.join(missing)}; set it in the environment, .env or the access "
                           "file (or use --out FILE to write the digest instead)")
    assert channel is not None
    async with open_store(settings) as store:
        try:
            result = await post_digest_now(settings, store, access, tenant=tenant, channel=channel, week=week,
                                           now=now, force=args.force)
        except NotInChannelError as exc:
            raise CommandError(str(exc)) from exc
        except SlackApiError as exc:
            raise CommandError(f"Slack refused the digest: {exc.response.get('error')} (channel {channel})") from exc
    if args.json:
        emit_json(dataclasses.asdict(result))
    elif result.status == "posted":
        chart = "" if result.chart_uploaded else " (the chart upload failed; see the log)"
        print(f"posted the {week} digest to {result.channel} (ts {result.ts}){chart}")
    elif result.status == "already_posted":
        print(f"the {week} digest was already posted (ts {result.ts}); --force posts it again")
    else:
        print(f"another process is posting the {week} digest right now")
    return 0
