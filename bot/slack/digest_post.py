"""Posting the weekly digest to Slack at most once per week: claim → post → mark done.

The `job_runs` row `digest:{week}` moves claimed → posted (with the message ts) → done.

- A second trigger, a restart, or `cairn digest --post` for the same week finds the row and posts
  nothing (`already_posted`), or finds a fresh claim (`in_progress`: another process is posting).
- If building or posting fails before Slack accepted the message (Slack answered with an error), the
  claim is released and a later trigger tries again.
- The message carries Slack message metadata (`cairn_digest`: week, tenant, claim token). A claim left
  `claimed` for STALE_CLAIM by a process that died is taken over, and the new holder first reads the
  channel's history since that claim (conversations.history with all metadata, a few pages): a message
  posted under an earlier claim of the same week and tenant is recorded as the week's post and not
  posted again, so a crash after Slack accepted chat.postMessage but before the `posted` update
  leaves one digest, not two. A post whose answer never came (a timeout, the process stopped
  mid-call) hands the claim over at once, to be checked the same way by the next trigger.
- Reading the history needs `channels:history` (`groups:history` for a private channel) and the
  channel given by id. When it cannot be read the takeover says so in the log and posts anyway:
  at-least-once, a duplicate rather than a week with no digest.
- Once `posted`, the message is never posted again; a failed chart upload is logged, not retried.
  A digest found in the history gets its chart then (the chart is only uploaded after `posted`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.digest_view import render_slack
from escalations.chart import render_chart
from escalations.digest import Digest, build_digest
from store.reports import EscalationReports
from store.run_claims import RunClaim, RunClaims

log = logging.getLogger(__name__)

STALE_CLAIM = timedelta(minutes=15)
DIGEST_EVENT = "cairn_digest"  # the Slack message metadata event type a digest is posted with
HISTORY_MARGIN = timedelta(minutes=5)  # read the history from this long before the first claim (clock skew)
HISTORY_PAGES = 5  # of 200 messages: a digest channel is quiet, and a takeover comes within hours


@dataclass(frozen=True)
class PostResult:
    week: str
    status: str  # posted | already_posted (also: found in the channel after a crash) | in_progress
    channel: str | None = None
    ts: str | None = None
    chart_uploaded: bool = False


class NotInChannelError(Exception):
    """The bot is not in the digest channel and could not join it: says which channel and what to do."""

    def __init__(self, channel: str, reason: str) -> None:
        self.channel, self.reason = channel, reason
        super().__init__(f"Cairn is not in the digest channel {channel} and could not join it ({reason}): "
                         f"run /invite @Cairn in {channel}, then post the digest again")


async def join_channel(client: AsyncWebClient, channel: str) -> None:
    """Join a public channel the bot was not invited to (conversations.join, scope channels:join); a
    private one, or a workspace that does not let apps join, raises NotInChannelError."""
    try:
        await client.conversations_join(channel=channel)
    except SlackApiError as exc:
        error = str(exc.response.get("error"))
        reason = {"method_not_supported_for_channel_type": "it is private: only an invitation lets the bot in",
                  "missing_scope": "the app lacks the channels:join scope: reinstall it from manifest.yml",
                  "channel_not_found": "no such channel, or it is private",
                  "is_archived": "it is archived"}.get(error, error)
        raise NotInChannelError(channel, reason) from exc
    log.info("joined the digest channel %s, which the bot had not been invited to", channel)


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
    tenant = tenant_id or ""
    if claim.reclaimed:
        log.warning("digest %s: taking over a claim left by a process that stopped before recording its post",
                    week)
        found = await _posted_earlier(client, claim, channel=channel, week=week, tenant=tenant)
        if found is not None:
            return await _record_found(reports=reports, runs=runs, client=client, claim=claim, week=week,
                                       timezone=timezone, now=now, tenant_id=tenant_id, channel=channel, ts=found)
    try:
        digest = await build_digest(reports, week=week, timezone=timezone, link_for=permalinker(client),
                                    tenant_id=tenant_id)
        text, blocks = render_slack(digest)
        png = await asyncio.to_thread(render_chart, digest.trend, ZoneInfo(timezone))
    except BaseException:
        await runs.release_run(claim)
        raise
    metadata = {"event_type": DIGEST_EVENT, "event_payload": {"week": week, "tenant": tenant, "token": claim.token}}
    message: dict[str, Any] = {"channel": channel, "text": text, "blocks": blocks, "unfurl_links": False,
                               "unfurl_media": False, "metadata": metadata}
    try:
        try:
            resp = await client.chat_postMessage(**message)
        except SlackApiError as exc:
            if exc.response.get("error") != "not_in_channel":
                raise
            await join_channel(client, channel)  # raises NotInChannelError when it cannot
            resp = await client.chat_postMessage(**message)
    except (SlackApiError, NotInChannelError):  # Slack answered: nothing was posted
        await runs.release_run(claim)
        raise
    except BaseException:  # no answer: Slack may have posted it; the next trigger looks before posting
        await runs.abandon_run(claim)
        raise
    posted_channel, ts = str(resp["channel"]), str(resp["ts"])
    await runs.mark_run(claim, state="posted", now=now, channel=posted_channel, ts=ts)
    uploaded = await _upload_chart(client, digest, png, channel=posted_channel)
    await runs.mark_run(claim, state="done", now=now, chart_uploaded=uploaded)
    return PostResult(week, "posted", channel=posted_channel, ts=ts, chart_uploaded=uploaded)


async def _posted_earlier(client: AsyncWebClient, claim: RunClaim, *, channel: str, week: str,
                          tenant: str) -> str | None:
    """The ts of this week's digest posted under an earlier claim of it, from the channel's history; None
    when there is none or the history cannot be read (logged: the digest is then posted again)."""
    since = (claim.first_claimed_at or datetime.now(UTC)) - HISTORY_MARGIN
    cursor: str | None = None
    try:
        for _ in range(HISTORY_PAGES):
            resp = await client.conversations_history(channel=channel, oldest=f"{since.timestamp():.6f}",
                                                      include_all_metadata=True, limit=200, cursor=cursor)
            for message in resp.get("messages") or []:
                meta = message.get("metadata") or {}
                payload = meta.get("event_payload") or {}
                if (meta.get("event_type") == DIGEST_EVENT and payload.get("week") == week
                        and payload.get("tenant", "") == tenant and payload.get("token") in claim.earlier_tokens):
                    log.warning("digest %s: found in the channel (ts %s), posted by the process that stopped; "
                                "not posting it again", week, message.get("ts"))
                    return str(message["ts"])
            cursor = (resp.get("response_metadata") or {}).get("next_cursor") or None
            if not resp.get("has_more") or not cursor:
                log.info("digest %s: not in %s's history since the first claim; posting it", week, channel)
                return None
    except Exception as exc:
        if isinstance(exc, SlackApiError):
            needed = exc.response.get("needed")
            why = f"{exc.response.get('error')}" + (f", needs {needed}" if needed else "")
        else:
            why = type(exc).__name__
        log.warning("digest %s: cannot read %s's history to check for a digest already posted (%s); posting it, "
                    "which may post it twice", week, channel, why)
        return None
    log.warning("digest %s: no digest found in the last %d pages of %s's history; posting it", week,
                HISTORY_PAGES, channel)
    return None


async def _record_found(*, reports: EscalationReports, runs: RunClaims, client: AsyncWebClient, claim: RunClaim,
                        week: str, timezone: str, now: datetime, tenant_id: str | None, channel: str,
                        ts: str) -> PostResult:
    """The week's digest is in the channel already: record it as posted, then give it the chart that the
    process which posted it never uploaded (the chart goes up only after `posted` is recorded)."""
    await runs.mark_run(claim, state="posted", now=now, channel=channel, ts=ts)
    try:
        digest = await build_digest(reports, week=week, timezone=timezone, tenant_id=tenant_id)
        png = await asyncio.to_thread(render_chart, digest.trend, ZoneInfo(timezone))
    except Exception as exc:
        log.warning("digest %s: the chart could not be drawn (%s); the digest itself was posted", week, exc)
        uploaded = False
    else:
        uploaded = await _upload_chart(client, digest, png, channel=channel)
    await runs.mark_run(claim, state="done", now=now, chart_uploaded=uploaded)
    return PostResult(week, "already_posted", channel=channel, ts=ts, chart_uploaded=uploaded)


async def _upload_chart(client: AsyncWebClient, digest: Digest, png: bytes, *, channel: str) -> bool:
    try:
        await client.files_upload_v2(
            channel=channel, file=png, filename=f"cairn-digest-{digest.week}.png",
            title=f"Escalations per week, genuine vs avoidable ({digest.trend.weeks[0]} to {digest.week})")
    except Exception as exc:
        log.warning("digest %s: the chart upload failed (%s); the digest itself was posted", digest.week, exc)
        return False
    return True
