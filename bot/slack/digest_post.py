"""Posting the weekly digest to Slack at most once per week: claim → post → mark done.

The `job_runs` row `digest:{week}` moves claimed → posted (with the message ts) → done.

- A second trigger, a restart, or `cairn digest --post` for the same week finds the row and posts
  nothing (`already_posted`), or finds a fresh claim (`in_progress`: another process is posting).
- If building or posting fails before Slack accepted the message, the claim is released and a later
  trigger tries again.
- A claim left `claimed` for STALE_CLAIM by a process that died between claim and post is taken
  over and the digest posted (at-least-once for that crash). The only window for a duplicate is a
  crash between Slack accepting chat.postMessage and the `posted` update, a few milliseconds; we
  prefer that to a week with no digest (at-most-once would lose it for good).
- Once `posted`, the message is never posted again; a failed chart upload is logged, not retried.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.digest_view import render_slack
from escalations.chart import render_chart
from escalations.digest import Digest, build_digest
from store.reports import EscalationReports
from store.run_claims import RunClaims

log = logging.getLogger(__name__)

STALE_CLAIM = timedelta(minutes=15)


@dataclass(frozen=True)
class PostResult:
    week: str
    status: str  # posted | already_posted | in_progress
    channel: str | None = None
    ts: str | None = None
    chart_uploaded: bool = False


def run_key(week: str, tenant_id: str | None = None, *, default_tenant: str | None = None) -> str:
    """One claim per tenant and week (the default tenant keeps the plain `digest:{week}` key)."""
    return f"digest:{week}" if tenant_id is None or tenant_id == default_tenant else f"digest:{tenant_id}:{week}"


def permalinker(client: AsyncWebClient):  # type: ignore[no-untyped-def]
    async def link_for(channel: str, ts: str) -> str | None:
        resp = await client.chat_getPermalink(channel=channel, message_ts=ts)
        return str(resp["permalink"]) if resp.get("permalink") else None

    return link_for


async def post_digest(*, reports: EscalationReports, runs: RunClaims, client: AsyncWebClient, channel: str, week: str,
                      timezone: str, now: datetime, force: bool = False,
                      stale_after: timedelta = STALE_CLAIM, tenant_id: str | None = None,
                      default_tenant: str | None = None) -> PostResult:
    """`tenant_id`: that tenant's escalations only (None: every tenant's, for a single-tenant install)."""
    key = run_key(week, tenant_id, default_tenant=default_tenant)
    if force:
        await runs.forget_run(run_key=key)
    claim = await runs.claim_run(run_key=key, now=now, stale_after=stale_after)
    if claim is None:
        state = await runs.get_run(run_key=key)
        status = "in_progress" if state is not None and state.state == "claimed" else "already_posted"
        detail = state.detail if state else {}
        log.info("digest %s not posted again: %s", week, status)
        return PostResult(week, status, channel=detail.get("channel"), ts=detail.get("ts"))
    if claim.reclaimed:
        log.warning("digest %s: taking over a claim left by a process that stopped before posting", week)
    try:
        digest = await build_digest(reports, week=week, timezone=timezone, link_for=permalinker(client),
                                    tenant_id=tenant_id)
        text, blocks = render_slack(digest)
        png = await asyncio.to_thread(render_chart, digest.trend, ZoneInfo(timezone))
        resp = await client.chat_postMessage(channel=channel, text=text, blocks=blocks, unfurl_links=False,
                                             unfurl_media=False)
    except BaseException:
        await runs.release_run(claim)
        raise
    posted_channel, ts = str(resp["channel"]), str(resp["ts"])
    await runs.mark_run(claim, state="posted", now=now, channel=posted_channel, ts=ts)
    uploaded = await _upload_chart(client, digest, png, channel=posted_channel)
    await runs.mark_run(claim, state="done", now=now, chart_uploaded=uploaded)
    return PostResult(week, "posted", channel=posted_channel, ts=ts, chart_uploaded=uploaded)


async def _upload_chart(client: AsyncWebClient, digest: Digest, png: bytes, *, channel: str) -> bool:
    try:
        await client.files_upload_v2(
            channel=channel, file=png, filename=f"cairn-digest-{digest.week}.png",
            title=f"Escalations per week, genuine vs avoidable ({digest.trend.weeks[0]} to {digest.week})")
    except Exception as exc:
        log.warning("digest %s: the chart upload failed (%s); the digest itself was posted", digest.week, exc)
        return False
    return True
