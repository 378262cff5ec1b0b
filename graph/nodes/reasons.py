"""Reason-stamping nodes on the tool edges: the reason is set by the route taken, not by a model."""

from __future__ import annotations

from typing import Any

from graph.state import ConversationState


async def set_no_eligible_source(state: ConversationState) -> dict[str, Any]:
    return {"reason": "no_eligible_source", "path": ["set_no_eligible_source"]}


async def set_retrieval_unavailable(state: ConversationState) -> dict[str, Any]:
    return {"reason": "retrieval_unavailable", "path": ["set_retrieval_unavailable"]}


async def set_conflicting_sources(state: ConversationState) -> dict[str, Any]:
    return {"reason": "conflicting_sources", "path": ["set_conflicting_sources"]}


async def set_below_score_floor(state: ConversationState) -> dict[str, Any]:
    return {"reason": "below_score_floor", "path": ["set_below_score_floor"]}
