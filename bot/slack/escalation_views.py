"""Block Kit builders for escalation threads and lists. Pure, like bot/slack/views.py: data in, dicts out.

Everything from outside Cairn (questions, transcripts, passages, names) goes through
bot/slack/text.py:encode, in the blocks and in the top-level `text` alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.slack.constants import (
    ACTION_CLAIM,
    ACTION_PROPOSE_ANSWER,
    ACTION_RESOLVE,
    BLOCK_ESCALATION_ACTIONS,
    SLASH_COMMAND,
)
from bot.slack.text import encode
from bot.slack.views import (
    SECTION_LIMIT,
    Message,
    button,
    context_block,
    escalation_line,
    passage_line,
    reason_label,
)
from escalations.notifier import ThreadNote
from store.records import EscalationRecord

WITHHELD_ANSWER = "cairn: [answer left out: it may quote a restricted document; `cairn trace` shows it]"


def visible_transcript(transcript: str, *, withheld: frozenset[str]) -> str:
    """The conversation so far, as the thread's readers may see it: with restricted documents involved,
    Cairn's own earlier answers (which may quote them), every line of each, are left out; the asker's
    words stay."""
    if not withheld:
        return transcript
    lines: list[str] = []
    cairns = False  # the line is part of one of Cairn's answers (an answer quotes a sentence a line)
    for line in transcript.splitlines():
        if line.startswith(("user:", "cairn:")):
            cairns = line.startswith("cairn:")
            if cairns:
                lines.append(WITHHELD_ANSWER)
        if not cairns:
            lines.append(line)
    return "\n".join(lines)


def _passage(n: int, p: dict[str, Any], withheld: frozenset[str]) -> str:
    if str(p.get("doc_id")) not in withheld:
        return passage_line(n, p)
    score = p.get("score")
    score_text = f"{float(score):.3f}" if isinstance(score, int | float) else "-"
    return (f"{n}. `{encode(str(p.get('doc_id')))}` · {encode(str(p.get('version') or ''))} — score {score_text} "
            "_(restricted: shown in its owner's channel)_")


def build_escalation_root(escalation: EscalationRecord, *, link: str,
                          withheld: frozenset[str] = frozenset()) -> Message:
    """The escalation channel's view of one question: what was asked, why Cairn stopped, what it found.
    Documents in `withheld` are restricted beyond this channel's readers: named, never quoted."""
    e = escalation
    top = f"{e.top_score:.3f}" if e.top_score is not None else "-"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": f"Escalation {e.escalation_id}"[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*Question*\n>{encode(e.question)[:SECTION_LIMIT]}"}},
        {"type": "section", "fields": [
            {"type": "mrkdwn", "text": f"*From*\n<@{e.user_id}> ({encode(e.tenant_id)})"},
            {"type": "mrkdwn", "text": f"*Reason*\n{encode(reason_label(e.reason))} (`{e.reason}`)"},
            {"type": "mrkdwn", "text": f"*Top score*\n{top}"},
            {"type": "mrkdwn", "text": f"*Conversation*\n<{link}|open the user's thread>"},
        ]},
    ]
    if e.transcript.strip():
        transcript = encode(visible_transcript(e.transcript.strip(), withheld=withheld))[:SECTION_LIMIT - 40]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*Transcript*\n```{transcript}```"}})
    blocks.extend(_conflict_blocks(e, withheld))
    lines = [_passage(n, p, withheld) for n, p in enumerate(e.passages, 1)]
    passages = "\n".join(lines) if lines else "_no passages were retrieved_"
    blocks.append({"type": "section", "text": {"type": "mrkdwn",
                                               "text": f"*Retrieved passages*\n{passages}"[:SECTION_LIMIT]}})
    blocks.extend(_escalation_status_blocks(e))
    fallback = f"Escalation {e.escalation_id} ({e.reason}) from <@{e.user_id}>: {encode(e.question)}"
    return {"text": fallback, "blocks": blocks}


def _conflict_blocks(e: EscalationRecord, withheld: frozenset[str]) -> list[dict[str, Any]]:
    """conflicting_sources: every owner involved, and the contradicting passages side by side."""
    sides = [p for p in e.passages if p.get("conflict")]
    if e.reason != "conflicting_sources" or not sides:
        return []
    owners = sorted({str(p["owner"]) for p in sides if p.get("owner")})
    ask = (f"{', '.join(encode(o) for o in owners)}: please confirm which applies."
           if owners else "No owner is recorded for these documents: please confirm which applies.")
    fields = []
    for p in sides[:10]:
        effective = str(p.get("effective_at") or "")[:10] or "no effective date"
        quote = "_(restricted: shown in its owner's channel)_" if str(p.get("doc_id")) in withheld else (
            encode(str(p["conflict"]))[:800])
        fields.append({"type": "mrkdwn", "text": (
            f"*{encode(str(p.get('title', p.get('doc_id', ''))))}* · {encode(str(p.get('version', '')))}"
            f" · effective {encode(effective)}\n>{quote}\n"
            f"owner {encode(str(p.get('owner') or 'none'))}")})
    return [{"type": "section", "text": {"type": "mrkdwn", "text": f"*Conflicting sources* — {ask}"}},
            {"type": "section", "fields": fields}]


