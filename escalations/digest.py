"""The weekly digest for leads: what escalated, which of it the knowledge base should have answered.

`build_digest` reads the store and returns plain data; `render_markdown` (for `--out` and docs) and
`render_slack` (mrkdwn blocks) only format it. Kinds come from the row itself (`kind_of`: its reason,
or the restricted passages it recorded), so a row the classifier has not reached yet is still counted;
topics come from the classifier's label. A digest built with `until` covers the week so far.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from escalations.chart import TrendSeries, weekly_series
from escalations.taxonomy import (
    AVOIDABLE,
    GENUINE,
    NO_DOCUMENTS,
    RESTRICTED,
    UNCLASSIFIED,
    kind_of,
    restricted_passages,
)
from escalations.weeks import recent_weeks, shift_week, week_bounds
from store.proposals import ProposalRecord
from store.records import EscalationRecord
from store.reports import EscalationReports, FeedbackCounts

TREND_WEEKS = 8
TOP_TOPICS = 5
BACKLOG_SHOWN = 20

LinkFor = Callable[[str, str], Awaitable[str | None]]  # (channel, thread_ts) → permalink


@dataclass(frozen=True)
class KindCounts:
    genuine: int = 0
    avoidable: int = 0
    other: int = 0  # the bot's own errors and reasons nobody mapped yet
    restricted: int = 0  # a document the asker may not read would have answered
    no_documents: int = 0  # the asker may read no published document

    @property
    def total(self) -> int:
        return self.genuine + self.avoidable + self.other + self.restricted + self.no_documents


@dataclass(frozen=True)
class TopicCount:
    topic: str
    total: int
    avoidable: int


@dataclass(frozen=True)
class BacklogItem:
    escalation_id: str
    question: str
    reason: str
    topic: str
    created_at: str
    chunk_title: str | None
    chunk_heading: str | None
    chunk_id: str | None
    score: float | None
    link: str | None


@dataclass(frozen=True)
class RestrictedItem:
    """An escalation a document the asker may not read would have answered: access to review."""

    escalation_id: str
    question: str
    user_id: str
    documents: list[str]  # titles (doc ids) of the documents that would have answered
    link: str | None


@dataclass(frozen=True)
class Digest:
    week: str
    start: datetime
    end: datetime
    timezone: str
    counts: KindCounts
    previous: KindCounts
    top_topics: list[TopicCount]
    median_first_reply_s: float | None
    replied: int
    expired: int
    backlog: list[BacklogItem]
    feedback: FeedbackCounts
    trend: TrendSeries
    restricted: list[RestrictedItem] = field(default_factory=list)
    until: datetime | None = None  # the week so far: counted up to this moment
    proposals: list[ProposalRecord] = field(default_factory=list)  # admin answers awaiting an owner's approval


def slack_deep_link(channel: str, ts: str) -> str:
    return f"slack://channel?id={channel}&message={ts}"


_COUNTED = (GENUINE, AVOIDABLE, RESTRICTED, NO_DOCUMENTS)


def count_kinds(escalations: list[EscalationRecord]) -> KindCounts:
    kinds = Counter(kind_of(e) for e in escalations)
    return KindCounts(genuine=kinds[GENUINE], avoidable=kinds[AVOIDABLE], restricted=kinds[RESTRICTED],
                      no_documents=kinds[NO_DOCUMENTS],
                      other=sum(n for k, n in kinds.items() if k not in _COUNTED))


def top_topics(escalations: list[EscalationRecord], limit: int = TOP_TOPICS) -> list[TopicCount]:
    totals = Counter(e.topic or "unlabelled" for e in escalations)
    avoidable = Counter(e.topic or "unlabelled" for e in escalations if kind_of(e) == AVOIDABLE)
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0] in (UNCLASSIFIED, "unlabelled"), kv[0]))
    return [TopicCount(topic, n, avoidable[topic]) for topic, n in ranked[:limit]]


def first_reply_seconds(escalations: list[EscalationRecord]) -> list[float]:
    return [(datetime.fromisoformat(e.first_reply_at) - datetime.fromisoformat(e.created_at)).total_seconds()
            for e in escalations if e.first_reply_at]


def _score(passage: dict[str, Any]) -> float:
    try:
        return float(passage.get("score") or 0.0)
    except (TypeError, ValueError):
        return 0.0


def top_passage(esc: EscalationRecord) -> dict[str, Any] | None:
    """The best passage the asker's own search found (never one of a document they may not read)."""
    scored: list[dict[str, Any]] = [p for p in esc.passages if isinstance(p, dict) and not p.get("restricted")]
    return max(scored, key=_score) if scored else None


async def _link(esc: EscalationRecord, link_for: LinkFor | None) -> str | None:
    if not (esc.channel and esc.thread_ts):
        return None
    link = None
    if link_for is not None:
        try:
            link = await link_for(esc.channel, esc.thread_ts)
        except Exception:
            link = None
    return link or slack_deep_link(esc.channel, esc.thread_ts)


