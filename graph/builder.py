"""Builds and compiles the conversation graph. Call inside async startup: the SQLite checkpointer
needs a running event loop.

    agent          --tool_calls present------->  tools
    agent          --no tool_calls------------>  validate
    agent          --conversation (hi, thanks)->  validate  (a fixed reply; no search)
    tools          --NO_ELIGIBLE_SOURCE------->  set_no_eligible_source    ─► force_escalate
    tools          --RETRIEVAL_UNAVAILABLE---->  set_retrieval_unavailable ─► force_escalate
    tools          --BELOW_SCORE_FLOOR-------->  set_below_score_floor     ─► force_escalate
    tools          --CONFLICTING_SOURCES------>  set_conflicting_sources   ─► force_escalate
    tools          --USER_REQUESTED_HUMAN----->  force_escalate
    tools          --otherwise---------------->  agent
    validate       --citations failed--------->  force_escalate
    validate       --otherwise---------------->  END
    force_escalate ---------------------------->  human_review   (interrupt here)
    human_review   ---------------------------->  agent          (after the admin's reply)

The thread id is the conversation (session) id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from graph.answerers import Answerer
from graph.nodes.agent import make_agent
from graph.nodes.escalate import force_escalate, make_human_review
from graph.nodes.reasons import (
    set_below_score_floor,
    set_conflicting_sources,
    set_no_eligible_source,
    set_retrieval_unavailable,
)
from graph.nodes.tools import ConflictCheck, make_tools
from graph.nodes.validate import make_validate
from graph.restricted import restricted_passages
from graph.routing import route_after_agent, route_after_tools, route_after_validate
from graph.state import ConversationState, PauseCheck
from graph.timings import inline_router, timed_call, timed_node
from retrieval.search import Searcher
from store.conversations import ConversationStore


def build_graph(checkpointer: BaseCheckpointSaver | None, *, searcher: Searcher, answerer: Answerer,
                conversations: ConversationStore, escalation_deadline_hours: float | None = None,
                search_timeout_s: float = 20.0, max_tool_rounds: int = 3,
                is_paused: PauseCheck | None = None, conflict_check: ConflictCheck | None = None) -> Any:
    """`is_paused` is the operator's kill switch: "tools" paused → retrieval_unavailable (the user is told
    lookups are paused); "llm" paused → the answerer's fallback (extractive) drafts instead.
    `conflict_check(question, passages)` holds answers whose sources disagree (conflicting_sources).
    An answerer with an evidence screen and a support check (the LLM answerer with the answer judge)
    is sent only the passages the judge reads as evidence, and its drafts' sentences must be
    supported by the chunks they cite."""
    g = StateGraph(ConversationState)
    extractive = answerer if hasattr(answerer, "closest_sentence") else answerer.fallback
    nodes: dict[str, Callable[[ConversationState], Awaitable[dict[str, Any]]]] = {
        "agent": make_agent(answerer, max_tool_rounds=max_tool_rounds, is_paused=is_paused),
        "tools": make_tools(searcher, search_timeout_s=search_timeout_s, is_paused=is_paused,
                            conflict_check=timed_call("conflicts", conflict_check) if conflict_check else None,
                            closest_sentence=getattr(extractive, "closest_sentence", None),
                            judged=getattr(extractive, "judged", None), screen=getattr(answerer, "screened", None)),
        "validate": make_validate(support=getattr(answerer, "support_check", None)),
        "set_no_eligible_source": set_no_eligible_source,
        "set_retrieval_unavailable": set_retrieval_unavailable,
        "set_below_score_floor": set_below_score_floor,
        "set_conflicting_sources": set_conflicting_sources,
        "force_escalate": force_escalate,
        "human_review": make_human_review(conversations, deadline_hours=escalation_deadline_hours,
                                          restricted=restricted_passages(searcher)),
    }
    for name, node in nodes.items():  # each node reports its time to the turn (graph/timings.py)
        # (LangGraph's node protocol names the state parameter; a Callable type cannot say so)
        g.add_node(name, timed_node(name, node))  # type: ignore[call-overload]

    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", inline_router(route_after_agent), ["tools", "validate"])
    g.add_conditional_edges("tools", inline_router(route_after_tools),
                            ["agent", "set_no_eligible_source", "set_retrieval_unavailable", "set_below_score_floor",
                             "set_conflicting_sources", "force_escalate"])
    g.add_edge("set_no_eligible_source", "force_escalate")
    g.add_edge("set_retrieval_unavailable", "force_escalate")
    g.add_edge("set_conflicting_sources", "force_escalate")
    g.add_edge("set_below_score_floor", "force_escalate")
    g.add_conditional_edges("validate", inline_router(route_after_validate), ["force_escalate", END])
    g.add_edge("force_escalate", "human_review")
    g.add_edge("human_review", "agent")
    return g.compile(checkpointer=checkpointer)
