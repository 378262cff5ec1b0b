"""Routers run in place (graph/timings.py inline_router): the same decisions, on the state the node wrote."""

from __future__ import annotations

import asyncio

from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graph.routing import route_after_tools
from graph.timings import inline_router


class _State(TypedDict, total=False):
    tool_signal: str | None
    seen: list[str]


def test_an_inline_router_is_the_router() -> None:
    router = inline_router(route_after_tools)
    assert router.name == "route_after_tools"
    assert router.invoke({"tool_signal": "ok"}) == "agent"
    assert asyncio.run(router.ainvoke({"tool_signal": "below_score_floor"})) == "set_below_score_floor"


def test_a_graph_routes_through_it_on_the_state_the_node_wrote() -> None:
    calls: list[object] = []

    def route(state: _State) -> str:
        calls.append(state.get("tool_signal"))
        return "b" if state.get("tool_signal") == "go" else END

    async def a(state: _State) -> dict[str, object]:
        return {"tool_signal": "go", "seen": ["a"]}

    async def b(state: _State) -> dict[str, object]:
        return {"tool_signal": "stop", "seen": [*state.get("seen", []), "b"]}

    g = StateGraph(_State)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_edge(START, "a")
    g.add_conditional_edges("a", inline_router(route), ["b", END])
    g.add_edge("b", END)

    out = asyncio.run(g.compile().ainvoke({"tool_signal": None}))
    assert out == {"tool_signal": "stop", "seen": ["a", "b"]}
    assert calls == ["go"]  # the node's own write, read fresh
