"""The validate node: a draft reaches END only if every factual sentence cites a passage sent this turn,
and every figure in it (number, amount, percentage, date) is one that passage states.

A failed draft is removed from the conversation (RemoveMessage) before force_escalate writes the
abstention, so it is never shown, never stored as an answer, and never fed back to a model; the
verdict (kinds of problems, no draft text) is what the trace keeps. Messages written by a person
(admin replies) or by Cairn's fixed texts are not drafts and pass unvalidated.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage

from graph.prompts import effective_day
from graph.state import ConversationState, author_of
from graph.validate import validate_answer


def sent_texts(passages: list[dict[str, Any]]) -> dict[str, str]:
    """What the answerer was given of each passage (graph/prompts.py format_evidence): its title,
    heading path and version as well as its text (its effective date: `sent_dates`)."""
    keys = ("title", "heading", "version", "text")
    return {p["chunk_id"]: "\n".join(str(p.get(k) or "") for k in keys) for p in passages}


def sent_dates(passages: list[dict[str, Any]]) -> dict[str, str]:
    """Each passage's effective date as the answerer was shown it."""
    return {p["chunk_id"]: day for p in passages if (day := effective_day(p.get("effective_at")))}


async def validate(state: ConversationState) -> dict[str, Any]:
    last = state["messages"][-1]
    if not isinstance(last, AIMessage) or last.tool_calls:
        raise ValueError("validate: expected a final AI message")
    author = author_of(last)
    if author in ("admin", "system"):
        return {"validation": {"ok": True, "skipped": f"{author} message"}, "path": ["validate"]}
    text = last.content if isinstance(last.content, str) else str(last.text)
    passages = state.get("passages") or []
    allowed = [p["chunk_id"] for p in passages]
    verdict = validate_answer(text, allowed, texts=sent_texts(passages), effective=sent_dates(passages))
    if verdict.ok:
        return {"validation": verdict.as_dict(), "answer": text, "route": "answer", "reason": None,
                "path": ["validate"]}
    assert last.id is not None  # add_messages gives every message an id
    return {"validation": verdict.as_dict(), "reason": "answer_validation_failed", "answer": None,
            "messages": [RemoveMessage(id=last.id)], "path": ["validate"]}
