"""The graph's state and the typed values that cross its boundary (interrupt payload, resume values).

State is checkpointed (SQLite) after every step, so it holds only plain data: messages, dicts and
lists. Passages are stored as dicts (`passage_to_state`) and rebuilt as `retrieval.search.Passage`
when needed. Fields without a reducer are per turn: the runner resets them in each turn's input.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, fields
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from retrieval.search import Passage
from store.records import Scope

PATH_RESET = "__reset__"

# An operator's kill switch, e.g. bot.controls.Controls.is_paused: "llm" or "tools" → paused?
PauseCheck = Callable[[str], Awaitable[bool]]


def extend_path(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Nodes visited this turn, in order. A list starting with PATH_RESET starts a new turn."""
    if right and right[0] == PATH_RESET:
        return list(right[1:])
    return [*(left or []), *(right or [])]


class ScopeState(TypedDict):
    user_id: str
    tenant_id: str
    groups: list[str]
    audience: str
    is_admin: bool
    display_name: str | None


class AdminReply(TypedDict):
    """Resume value: an admin's answer, delivered to the user attributed to the admin."""

    type: Literal["admin_reply"]
    admin_id: str
    admin_name: str
    text: str
    message_key: str  # idempotency key, e.g. the Slack message ts


class CloseReply(TypedDict):
    """Resume value: the escalation ends without a written answer."""

    type: Literal["resolve", "expired"]
    admin_id: NotRequired[str]


HumanReply = AdminReply | CloseReply


class PassageSummary(TypedDict):
    chunk_id: str
    doc_id: str
    version: str
    title: str
    heading: str
    source_path: str
    page: int | None
    score: float
    owner: NotRequired[str | None]
    effective_at: NotRequired[str | None]
    conflict: NotRequired[str | None]  # the sentence that contradicts another document, if any
    restricted: NotRequired[bool]  # of a document the asker may not read (graph/restricted.py)


class EscalationPayload(TypedDict):
    """The interrupt value: everything a person needs to answer, without reading the graph."""

    type: Literal["escalation"]
    escalation_id: str
    reason: str
    question: str
    transcript: str
    passages: list[PassageSummary]
    top_score: float | None
    session_id: str
    turn_id: str
    user_id: str
    tenant_id: str
    language: str
    conflicts: NotRequired[list[dict[str, Any]]]  # conflicting_sources: what contradicts what
    # passages of documents the asker may not read that would have answered (graph/restricted.py);
    # for the people handling the escalation only
    restricted: NotRequired[list[PassageSummary]]


class ConversationState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    path: Annotated[list[str], extend_path]
    # identity and turn
    turn_id: str
    session_id: str
    question: str
    language: str
    scope: ScopeState
    # retrieval (per turn)
    passages: list[dict[str, Any]]  # every passage sent to the answerer this turn
    top_score: float | None
    min_score: float | None
    searches: list[dict[str, Any]]  # one trace per search this turn
    # ok | no_eligible_source | retrieval_unavailable | below_score_floor | conflicting_sources | user_requested_human
    tool_signal: str | None
    conflicts: list[dict[str, Any]]  # per turn: conflicting values among the passages (see retrieval.conflicts)
    tool_rounds: int
    # outcome (per turn)
    reason: str | None
    validation: dict[str, Any] | None
    answer: str | None  # only ever text the user is shown
    route: str | None
    answerer: dict[str, Any] | None
    human_reply: dict[str, Any] | None


def scope_to_state(scope: Scope) -> ScopeState:
    return ScopeState(user_id=scope.user_id, tenant_id=scope.tenant_id, groups=sorted(scope.groups),
                      audience=scope.audience, is_admin=scope.is_admin, display_name=scope.display_name)


def scope_from_state(raw: ScopeState) -> Scope:
    return Scope(user_id=raw["user_id"], tenant_id=raw["tenant_id"], groups=frozenset(raw["groups"]),
                 audience=raw.get("audience", "staff"), is_admin=bool(raw.get("is_admin")),
                 display_name=raw.get("display_name"))


_PASSAGE_FIELDS = {f.name for f in fields(Passage)}


def passage_to_state(passage: Passage) -> dict[str, Any]:
    return asdict(passage)


def passage_from_state(raw: dict[str, Any]) -> Passage:
    return Passage(**{k: v for k, v in raw.items() if k in _PASSAGE_FIELDS})


def passage_summary(raw: dict[str, Any], *, conflict: str | None = None) -> PassageSummary:
    return PassageSummary(chunk_id=raw["chunk_id"], doc_id=raw["doc_id"], version=raw["version"],
                          title=raw["title"], heading=raw["heading"], source_path=raw["source_path"],
                          page=raw.get("page"), score=round(float(raw.get("score") or 0.0), 4),
                          owner=raw.get("owner"), effective_at=raw.get("effective_at"), conflict=conflict)


def author_of(message: Any) -> str | None:
    """Who wrote an AI message: "answerer" (a draft), "admin" (a person) or "system" (fixed text)."""
    meta = getattr(message, "additional_kwargs", {}) or {}
    cairn = meta.get("cairn") or {}
    return cairn.get("author") if isinstance(cairn, dict) else None
