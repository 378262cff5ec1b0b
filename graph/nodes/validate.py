"""The validate node: a draft reaches END only if every factual sentence cites a passage sent this turn,
every figure in it (number, amount, percentage, date) is one that passage states, and, for a model's
draft, a sentence of a passage it cites supports it (the answer judge's reading; graph/validate.py).

A failed draft is removed from the conversation (RemoveMessage) before force_escalate writes the
abstention, so it is never shown, never stored as an answer, and never fed back to a model; the
verdict (kinds of problems, no draft text) is what the trace keeps. Messages written by a person
(admin replies) or by Cairn's fixed texts are not drafts and pass unvalidated. The extractive
answerer's drafts are quotes of the passages by construction: they get no support check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage

from graph.prompts import effective_day
from graph.state import ConversationState, author_of, passage_from_state
from graph.validate import SupportCheck, validate_answer
from retrieval.search import Passage

# The passages sent this turn → the support check over them, or None (no judge).
SupportFor = Callable[[Sequence[Passage]], SupportCheck | None]
# Drafts of this answerer (graph/answerers/llm.py) get the support check.
CHECKED_ANSWERER = "llm"


def sent_texts(passages: list[dict[str, Any]]) -> dict[str, str]:
    """What the answerer was given of each passage (graph/prompts.py format_evidence): its title,
    heading path and version as well as its text (its effective date: `sent_dates`)."""
    keys = ("title", "heading", "version", "text")
    return {p["chunk_id"]: "\n".join(str(p.get(k) or "") for k in keys) for p in passages}


def sent_dates(passages: list[dict[str, Any]]) -> dict[str, str]:
    """Each passage's effective date as the answerer was shown it."""
    return {p["chunk_id"]: day for p in passages if (day := effective_day(p.get("effective_at")))}


def _answerer_of(message: AIMessage) -> str | None:
    cairn = (message.additional_kwargs or {}).get("cairn") or {}
    return cairn.get("answerer") if isinstance(cairn, dict) else None


def make_validate(*, support: SupportFor | None = None):
    """The node. `support`: builds the support check for a model's draft from the passages sent."""

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
        check = support([passage_from_state(p) for p in passages]) \
            if support is not None and _answerer_of(last) == CHECKED_ANSWERER else None
        if check is None:
            verdict = validate_answer(text, allowed, texts=sent_texts(passages), effective=sent_dates(passages))
        else:  # the judge reads each factual sentence: off the event loop
            verdict = await asyncio.to_thread(validate_answer, text, allowed, texts=sent_texts(passages),
                                              effective=sent_dates(passages), support=check)
        if verdict.ok:
            return {"validation": verdict.as_dict(), "answer": text, "route": "answer", "reason": None,
                    "path": ["validate"]}
        assert last.id is not None  # add_messages gives every message an id
        return {"validation": verdict.as_dict(), "reason": "answer_validation_failed", "answer": None,
                "messages": [RemoveMessage(id=last.id)], "path": ["validate"]}

    return validate


validate = make_validate()
