"""force_escalate (the fixed abstention) and human_review (the interrupt that waits for a person).

human_review runs again from its first line when resumed, so everything before `interrupt()` is
safe to repeat: the escalation row's id is derived from the turn id and inserted OR IGNORE, and the
check for a restricted document that would have answered (graph/restricted.py) runs only while the
row does not exist yet.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import interrupt

from graph.messages import REASONS, abstention
from graph.nodes.agent import graph_tool_call
from graph.restricted import RESTRICTABLE, RestrictedCheck
from graph.state import ConversationState, EscalationPayload, author_of, passage_summary, scope_from_state
from store.conversations import ConversationStore, escalation_id_for

TRANSCRIPT_MESSAGES = 6
TRANSCRIPT_CHARS = 400


async def force_escalate(state: ConversationState) -> dict[str, Any]:
    reason = state.get("reason")
    if reason not in REASONS:
        raise ValueError(f"force_escalate: unknown reason {reason!r}")
    paused = reason == "retrieval_unavailable" and any(s.get("paused") for s in state.get("searches") or [])
    text = abstention("retrieval_paused" if paused else reason, state.get("language", "en"))
    messages: list[Any] = []
    if reason != "user_requested_human":  # that one already has its escalate_to_human exchange
        signal = graph_tool_call("escalate_to_human", {"reason": reason})
        messages += [signal, ToolMessage(content=f"Escalated: {reason}.", name="escalate_to_human",
                                         tool_call_id=signal.tool_calls[0]["id"])]
    messages.append(AIMessage(content=text, additional_kwargs={
        "cairn": {"author": "system", "kind": "abstention", "reason": reason}}))
    return {"messages": messages, "answer": text, "route": "escalate", "path": ["force_escalate"]}


def transcript_summary(state: ConversationState) -> str:
    """The last few user questions and replies the user actually saw (no tool traffic, no drafts)."""
    lines = []
    for m in state.get("messages") or []:
        text = m.content if isinstance(m.content, str) else str(m.text)
        if isinstance(m, HumanMessage):
            lines.append(f"user: {text}")
        elif isinstance(m, AIMessage) and not m.tool_calls and author_of(m) in ("system", "admin", "answerer"):
            lines.append(f"cairn: {text}")
    return "\n".join(line[:TRANSCRIPT_CHARS] for line in lines[-TRANSCRIPT_MESSAGES:])


def escalation_payload(state: ConversationState) -> EscalationPayload:
    scope = state["scope"]
    conflicts = list(state.get("conflicts") or []) if state.get("reason") == "conflicting_sources" else []
    # chunk id → the sentence in it that contradicts another document, for the side-by-side view
    contested = {chunk: sentence for c in conflicts for chunk, sentence in zip(c["chunks"], c["sentences"], strict=True)}
    return EscalationPayload(
        type="escalation", escalation_id=escalation_id_for(state["turn_id"]), reason=str(state["reason"]),
        question=state["question"], transcript=transcript_summary(state),
        passages=[passage_summary(p, conflict=contested.get(p["chunk_id"])) for p in state.get("passages") or []],
        top_score=state.get("top_score"), session_id=state["session_id"], turn_id=state["turn_id"],
        user_id=scope["user_id"], tenant_id=scope["tenant_id"], language=state.get("language", "en"),
        conflicts=conflicts)


def make_human_review(conversations: ConversationStore, *, deadline_hours: float | None = None,
                      restricted: RestrictedCheck | None = None):
    async def human_review(state: ConversationState) -> dict[str, Any]:
        payload = escalation_payload(state)
        known = await conversations.get_escalation(escalation_id=payload["escalation_id"])
        if known is not None:  # resumed: the row (and what it recorded) is already there
            payload["restricted"] = [p for p in known.passages if p.get("restricted")]  # type: ignore[misc]
        elif restricted is not None and payload["reason"] in RESTRICTABLE:
            payload["restricted"] = await restricted(payload["question"], scope_from_state(state["scope"]))
        await conversations.open_escalation(
            turn_id=payload["turn_id"], session_id=payload["session_id"], tenant_id=payload["tenant_id"],
            user_id=payload["user_id"], question=payload["question"], reason=payload["reason"],
            transcript=payload["transcript"],
            passages=[dict(p) for p in [*payload["passages"], *payload.get("restricted", [])]],
            top_score=payload["top_score"], deadline_hours=deadline_hours)
        reply = interrupt(payload)
        kind = reply.get("type") if isinstance(reply, dict) else None
        if kind == "admin_reply":
            missing = [k for k in ("admin_id", "text", "message_key") if not reply.get(k)]
            if missing:
                raise ValueError(f"human_review: admin_reply without {', '.join(missing)}")
        elif kind not in ("resolve", "expired"):
            raise ValueError(f"human_review: unknown resume type {kind!r}")
        return {"human_reply": dict(reply), "path": ["human_review"]}

    return human_review