async def restricted_item(esc: EscalationRecord, link_for: LinkFor | None) -> RestrictedItem:
    documents = list(dict.fromkeys(f"{p.get('title') or p.get('doc_id')} ({p.get('doc_id')})"
                                   for p in restricted_passages(esc)))
    return RestrictedItem(escalation_id=esc.escalation_id, question=esc.question, user_id=esc.user_id,
                          documents=documents, link=await _link(esc, link_for))


async def backlog_item(esc: EscalationRecord, link_for: LinkFor | None) -> BacklogItem:
    top = top_passage(esc)
    link = await _link(esc, link_for)
    score = _score(top) if top and top.get("score") is not None else esc.top_score
    return BacklogItem(escalation_id=esc.escalation_id, question=esc.question, reason=esc.reason,
                       topic=esc.topic or "unlabelled", created_at=esc.created_at,
                       chunk_title=str(top.get("title")) if top else None,
                       chunk_heading=str(top.get("heading")) if top and top.get("heading") else None,
                       chunk_id=str(top.get("chunk_id")) if top else None, score=score, link=link)


async def build_digest(queries: EscalationReports, *, week: str, timezone: str = "UTC",
                       link_for: LinkFor | None = None, trend_weeks: int = TREND_WEEKS,
                       tenant_id: str | None = None, until: datetime | None = None) -> Digest:
    """The digest of ISO week `week` (Monday to Sunday in `timezone`): one tenant's, or (None) every one's.
    With `until` (a moment inside the week), the week so far: what happened before that moment."""
    tz = ZoneInfo(timezone)
    start, end = week_bounds(week, tz)
    if until is not None:
        end = min(end, max(until, start))
    prev_start, prev_end = week_bounds(shift_week(week, -1), tz)
    escalations = await queries.escalations_between(start=start, end=end, tenant_id=tenant_id)
    previous = await queries.escalations_between(start=prev_start, end=prev_end, tenant_id=tenant_id)
    replies = first_reply_seconds(escalations)
    weeks = recent_weeks(week, trend_weeks)
    trend_start, _ = week_bounds(weeks[0], tz)
    # The trend's avoidable bars are the backlog's kind: a restricted escalation is not one of them.
    rows = [(e.created_at, e.reason)
            for e in await queries.escalations_between(start=trend_start, end=end, tenant_id=tenant_id)
            if kind_of(e) != RESTRICTED]
    avoidable = [e for e in escalations if kind_of(e) == AVOIDABLE]
    restricted = [e for e in escalations if kind_of(e) == RESTRICTED]
    return Digest(
        week=week, start=start, end=end, timezone=timezone, counts=count_kinds(escalations),
        previous=count_kinds(previous), top_topics=top_topics(escalations),
        median_first_reply_s=statistics.median(replies) if replies else None, replied=len(replies),
        expired=len(await queries.expired_between(start=start, end=end, tenant_id=tenant_id)),
        # permalinks only for the items shown: one chat.getPermalink call each
        backlog=[await backlog_item(e, link_for if i < BACKLOG_SHOWN else None) for i, e in enumerate(avoidable)],
        feedback=await queries.feedback_between(start=start, end=end, tenant_id=tenant_id),
        trend=weekly_series(rows, weeks, tz),
        restricted=[await restricted_item(e, link_for if i < BACKLOG_SHOWN else None)
                    for i, e in enumerate(restricted)],
        until=until, proposals=await queries.proposals_awaiting(tenant_id=tenant_id))


# -- formatting ---------------------------------------------------------------------------------------


def change(now: int, before: int) -> str:
    if now == before:
        return "no change"
    return f"{'▲' if now > before else '▼'}{abs(now - before)} from {before}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "no replies yet"
    if seconds < 60:
        return "under 1 min"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _share(part: int, whole: int) -> str:
    return f" ({round(100 * part / whole)}%)" if whole else ""


def week_dates(d: Digest) -> str:
    zone = ZoneInfo(d.timezone)
    first, last = d.start.astimezone(zone), d.end.astimezone(zone)
    if d.until is not None:
        return f"the week so far: {first:%a %d %b} – {last:%a %d %b %Y %H:%M} ({d.timezone}); the week is not over"
    return f"{first:%a %d %b} – {(last - timedelta(days=1)):%a %d %b %Y} ({d.timezone})"


def kind_rows(d: Digest) -> list[tuple[str, int, int]]:
    """(label, this week, previous week) of each kind the digest counts; a rare kind only when it occurred."""
    c, p = d.counts, d.previous
    rows = [("genuine (no answer existed)", c.genuine, p.genuine),
            ("avoidable (knowledge base to fix)", c.avoidable, p.avoidable)]
    if c.restricted or p.restricted:
        rows.append(("restricted (in a document the asker may not read)", c.restricted, p.restricted))
    if c.no_documents or p.no_documents:
        rows.append(("no documents (nothing published the asker may read)", c.no_documents, p.no_documents))
    if c.other or p.other:
        rows.append(("other (bot errors)", c.other, p.other))
    return rows


