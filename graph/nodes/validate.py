"""The validate node: a draft reaches END only if every factual sentence cites a passage sent this turn.

A failed draft is removed from the conversation (RemoveMessage) before force_escalate writes the
abstention, so it is never shown, never stored as an answer, and never fed back to a model; the
verdict (kinds of problems, no draft text) is what the trace keeps. Messages written by a person
(admin replies) or by Cairn's fixed texts are not drafts and pass unvalidated.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage

from graph.state import ConversationState, author_of
from graph.validate import validate_answer


async def validate(state: ConversationState) -> dict[str, Any]:
    last = state["messages"][-1]
    if not isinstance(last, AIMessage) or last.tool_calls:
        raise ValueError("validate: expected a final AI message")
    author = author_of(last)
    if author in ("admin", "system"):
        return {"validation": {"ok": True, "skipped": f"{author} message"}, "path": ["validate"]}
    text = last.content if isinstance(last.content, str) else str(last.text)
    allowed = [p["chunk_id"] for p in state.get("passages") or []]
    verdict = validate_answer(text, allowed)
    if verdict.ok:
        return {"validation": verdict.as_dict(), "answer": text, "route": "answer", "reason": None,
                "path": ["validate"]}
    assert last.id is not None  # add_messages gives every message an id
    return {"validation": verdict.as_dict(), "reason": "answer_validation_failed", "answer": None,
            "messages": [RemoveMessage(id=last.id)], "path": ["validate"]}
