"""The validate node: a draft reaches END only if every factual sentence cites a passage sent this turn,
and every figure in it (number, amount, percentage, date) is one that passage states.

A draft a model wrote in its own words (the LLM answerer's) must also be supported sentence by
sentence: each factual sentence is read by the answer judge against the sentences of the chunks it
cites, and one that none of them reads as stating (probability under the judge's scope floor)
fails as `unsupported_sentence`. An extractive draft quotes the chunks verbatim and is not read.

A failed draft is removed from the conversation (RemoveMessage) before force_escalate writes the
abstention, so it is never shown, never stored as an answer, and never fed back to a model; the
verdict (kinds of problems, no draft text) is what the trace keeps. Messages written by a person
(admin replies) or by Cairn's fixed texts are not drafts and pass unvalidated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage, RemoveMessage

from graph.answerers.candidates import answer_candidates
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


def make_validate(judge: Any = None) -> Callable[[ConversationState], Awaitable[dict[str, Any]]]:
    """The validate node; `judge` (models.judge.Judge) reads a model's draft for support."""

    async def validate_node(state: ConversationState) -> dict[str, Any]:
        return await validate(state, judge=judge)

    return validate_node


def support_check(judge: Any, passages: list[dict[str, Any]]) -> Callable[[str, list[str]], bool]:
    """`supported(sentence, chunk_ids)` for `validate_answer`: a candidate sentence of a cited chunk
    that the judge reads as stating it, read as a question is read against an answer."""
    from models.judge import Candidate

    by_id = {p["chunk_id"]: p for p in passages}

    def supported(sentence: str, chunk_ids: list[str]) -> bool:
        candidates = [Candidate(passage=0, heading=str(by_id[c].get("heading") or ""), text=text)
                      for c in chunk_ids if c in by_id for text in answer_candidates(str(by_id[c].get("text") or ""))]
        read = judge.read(sentence, candidates)
        return bool(len(read)) and float(max(read)) >= judge.scope_floor

    return supported


async def validate(state: ConversationState, *, judge: Any = None) -> dict[str, Any]:
    last = state["messages"][-1]
    if not isinstance(last, AIMessage) or last.tool_calls:
        raise ValueError("validate: expected a final AI message")
    author = author_of(last)
    if author in ("admin", "system"):
        return {"validation": {"ok": True, "skipped": f"{author} message"}, "path": ["validate"]}
    text = last.content if isinstance(last.content, str) else str(last.text)
    passages = state.get("passages") or []
    allowed = [p["chunk_id"] for p in passages]
    by_model = (last.additional_kwargs.get("cairn") or {}).get("answerer") == "llm"
    supported = support_check(judge, passages) if judge is not None and by_model else None
    verdict = await asyncio.to_thread(validate_answer, text, allowed, texts=sent_texts(passages),
                                      effective=sent_dates(passages), supported=supported)
    if verdict.ok:
        return {"validation": verdict.as_dict(), "answer": text, "route": "answer", "reason": None,
                "path": ["validate"]}
    assert last.id is not None  # add_messages gives every message an id
    return {"validation": verdict.as_dict(), "reason": "answer_validation_failed", "answer": None,
            "messages": [RemoveMessage(id=last.id)], "path": ["validate"]}