def _escalation_status_blocks(e: EscalationRecord) -> list[dict[str, Any]]:
    if e.status in ("resolved", "expired"):
        who = f" by <@{e.resolved_by}>" if e.resolved_by else ""
        mark = ":white_check_mark: Resolved" if e.status == "resolved" else ":hourglass: Expired"
        return [context_block([f"{mark}{who}. Replies here are no longer relayed."])]
    buttons = [button("Resolve", ACTION_RESOLVE, e.escalation_id, style="primary")]
    if not e.claimed_by:
        buttons.append(button("Claim", ACTION_CLAIM, e.escalation_id))
    notes = ["Reply in this thread to answer: each reply is relayed to the user, attributed to you. "
             f"Press Resolve (or `{SLASH_COMMAND} resolve {e.escalation_id}`) when done."]
    if e.claimed_by:
        notes.append(f":raising_hand: Claimed by <@{e.claimed_by}>")
    return [context_block(notes), {"type": "actions", "block_id": BLOCK_ESCALATION_ACTIONS, "elements": buttons}]


def build_thread_followup(*, user_id: str, text: str) -> Message:
    body = f"<@{user_id}> added:\n>{encode(text)}"[:SECTION_LIMIT]
    return {"text": f"Follow-up from <@{user_id}>: {encode(text)}",
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": body}}]}


def build_thread_note(mrkdwn: str) -> Message:
    """A line of Cairn's own in the thread; anything from outside in it is already encoded."""
    return {"text": mrkdwn, "blocks": [context_block([mrkdwn])]}


def build_escalation_note(escalation: EscalationRecord, note: ThreadNote) -> Message:
    """What the escalation use cases tell the thread (escalations/notifier.py:ThreadNote), in Slack's words."""
    by = note.by or "someone"
    if note.kind == "reminder":
        text = _reminder(escalation)
    elif note.kind == "expired":
        text = (f":hourglass: Expired: no reply within {note.deadline_hours or 0:g} h. The user was told that no one "
                "has answered yet; nothing was done or granted on their behalf. A reply here no longer reaches them.")
    elif note.kind == "resolved":
        text = f":white_check_mark: Resolved by {_person(by)}."
        # The answer given here can become knowledge: filed for the document owner, shown to nobody until
        # they approve it (escalations/proposals.py).
        return {"text": text, "blocks": [context_block([text]), {"type": "actions", "elements": [
            button("File the answer for the document owner", ACTION_PROPOSE_ANSWER, escalation.escalation_id)]}]}
    elif note.kind == "claimed":
        text = f":raising_hand: {_person(by)} is on it."
    elif note.kind == "relay_failed":
        text = f":warning: I couldn't deliver that reply to the user ({encode(note.text or 'unknown error')}). Please try again."
    elif note.kind == "reply_copy":
        text = f"{encode(by)} answered from the command line:\n>{encode(note.text or '')}"
    else:
        raise ValueError(f"unknown escalation note {note.kind!r}")
    return build_thread_note(text[:SECTION_LIMIT])


def _person(user: str) -> str:
    """A Slack user id becomes a mention; anyone else (the CLI's `local`, a name) is written out."""
    return f"<@{user}>" if user[:1] in ("U", "W") and user.isalnum() and user.isupper() else encode(user)


def _reminder(escalation: EscalationRecord) -> str:
    deadline = datetime.fromisoformat(str(escalation.deadline_at))
    stamp = int(deadline.timestamp())
    when = f"<!date^{stamp}^{{date_short_pretty}} at {{time}}|{deadline:%Y-%m-%d %H:%M} UTC>"
    return (f":alarm_clock: Reminder: nobody has answered this yet. If no one replies in this thread by {when}, "
            "it expires and the user is told that no one has answered.")


def build_escalation_list(escalations: Sequence[EscalationRecord], now: datetime) -> Message:
    if not escalations:
        text = "No open escalations."
        return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}
    lines = [escalation_line(e, now) for e in escalations[:20]]
    more = len(escalations) - len(lines)
    text = f"*Open escalations ({len(escalations)})*\n" + "\n".join(lines) + (f"\n…and {more} more" if more else "")
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}}]}
