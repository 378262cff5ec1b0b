"""The agent node: decides the next move of a turn, by graph logic first and the answerer second.

- A new user message: graph logic decides the first move itself. Conversation that asks nothing
  ("hi", "thanks!", "ok cool", "what can you do?": graph/intent.py) gets its fixed reply at once: no
  search, no escalation. Otherwise the first tool call: `escalate_to_human` when the user asks for a
  person (graph/intent.py), else `search_policies` with the question. Retrieval therefore runs on
  every question, whatever an LLM would have chosen.
- A tool result: the answerer drafts (or, an LLM, asks for another tool).
- A human's resume value (set by human_review): deliver the admin's answer attributed to them, or the
  fixed text for a closed / expired escalation. These messages are marked as not drafts, so the
  validator passes them through: an admin reply is a person's answer, not Cairn's.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from graph.answerers import Answerer, AnswerRequest
from graph.intent import conversation_intent, wants_human
from graph.messages import attributed_answer, fixed
from graph.state import ConversationState, PauseCheck, passage_from_state


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def graph_tool_call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": new_call_id(), "type": "tool_call"}],
                     additional_kwargs={"cairn": {"author": "graph"}})


def make_agent(answerer: Answerer, *, max_tool_rounds: int = 3, is_paused: PauseCheck | None = None):
    async def agent(state: ConversationState) -> dict[str, Any]:
        reply = state.get("human_reply")
        if reply:
            return _deliver_human_reply(state, reply)
        last = state["messages"][-1]
        if isinstance(last, HumanMessage):
            question = state["question"]
            intent = conversation_intent(question)
            if intent is not None:
                return _converse(intent, state.get("language", "en"))
            if wants_human(question):
                move = graph_tool_call("escalate_to_human", {"reason": "the user asked for a person"})
            else:
                move = graph_tool_call("search_policies", {"query": question})
            return {"messages": [move], "path": ["agent"]}
        if isinstance(last, ToolMessage):
            request = AnswerRequest(
                question=state["question"], language=state.get("language", "en"),
                passages=[passage_from_state(p) for p in state.get("passages") or []],
                min_score=state.get("min_score"), messages=state["messages"],
                allow_tools=state.get("tool_rounds", 0) < max_tool_rounds)
            active = answerer
            if answerer.fallback is not None and is_paused is not None and await is_paused("llm"):
                active = answerer.fallback  # an operator paused the LLM: extractive answers meanwhile
            started = time.perf_counter()
            draft = await active.respond(request)
            ms = round((time.perf_counter() - started) * 1000, 2)
            info = {"name": active.name, "model": active.model, "prompt_version": active.prompt_version,
                    "ms": ms, **draft.info}
            return {"messages": [draft.message], "answerer": info, "path": ["agent"]}
        raise ValueError(f"agent: no move after a {type(last).__name__}")

    return agent


def _converse(intent: str, language: str) -> dict[str, Any]:
    """The fixed reply to conversation; validate passes it through (not a draft) and the turn ends."""
    text = fixed(intent, language)
    meta = {"author": "system", "kind": "conversation", "intent": intent}
    return {"messages": [AIMessage(content=text, additional_kwargs={"cairn": meta})], "answer": text,
            "route": "conversation", "reason": None, "path": ["agent"]}


def _deliver_human_reply(state: ConversationState, reply: dict[str, Any]) -> dict[str, Any]:
    language = state.get("language", "en")
    kind = reply.get("type")
    if kind == "admin_reply":
        text = attributed_answer(admin=reply.get("admin_name") or reply["admin_id"], text=reply["text"],
                                 language=language)
        meta = {"author": "admin", "admin_id": reply["admin_id"], "message_key": reply["message_key"]}
        route = "admin_answer"
    elif kind in ("resolve", "expired"):
        text = fixed(kind, language)
        meta = {"author": "system", "kind": kind}
        route = "closed"
    else:
        raise ValueError(f"agent: unknown human reply type {kind!r}")
    return {"messages": [AIMessage(content=text, additional_kwargs={"cairn": meta})], "answer": text,
            "route": route, "human_reply": None, "path": ["agent"]}
