"""The tools node: runs the tool calls of the last AI message with the scope from state.

`search_policies(query)`: the model chooses only the query; who may read what comes from the
server-resolved scope in state, never from tool arguments. The result's gate becomes the
`tool_signal` the router reads; passages are kept (deduplicated) as the set citations may use.
`escalate_to_human(reason)`: a genuine handoff; sets the reason `user_requested_human`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from graph.answerers.extractive import JudgeReading
from graph.answerers.features import tokens
from graph.answerers.judging import EvidenceScreen
from graph.prompts import format_evidence
from graph.state import ConversationState, PauseCheck, passage_to_state, scope_from_state
from graph.tenant_names import EMPTY, Lexicon, TenantNames, by_organisation, named_passages
from retrieval.conflicts import ConflictReport, negated_scopes
from retrieval.language import detect_language
from retrieval.search import Passage, Searcher, SearchResult

log = logging.getLogger(__name__)


# (question, passages) → the detector's report; see retrieval.conflicts.
ConflictCheck = Callable[[str, Sequence[Passage]], ConflictReport]


# (question, passages) → the sentence an answer would quote first (ExtractiveAnswerer.closest_sentence).
ClosestSentence = Callable[[str, Sequence[Passage]], Awaitable[str | None]]
# (question, passages, floor) → the answer judge's reading of the sentences an answer would quote
# (ExtractiveAnswerer.judged), or None where there is no judge or nothing to quote.
Judged = Callable[[str, Sequence[Passage], float | None], Awaitable[JudgeReading | None]]
# (question, passages, chunk id → a probability the gate already read) → the passages the answer
# judge reads as evidence (LLMAnswerer.screened), or None where there is no judge.
Screen = Callable[[str, Sequence[Passage], Mapping[str, float] | None], Awaitable[EvidenceScreen | None]]
# A question with more known words than this is chatty: its conflicts are judged on what it gets.
CHATTY_TERMS = 6


def make_tools(searcher: Searcher, *, search_timeout_s: float = 20.0, is_paused: PauseCheck | None = None,
               conflict_check: ConflictCheck | None = None, closest_sentence: ClosestSentence | None = None,
               judged: Judged | None = None, screen: Screen | None = None):
    """`screen` (the LLM answerer's): the passages a model is sent are those the answer judge reads
    as evidence; a search that leaves none gets the gate `below_score_floor`, like a question the
    judge reads no passage as answering. The search's trace says which were left out (`evidence`)."""
    tenant_names = TenantNames(searcher.catalog)

    async def tools(state: ConversationState) -> dict[str, Any]:
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or not last.tool_calls:
            raise ValueError("tools: the last message has no tool calls")
        scope = scope_from_state(state["scope"])
        passages = list(state.get("passages") or [])
        searches = list(state.get("searches") or [])
        top_score = state.get("top_score")
        min_score = state.get("min_score")
        signals: list[str] = []
        conflicts: list[dict[str, Any]] = []
        out: list[ToolMessage] = []
        for call in last.tool_calls:
            if call["name"] == "escalate_to_human":
                signals.append("user_requested_human")
                out.append(ToolMessage(content="Handed over to a person.", tool_call_id=call["id"],
                                       name="escalate_to_human"))
                continue
            if call["name"] != "search_policies":
                raise ValueError(f"tools: unknown tool {call['name']!r}")
            query = str(call["args"].get("query") or state["question"])
            if is_paused is not None and await is_paused("tools"):
                searches.append({"query": query, "gate": "retrieval_unavailable", "paused": True})
                signals.append("retrieval_unavailable")
                out.append(ToolMessage(content=format_evidence([], gate="retrieval_unavailable"),
                                       tool_call_id=call["id"], name="search_policies"))
                continue
            started = time.perf_counter()
            try:
                result = await asyncio.wait_for(searcher.search(query, scope), timeout=search_timeout_s)
            except Exception as exc:  # an index outage is an escalation, not a crash
                log.warning("search failed: %s", type(exc).__name__)
                searches.append({"query": query, "gate": "retrieval_unavailable",
                                 "error": type(exc).__name__,
                                 "ms": round((time.perf_counter() - started) * 1000, 2)})
                signals.append("retrieval_unavailable")
                out.append(ToolMessage(content=format_evidence([], gate="retrieval_unavailable"),
                                       tool_call_id=call["id"], name="search_policies"))
                continue
            searches.append({"query": query, **result.trace()})
            found, gate, found_conflicts, reading = await _screen(
                state["question"], result, conflict_check, closest_sentence,
                lexicon=lambda: tenant_names.lexicon(scope.tenant_id), judged=judged)
            if reading is not None:
                searches[-1]["judge"] = reading.trace()
            if screen is not None and gate is None and not found_conflicts and found:
                evidence = await screen(state["question"], found, _gate_read(reading))
                if evidence is not None:
                    searches[-1]["evidence"] = evidence.trace()
                    found = evidence.kept
                    gate = None if found else "below_score_floor"
            if found_conflicts:
                conflicts.extend(found_conflicts)
                signals.append("conflicting_sources")
            known = {p["chunk_id"] for p in passages}
            fresh = [passage_to_state(p) for p in found if p.chunk_id not in known]
            passages.extend(fresh)
            if result.top_score is not None:
                top_score = max(top_score if top_score is not None else result.top_score, result.top_score)
            min_score = result.min_score
            if gate:
                signals.append(gate)
            out.append(ToolMessage(content=format_evidence([passage_to_state(p) for p in found],
                                                           gate=gate),
                                   tool_call_id=call["id"], name="search_policies"))
        signal = next((s for s in ("user_requested_human", "no_eligible_source", "retrieval_unavailable",
                                   "below_score_floor", "conflicting_sources") if s in signals), "ok")
        update: dict[str, Any] = {
            "messages": out, "passages": passages, "searches": searches, "top_score": top_score,
            "min_score": min_score, "tool_signal": signal, "conflicts": conflicts, "tool_rounds": state.get("tool_rounds", 0) + 1,
            "path": ["tools"]}
        if signal == "user_requested_human":
            update["reason"] = "user_requested_human"
        return update

    return tools


async def _screen(question: str, result: SearchResult, conflict_check: ConflictCheck | None,
                  closest: ClosestSentence | None, *, lexicon: Callable[[], Awaitable[Lexicon]] | None = None,
                  judged: Judged | None = None
                  ) -> tuple[list[Passage], str | None, list[dict[str, Any]], JudgeReading | None]:
    """What a search result leaves for the answer: the passages (less those an ordering rule set
    aside, and, for a question that names one of the tenant's companies, only its documents'), the
    gate, the conflicts found among them, and the answer judge's reading of the sentences an answer
    would quote (models/judge): under its threshold, no passage answers what was asked (a neighbouring
    rule, not the one asked about) and the gate is `below_score_floor`. `lexicon`: the tenant's names
    and words, read once the search has passed its gate."""
    found, gate = list(result.passages), result.gate
    conflicts: list[dict[str, Any]] = []
    if gate is not None or not found:
        return found, gate, conflicts, None
    known = await lexicon() if lexicon is not None else EMPTY
    if known.organisations:
        found = [replace(p, organisation=known.organisations.get(p.doc_id)) for p in found]
    # A question that names a company is answered only from its documents: another company's
    # different figure is no conflict for it (nor evidence). One that names none, in a tenant of
    # several, may be asked of each: two organisations' different figures are two answers, given
    # under each one's name, and a conflict is one within an organisation's documents.
    named = named_passages(question, found, known)
    if conflict_check is not None:
        compared = await _conflict_question(question, named, closest)
        overridden: set[str] = set()
        for group in by_organisation(named):
            report = conflict_check(compared, group)
            conflicts += report.as_json()
            overridden |= report.overridden
        # An ordered pair (later effective date, supersedes) is no conflict: quote only the
        # passage that applies.
        found = [p for p in found if p.chunk_id not in overridden]
        named = [p for p in named if p.chunk_id not in overridden]
    reading = None
    if not conflicts:
        found = named
        if judged is not None:
            reading = await judged(question, found, result.min_score)
            if reading is not None and not reading.ok:
                gate = "below_score_floor"
    return found, gate, conflicts, reading


def _gate_read(reading: JudgeReading | None) -> dict[str, float]:
    """Chunk id → the best probability the gate's reading gave one of its sentences."""
    best: dict[str, float] = {}
    for s in reading.sentences if reading is not None else []:
        best[s["chunk_id"]] = max(best.get(s["chunk_id"], 0.0), float(s["probability"]))
    return best


async def _conflict_question(question: str, found: Sequence[Passage], closest: ClosestSentence | None) -> str:
    """What the conflict check compares the passages on. Usually the question itself; for a question
    in another language than the passages (no shared words) or a long chatty one (its words dilute
    the half-the-terms rule), the sentence an answer would quote: a conflict is another document
    giving a different value for exactly that."""
    if closest is None:
        return question
    cross_language = detect_language(question) != found[0].lang
    if not cross_language and (len(tokens(question)) <= CHATTY_TERMS or negated_scopes(question)):
        return question  # a negated scope ("outside trade-show weeks") is read from the question
    sentence = await closest(question, found)
    return sentence or question
