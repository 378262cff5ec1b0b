"""Routers: read state, return a node name. Anything unexpected raises instead of guessing a route."""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage

from graph.state import ConversationState


def route_after_agent(state: ConversationState) -> Literal["tools", "validate"]:
    last = state["messages"][-1]
    if not isinstance(last, AIMessage):
        raise ValueError(f"route_after_agent: last message is a {type(last).__name__}")
    return "tools" if last.tool_calls else "validate"


def route_after_tools(state: ConversationState) -> Literal[
        "agent", "set_no_eligible_source", "set_retrieval_unavailable", "set_below_score_floor",
        "set_conflicting_sources", "force_escalate"]:
    signal = state.get("tool_signal")
    if signal == "ok":
        return "agent"
    if signal == "no_eligible_source":
        return "set_no_eligible_source"
    if signal == "retrieval_unavailable":
        return "set_retrieval_unavailable"
    if signal == "below_score_floor":
        return "set_below_score_floor"
    if signal == "conflicting_sources":
        return "set_conflicting_sources"
    if signal == "user_requested_human":
        return "force_escalate"
    raise ValueError(f"route_after_tools: unknown tool signal {signal!r}")


def route_after_validate(state: ConversationState) -> Literal["force_escalate", "__end__"]:
    validation = state.get("validation")
    if not isinstance(validation, dict) or "ok" not in validation:
        raise ValueError("route_after_validate: no validation verdict")
    return "__end__" if validation["ok"] else "force_escalate"