FOOTNOTE = ("Genuine: `retrieval_unavailable`, `user_requested_human`: no answer existed for the bot to give. "
            "Avoidable: `below_score_floor`, `answer_validation_failed`, `conflicting_sources`: the documents the "
            "asker may read gave no defensible answer (the best passage found, if any, is listed with each). "
            "Restricted: a published document the asker may not read would have answered: access to review, "
            "not a gap. No documents: `no_eligible_source`: nothing is published that the asker may read.")


def passage_line(item: BacklogItem) -> str:
    if item.chunk_id is None:
        return "no passage retrieved"
    where = item.chunk_title or item.chunk_id
    heading = item.chunk_heading or ""
    if item.chunk_title and heading.startswith(item.chunk_title):  # headings start with the document title
        heading = heading[len(item.chunk_title):].lstrip(" >›")
    if heading:
        where += f" › {heading}"
    score = f"{item.score:.2f}" if item.score is not None else "–"
    return f"{where} (`{item.chunk_id}`, score {score})"


def render_markdown(d: Digest, *, chart_file: str | None = None) -> str:
    c, p = d.counts, d.previous
    so_far = " (week so far)" if d.until is not None else ""
    lines = [f"# Cairn escalation digest — {d.week}{so_far}", "", f"_{week_dates(d)}_", "",
             "| | this week | previous week | change |", "|---|---:|---:|---|",
             f"| escalations | {c.total} | {p.total} | {change(c.total, p.total)} |"]
    for label, now, before in kind_rows(d):
        name, _, why = label.partition(" ")
        if name == "avoidable":  # the backlog: what the knowledge base should have answered
            lines.append(f"| **{name}** {why} | **{now}**{_share(now, c.total)} | {before} | {change(now, before)} |")
        else:
            lines.append(f"| {label} | {now}{_share(now, c.total) if name != 'other' else ''} | {before} | "
                         f"{change(now, before)} |")
    lines += ["", f"- **Median time to first admin reply:** {duration(d.median_first_reply_s)}"
                  f"{f' (over {d.replied} answered)' if d.replied else ''}",
              f"- **Expired without a reply:** {d.expired}",
              f"- **👎 feedback on answers:** {d.feedback.down} (👍 {d.feedback.up})", ""]
    if chart_file:
        lines += [f"![Genuine vs avoidable escalations, last {len(d.trend.weeks)} weeks]({chart_file})", ""]
    lines += ["## Top topics", ""]
    if d.top_topics:
        lines += ["| topic | escalations | avoidable |", "|---|---:|---:|"]
        lines += [f"| {t.topic} | {t.total} | {t.avoidable} |" for t in d.top_topics]
    else:
        lines.append("No escalations this week.")
    lines += ["", f"## Knowledge-base backlog ({len(d.backlog)} avoidable)", ""]
    if not d.backlog:
        lines.append("Nothing avoidable this week.")
    for i, item in enumerate(d.backlog[:BACKLOG_SHOWN], 1):
        thread = f"[thread]({item.link})" if item.link else f"`{item.escalation_id}` (no Slack thread)"
        lines += [f"{i}. **{_md(item.question)}** — `{item.reason}`, topic {item.topic}, {thread}",
                  f"   - best passage it had: {_md(passage_line(item))}"]
    if len(d.backlog) > BACKLOG_SHOWN:
        lines.append(f"\n…and {len(d.backlog) - BACKLOG_SHOWN} more (`cairn escalations --json`).")
    if d.restricted:
        lines += ["", f"## In a document the asker may not read ({len(d.restricted)})", "",
                  "Not a gap in the knowledge base: widen the document's groups if these askers should read it.", ""]
    for i, restricted in enumerate(d.restricted[:BACKLOG_SHOWN], 1):
        thread = f"[thread]({restricted.link})" if restricted.link else f"`{restricted.escalation_id}`"
        lines.append(f"{i}. **{_md(restricted.question)}** — would have been answered by "
                     f"{_md(', '.join(restricted.documents))}, {thread}")
    if d.proposals:
        lines += ["", f"## Proposed answers awaiting approval ({len(d.proposals)})", "",
                  "Admins' answers filed as knowledge: shown to nobody until a document owner approves them."]
    for i, pa in enumerate(d.proposals[:BACKLOG_SHOWN], 1):
        lines.append(f"{i}. **{_md(pa.question)}** — answered by {_md(pa.admin_name)}, for "
                     f"{_md(pa.owner or 'the admins')}: `cairn proposals approve {pa.proposal_id}`")
    if d.feedback.down_questions:
        lines += ["", "## Answers marked 👎", ""]
        lines += [f"- {_md(q)}" for q in d.feedback.down_questions]
    lines += ["", f"_{FOOTNOTE}_", ""]
    return "\n".join(lines)


def _md(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())
