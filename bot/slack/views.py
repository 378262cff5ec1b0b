"""Block Kit builders. Pure: data in, a message or view dict out; no I/O, no services.

Every message builder returns `{"text": …, "blocks": […]}` so a listener can pass it straight to
`chat.postMessage(**msg)` or `chat.update(**msg)`; `text` is the notification / screen-reader
fallback and always carries the same words as the blocks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.slack.constants import (
    ACTION_FEEDBACK_DOWN,
    ACTION_FEEDBACK_UP,
    ACTION_TALK_TO_PERSON,
    BLOCK_ANSWER_ACTIONS,
    BLOCK_ANSWER_SOURCES,
    BLOCK_ANSWER_TURN_PREFIX,
    BLOCK_HOME_ESCALATIONS,
    SLASH_COMMAND,
)
from bot.slack.text import encode, encode_relayed
from graph.validate import CITATION_BRACKET, citations_in  # the citation pattern has one owner
from store.records import EscalationRecord, TurnRecord

Message = dict[str, Any]

PLACEHOLDER_TEXT = "Looking that up…"
ERROR_TEXT = ("Sorry, something went wrong on my side and I couldn't finish this answer. "
              "Please try again in a moment; if it keeps happening, tell the Cairn admins.")
SECTION_LIMIT = 2900  # Slack allows 3000 characters per section text; keep room for escaping
CONTEXT_ELEMENTS = 10

REASON_LABELS = {
    "below_score_floor": "No approved passage scored above the floor",
    "retrieval_unavailable": "Search was unavailable",
    "no_eligible_source": "No published document the user may read",
    "answer_validation_failed": "The draft failed citation checks",
    "user_requested_human": "The user asked for a person",
    "conflicting_sources": "Sources conflict",
    "internal_error": "Cairn hit an internal error",
}



# -- citations ----------------------------------------------------------------------------------


def source_label(citation: Mapping[str, Any]) -> str:
    """`Travel and Expenses Policy · v1 · p. 3 · Hotels`: what a reader needs to find the passage."""
    title = str(citation.get("title") or citation.get("doc_id") or "Untitled document")
    parts = [title]
    if citation.get("version"):
        parts.append(str(citation["version"]))
    if citation.get("page"):
        parts.append(f"p. {citation['page']}")
    headings = [h.strip() for h in str(citation.get("heading") or "").split(">") if h.strip()]
    if headings and headings[0] == title:
        headings = headings[1:]
    if headings:
        parts.append(" > ".join(headings))
    return " · ".join(parts)


def render_citations(answer: str, citations: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """Replace `[chunk_id]` markers by numbered footnotes `[1]`; return the text and the footnote lines.

    Numbers follow first appearance in the text. A bracket of several ids (`[a, b]`) becomes `[1, 2]`;
    an id-like token with no citation record is dropped rather than shown raw.
    """
    by_id = {str(c["chunk_id"]): c for c in citations if c.get("chunk_id")}
    numbers: dict[str, int] = {}

    def replace(match: re.Match[str]) -> str:
        tokens = [t.strip() for t in re.split(r"[,;]", match.group(1))]
        if not tokens or citations_in(match.group(0)) != tokens:
            return match.group(0)  # an ordinary bracket in the prose
        marks = []
        for token in tokens:
            if token in by_id:
                numbers.setdefault(token, len(numbers) + 1)
                marks.append(str(numbers[token]))
        return f"[{', '.join(marks)}]" if marks else ""

    text = CITATION_BRACKET.sub(replace, answer)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()
    lines = [f"[{n}] {source_label(by_id[chunk_id])}" for chunk_id, n in numbers.items()]
    return text, lines


# -- messages in the user's thread --------------------------------------------------------------


def _sections(mrkdwn: str) -> list[dict[str, Any]]:
    """Section blocks for text already encoded for Slack, split under the per-section limit."""
    body = mrkdwn or " "
    chunks = [body[i:i + SECTION_LIMIT] for i in range(0, len(body), SECTION_LIMIT)]
    return [{"type": "section", "text": {"type": "mrkdwn", "text": chunk}} for chunk in chunks]


def context_block(lines: Sequence[str], *, block_id: str | None = None) -> dict[str, Any]:
    if len(lines) > CONTEXT_ELEMENTS:  # Slack caps a context block at 10 elements
        lines = [*lines[:CONTEXT_ELEMENTS - 1], "\n".join(lines[CONTEXT_ELEMENTS - 1:])]
    block: dict[str, Any] = {"type": "context",
                             "elements": [{"type": "mrkdwn", "text": line[:SECTION_LIMIT]} for line in lines]}
    if block_id:
        block["block_id"] = block_id
    return block


def button(text: str, action_id: str, value: str, *, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text, "emoji": True},
                              "action_id": action_id, "value": value}
    if style:
        button["style"] = style
    return button


def feedback_buttons(turn_id: str) -> list[dict[str, Any]]:
    return [button("👍", ACTION_FEEDBACK_UP, turn_id), button("👎", ACTION_FEEDBACK_DOWN, turn_id)]


def build_placeholder() -> Message:
    return {"text": PLACEHOLDER_TEXT,
            "blocks": [{"type": "context", "elements": [{"type": "mrkdwn", "text": f"_{PLACEHOLDER_TEXT}_"}]}]}


def build_answer(*, answer: str, citations: Sequence[Mapping[str, Any]], turn_id: str,
                 session_id: str) -> Message:
    """A validated answer: numbered footnotes, readable sources, a way to a person, and feedback."""
    text, sources = render_citations(answer, citations)
    blocks = _sections(encode(text))
    blocks[0]["block_id"] = BLOCK_ANSWER_TURN_PREFIX + turn_id  # "Why this answer?" finds the turn here
    if sources:
        blocks.append(context_block([encode(s) for s in sources], block_id=BLOCK_ANSWER_SOURCES))
    blocks.append({"type": "actions", "block_id": BLOCK_ANSWER_ACTIONS, "elements": [
        button("Talk to a person", ACTION_TALK_TO_PERSON, session_id), *feedback_buttons(turn_id)]})
    fallback = encode(text) + ("\n" + "\n".join(encode(s) for s in sources) if sources else "")
    return {"text": fallback, "blocks": blocks}


def build_notice(text: str, *, turn_id: str | None = None) -> Message:
    """A fixed text from Cairn (abstention, "a person is on it", a closing note): no buttons. With the
    turn it ends, "Why this answer?" works on it too."""
    blocks = _sections(encode(text))
    if turn_id:
        blocks[0]["block_id"] = BLOCK_ANSWER_TURN_PREFIX + turn_id
    return {"text": encode(text), "blocks": blocks}


def build_admin_answer(*, text: str, turn_id: str) -> Message:
    """A person's answer relayed to the user; `text` is already attributed ("Answer from …"). Their own
    mentions and links stay live; nothing else in it can ping anyone (bot/slack/text.py)."""
    mrkdwn = encode_relayed(text)
    blocks = [*_sections(mrkdwn), {"type": "actions", "block_id": BLOCK_ANSWER_ACTIONS,
                                   "elements": feedback_buttons(turn_id)}]
    return {"text": mrkdwn, "blocks": blocks}


def answer_turn_id(message: Mapping[str, Any]) -> str | None:
    """The turn behind a message Cairn posted: the first block's id, else the feedback buttons' value."""
    blocks = message.get("blocks") or []
    for block in blocks:
        block_id = str(block.get("block_id") or "")
        if block_id.startswith(BLOCK_ANSWER_TURN_PREFIX):
            return block_id.removeprefix(BLOCK_ANSWER_TURN_PREFIX) or None
    for block in blocks:
        for element in block.get("elements") or []:
            if isinstance(element, dict) and element.get("action_id") in (ACTION_FEEDBACK_UP, ACTION_FEEDBACK_DOWN):
                return str(element.get("value") or "") or None
    return None


def _score(value: object) -> str:
    return f"{float(value):.3f}" if isinstance(value, int | float) else "-"


def build_turn_explanation(turn: TurnRecord) -> Message:
    """"Why this answer?": the route that fired, the reason, each search's gate and the chunks with
    their scores, and the answerer — the turn trace, for an admin or the asker."""
    t: Mapping[str, Any] = turn.trace
    head = [f"*Why this answer?* (turn `{encode(turn.turn_id)}`)",
            f"*Question*: {encode(turn.question)[:500]}",
            f"*Route*: {encode(str(turn.route or '-'))} · *reason*: {encode(reason_label(turn.reason)) if turn.reason else '-'}"
            f" · *fired*: {encode(str(t.get('route_fired') or '-'))} · *top score*: {_score(turn.top_score)}",
            f"*Path*: {encode(' → '.join(map(str, t.get('path') or [])) or '-')}"]
    searches = []
    for s in t.get("searches") or []:
        chunks = ", ".join(f"`{encode(str(c.get('chunk_id')))}` {_score(c.get('score'))}"
                           for c in (s.get("chunks") or [])[:8])
        searches.append(f"• search “{encode(str(s.get('query') or ''))[:200]}”: gate {encode(str(s.get('gate') or '-'))},"
                        f" top {_score(s.get('top_score'))}, floor {_score(s.get('min_score'))},"
                        f" reranker {encode(str(s.get('reranker') or '-'))}" + (f"\n    {chunks}" if chunks else ""))
    passages = [passage_line(n, p) for n, p in enumerate(turn.passages, 1)]
    tail = [f"*Answerer*: {encode(turn.answerer or '-')} · *model*: {encode(turn.model or '-')}"
            f" · *prompt*: {encode(turn.prompt_version or '-')}"]
    parts = ["\n".join(head),
             "*Searches*\n" + ("\n".join(searches) if searches else "_no search ran_"),
             "*Chunks chosen (after rerank)*\n" + ("\n".join(passages) if passages else "_none_"),
             "\n".join(tail)]
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": part[:SECTION_LIMIT]}} for part in parts]
    return {"text": "\n".join(parts)[:SECTION_LIMIT], "blocks": blocks}


def reason_label(reason: str | None) -> str:
    return REASON_LABELS.get(reason or "", reason or "unknown")


def passage_line(n: int, p: Mapping[str, Any]) -> str:
    score = p.get("score")
    score_text = f"{float(score):.3f}" if isinstance(score, int | float) else "-"
    return f"{n}. {encode(source_label(p))} — score {score_text} `{encode(str(p.get('chunk_id', '')))}`"


def build_error(detail: str | None = None) -> Message:
    text = encode(ERROR_TEXT + (f" ({detail})" if detail else ""))
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": f":warning: {text}"}}]}


# -- App Home and help --------------------------------------------------------------------------

HELP_TEXT = (
    "*Ask Cairn a policy question* and it answers only from the approved documents, citing each fact.\n"
    "• Send me a direct message, or mention me in a channel: `@Cairn how many vacation days do I get?`\n"
    f"• Or use `{SLASH_COMMAND} ask <question>`; I answer in our direct messages.\n"
    "• Follow-up questions go in the same thread; no need to mention me again.\n"
    "• If the documents don't answer it, I say so and pass your question to a person, who replies in "
    "your thread. You can also press *Talk to a person* under any answer."
)

ADMIN_HELP_TEXT = (
    f"*Admins*: `{SLASH_COMMAND} escalations` lists open escalations; `{SLASH_COMMAND} resolve ID` closes one. "
    "Reply in an escalation's thread to answer the user."
)


OWNER_HELP_TEXT = (
    f"*Policy owners*: send me a file in our DM, use `{SLASH_COMMAND} upload` or the *Add a policy document* "
    "shortcut to add or replace a document; App Home lists your documents and uploads."
)


def build_help(*, is_admin: bool, is_owner: bool = False) -> Message:
    text = HELP_TEXT + ("\n\n" + ADMIN_HELP_TEXT if is_admin else "") + ("\n\n" + OWNER_HELP_TEXT if is_owner else "")
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}


def format_age(created_at: str, now: datetime) -> str:
    try:
        seconds = max(0, int((now - datetime.fromisoformat(created_at)).total_seconds()))
    except ValueError:
        return "?"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m"


def escalation_line(e: EscalationRecord, now: datetime) -> str:
    where = f" in <#{e.channel}>" if e.channel else ""
    claimed = f", claimed by <@{e.claimed_by}>" if e.claimed_by else ""
    return (f"`{e.escalation_id}` · {format_age(e.created_at, now)} old · {encode(reason_label(e.reason))}"
            f" · {e.status}{claimed}{where}\n>{encode(e.question)[:300]}")


def build_home(*, is_staff: bool, is_admin: bool, escalations: Sequence[EscalationRecord],
               now: datetime, owner_blocks: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The App Home tab: how to ask (everyone); open escalations with age and reason (admins); a policy
    owner's documents and uploads (`owner_blocks`, from bot/slack/document_views.py)."""
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Cairn: answers from approved policies"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": HELP_TEXT}},
    ]
    if not is_staff:
        blocks.append(context_block(["You see the customer-facing documents only."]))
    if is_admin:
        blocks += [{"type": "divider"},
                   {"type": "header", "text": {"type": "plain_text", "text": f"Open escalations ({len(escalations)})"}}]
        if not escalations:
            blocks.append({"type": "section", "block_id": BLOCK_HOME_ESCALATIONS,
                           "text": {"type": "mrkdwn", "text": "Nothing waiting for a person. :tada:"}})
        for e in escalations[:40]:  # a Home view holds at most 100 blocks
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": escalation_line(e, now)}})
        blocks.append(context_block([ADMIN_HELP_TEXT]))
    blocks.extend(owner_blocks)
    return {"type": "home", "blocks": blocks[:100]}
