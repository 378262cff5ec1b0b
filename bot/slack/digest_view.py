"""The weekly digest as a Slack message: pure, like bot/slack/views.py (data in, text and blocks out)."""

from __future__ import annotations

from typing import Any

from bot.slack.text import encode
from escalations.digest import BACKLOG_SHOWN, FOOTNOTE, Digest, change, duration, passage_line, week_dates


def _line(text: str) -> str:
    """One line of the backlog: the words as written (bot/slack/text.py), on one line."""
    return " ".join(encode(text).split())


def render_slack(d: Digest) -> tuple[str, list[dict[str, Any]]]:
    """(fallback text, Block Kit blocks) for chat.postMessage."""
    c, p = d.counts, d.previous
    summary = (f"*{c.total}* escalations ({change(c.total, p.total)}): *{c.genuine}* genuine "
               f"({change(c.genuine, p.genuine)}), *{c.avoidable}* avoidable ({change(c.avoidable, p.avoidable)})"
               + (f", *{c.restricted}* in a document the asker may not read" if c.restricted else "")
               + (f", *{c.no_documents}* with no document the asker may read" if c.no_documents else "")
               + (f", {c.other} other" if c.other else "") + "\n"
               f"Median time to first admin reply: *{duration(d.median_first_reply_s)}*"
               f"{f' (over {d.replied} answered)' if d.replied else ''} · expired without a reply: *{d.expired}*"
               f" · 👎 on answers: *{d.feedback.down}* (👍 {d.feedback.up})")
    topics = ", ".join(f"{t.topic} {t.total}" + (f" ({t.avoidable} avoidable)" if t.avoidable else "")
                       for t in d.top_topics) or "none"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"Cairn escalation digest — {d.week}"
                                                                  + (" (week so far)" if d.until else "")}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": week_dates(d)}]},
        {"type": "section", "text": {"type": "mrkdwn", "text": summary}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*Top topics:* {topics}"}},
        {"type": "divider"},
    ]
    items = []
    for i, item in enumerate(d.backlog[:BACKLOG_SHOWN], 1):
        thread = f"<{item.link}|thread>" if item.link else f"`{item.escalation_id}`"
        items.append(f"{i}. *{_line(item.question)}* — `{item.reason}`, {item.topic}, {thread}\n"
                     f"      best passage: {_line(passage_line(item))}")
    if len(d.backlog) > BACKLOG_SHOWN:
        items.append(f"…and {len(d.backlog) - BACKLOG_SHOWN} more.")
    head = f"*Knowledge-base backlog ({len(d.backlog)} avoidable)*"
    for text in _pack([head, *items] if items else [head, "Nothing avoidable this week. :tada:"]):
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    if d.restricted:
        access = [f"*In a document the asker may not read ({len(d.restricted)})*: not a gap; widen the "
                  "document's groups if these askers should read it."]
        for i, r in enumerate(d.restricted[:BACKLOG_SHOWN], 1):
            thread = f"<{r.link}|thread>" if r.link else f"`{r.escalation_id}`"
            access.append(f"{i}. *{_line(r.question)}* — {_line(', '.join(r.documents))}, {thread}")
        for text in _pack(access):
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    if d.proposals:
        waiting = [f"*Proposed answers awaiting approval ({len(d.proposals)})*: admins' answers filed as "
                   "knowledge, shown to nobody until a document owner approves them."]
        waiting += [f"{i}. *{_line(pa.question)}* — answered by {_line(pa.admin_name)}, for "
                    f"{_line(pa.owner or 'the admins')} (`{pa.proposal_id}`)"
                    for i, pa in enumerate(d.proposals[:BACKLOG_SHOWN], 1)]
        for text in _pack(waiting):
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": FOOTNOTE}]})
    fallback = (f"Cairn escalation digest {d.week}: {c.total} escalations, {c.genuine} genuine, "
                f"{c.avoidable} avoidable, {d.expired} expired.")
    return fallback, blocks


def _pack(lines: list[str], limit: int = 2900) -> list[str]:
    """Join lines into section texts under Slack's 3000-character limit."""
    out, current = [], ""
    for line in lines:
        line = line[:limit]
        if current and len(current) + 1 + len(line) > limit:
            out.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current:
        out.append(current)
    return out

