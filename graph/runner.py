"""ConversationRunner: the one conversation service every surface (CLI, Slack, HTTP) shares.

- `ask` runs one user turn through the graph (thread id = session id) and records it.
- While an escalation of the session is open (a person has not answered yet), a follow-up about it
  (`graph/followup.py`: "any update?", a request for a person, a message close in meaning to the open
  question) does not run the graph: it is appended to the escalation's transcript and the outcome's
  route is `escalate_pending`, so the surface can post it into the escalation thread. Any other
  message is a turn of its own (answered, or escalated on its own), and the reply says which
  happened. That turn replaces the graph's pending interrupt; the admin's reply to the earlier
  escalation is then delivered as a message of its own (`_deliver`), exactly once as before.
- `resume` delivers an admin's reply exactly once per (escalation, message key): the key is recorded
  first, a delivered key returns None, and the graph is resumed only while its interrupt belongs to
  the escalation's turn. Later replies on an answered escalation are delivered as admin messages too.
- `resolve` / `expire` end an escalation once; an unanswered one resumes the graph so the user gets an
  honest closing message.
- Any exception inside a turn becomes route `error` with a fixed message and an escalation: never silence.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command

from graph.followup import FollowUpCheck, follows_up
from graph.messages import abstention, attributed_answer, fixed, user_language
from graph.state import PATH_RESET, AdminReply, EscalationPayload, passage_from_state, scope_to_state
from graph.timings import add_timing, collect_timings
from graph.validate import citations_in
from retrieval.search import Passage
from store.conversations import ANSWERED, OPEN, ConversationStore
from store.records import EscalationRecord, Scope

log = logging.getLogger(__name__)


class EscalationError(LookupError):
    """No such escalation, or it is already closed."""


@dataclass(frozen=True)
class TurnOutcome:
    turn_id: str
    session_id: str
    route: str  # answer | conversation | escalate | admin_answer | escalate_pending | closed | error
    reason: str | None
    answer: str  # what the user is shown: a validated answer, a fixed text, or an admin's attributed answer
    passages: list[Passage] = field(default_factory=list)
    top_score: float | None = None
    escalation: EscalationRecord | None = None
    interrupt: EscalationPayload | None = None
    citations: list[dict[str, object]] = field(default_factory=list)
    language: str = "en"
    trace: dict[str, Any] = field(default_factory=dict)
    # Where the turn's time went, ms by stage (the turn record keeps the same; see graph/timings.py)
    timings: dict[str, float] = field(default_factory=dict)

    def as_json(self, *, qid: str | None = None) -> dict[str, object]:
        """The `cairn ask` / eval shape: route is "answer" (conversation too: nothing escalated) or
        "escalate"; `outcome` is the precise route."""
        answered = self.route in ("answer", "conversation")
        return {"id": qid, "route": "answer" if answered else "escalate", "outcome": self.route,
                "reason": self.reason,
                "top_score": None if self.top_score is None else round(self.top_score, 4),
                "passages": [p.as_json() for p in self.passages], "answer": self.answer,
                "citations": self.citations, "turn_id": self.turn_id, "session_id": self.session_id,
                "escalation_id": self.escalation.escalation_id if self.escalation else None,
                "language": self.language}


def _config(session_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": session_id}}


def _citations(answer: str, passages: list[Passage]) -> list[dict[str, object]]:
    by_id = {p.chunk_id: p for p in passages}
    out: list[dict[str, object]] = []
    for chunk_id in dict.fromkeys(citations_in(answer)):
        p = by_id.get(chunk_id)
        if p is not None:
            out.append({"chunk_id": p.chunk_id, "title": p.title, "version": p.version, "page": p.page,
                        "heading": p.heading, "source_path": p.source_path})
    return out


class ConversationRunner:
    def __init__(self, *, graph: Any, conversations: ConversationStore,
                 on_turn: Callable[[str, str | None, float], None] | None = None,
                 follow_up: FollowUpCheck | None = None) -> None:
        self.graph = graph
        self.conversations = conversations
        # Is a message during an open escalation about it? (graph/followup.py; without it, only a
        # request for a person or a chase such as "any update?" is.)
        self.follow_up = follow_up
        # (route, reason, seconds) after every user turn: the server's metrics listen here.
        self.on_turn = on_turn
        # One turn at a time per session, one delivery at a time per escalation (in this process;
        # across processes the store's idempotency keys decide). Unused locks are dropped.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    # -- a user turn ----------------------------------------------------------------------------

    async def ask(self, *, session_id: str, scope: Scope, question: str, surface: str = "cli",
                  lang: str | None = None, channel: str | None = None, thread_ts: str | None = None,
                  turn_id: str | None = None) -> TurnOutcome:
        turn_id = turn_id or "t-" + uuid.uuid4().hex[:16]
        language = user_language(question, lang)
        started = time.perf_counter()
        async with self._lock(f"session:{session_id}"):
            with collect_timings() as spans:
                try:
                    await self.conversations.get_or_create_session(
                        session_id=session_id, user_id=scope.user_id, tenant_id=scope.tenant_id, channel=channel,
                        thread_ts=thread_ts, surface=surface, lang=lang)
                    pending = await self.conversations.pending_escalation(session_id=session_id)
                    add_timing("session_ms", (time.perf_counter() - started) * 1000)
                    if pending is not None and await follows_up(question, pending, self.follow_up):
                        outcome = await self._append_pending(pending, turn_id, question, language)
                    else:
                        outcome = await self._run_turn(session_id, scope, question, language, turn_id)
                        if pending is not None:
                            outcome = _aside(outcome, pending)
                except Exception:
                    log.exception("turn %s failed", turn_id)
                    outcome = await self._error_outcome(session_id, scope, question, language, turn_id)
                elapsed = time.perf_counter() - started
                timings = {**spans, "total_ms": round(elapsed * 1000, 2)}
                await self._record(outcome, scope, question, surface, timings)
                timings["record_ms"] = round((time.perf_counter() - started) * 1000 - timings["total_ms"], 3)
        outcome = dataclasses.replace(outcome, timings=timings)
        if self.on_turn is not None:
            self.on_turn(outcome.route, outcome.reason, elapsed)
        return outcome

    async def _run_turn(self, session_id: str, scope: Scope, question: str, language: str,
                        turn_id: str) -> TurnOutcome:
        config = _config(session_id)
        turn_input = {
            "messages": [HumanMessage(content=question, id=f"{turn_id}:q")], "path": [PATH_RESET],
            "turn_id": turn_id, "session_id": session_id, "question": question, "language": language,
            "scope": scope_to_state(scope), "passages": [], "top_score": None, "min_score": None,
            "searches": [], "tool_signal": None, "conflicts": [], "tool_rounds": 0, "reason": None,
            "validation": None,
            "answer": None, "route": None, "answerer": None, "human_reply": None}
        started = time.perf_counter()
        # The run's output is the final state (and the interrupt it stopped at), so it is not read back
        # from the checkpointer. Durability "exit": the turn's state is written once, when the run ends
        # or stops at human_review, not after every step; a process that dies mid-turn leaves the
        # session as the previous turn left it, and that turn's question fails visibly anyway.
        values = dict(await self.graph.ainvoke(turn_input, config, durability="exit"))
        add_timing("graph_ms", (time.perf_counter() - started) * 1000)
        interrupts = values.pop("__interrupt__", ())
        if values.get("turn_id") != turn_id:
            raise RuntimeError("the graph state belongs to another turn")
        payload = self._escalation_in(interrupts, turn_id)
        passages = [passage_from_state(p) for p in values.get("passages") or []]
        if payload is not None:
            escalation = await self.conversations.get_escalation(escalation_id=payload["escalation_id"])
            return TurnOutcome(turn_id=turn_id, session_id=session_id, route="escalate", reason=payload["reason"],
                               answer=str(values.get("answer")), passages=passages,
                               top_score=values.get("top_score"), escalation=escalation, interrupt=payload,
                               language=language, trace=_trace(values))
        if values.get("route") == "conversation":
            return TurnOutcome(turn_id=turn_id, session_id=session_id, route="conversation", reason=None,
                               answer=str(values["answer"]), language=language, trace=_trace(values))
        if values.get("route") == "answer" and (values.get("validation") or {}).get("ok"):
            answer = str(values["answer"])
            return TurnOutcome(turn_id=turn_id, session_id=session_id, route="answer", reason=None, answer=answer,
                               passages=passages, top_score=values.get("top_score"),
                               citations=_citations(answer, passages), language=language, trace=_trace(values))
        raise RuntimeError(f"the turn ended without an answer or an escalation (route {values.get('route')!r})")

    async def _append_pending(self, pending: EscalationRecord, turn_id: str, question: str,
                              language: str) -> TurnOutcome:
        await self.conversations.append_to_escalation(escalation_id=pending.escalation_id, author="user",
                                                      text=question)
        escalation = await self.conversations.get_escalation(escalation_id=pending.escalation_id)
        return TurnOutcome(turn_id=turn_id, session_id=pending.session_id, route="escalate_pending",
                           reason=pending.reason, answer=fixed("escalate_pending", language),
                           escalation=escalation, language=language,
                           trace={"path": [], "route_fired": "escalate_pending",
                                  "escalation_id": pending.escalation_id})

    async def _error_outcome(self, session_id: str, scope: Scope, question: str, language: str,
                             turn_id: str) -> TurnOutcome:
        escalation = None
        try:
            escalation = await self.conversations.open_escalation(
                turn_id=turn_id, session_id=session_id, tenant_id=scope.tenant_id, user_id=scope.user_id,
                question=question, reason="internal_error", transcript=f"user: {question}")
        except Exception:
            log.exception("could not open an escalation for failed turn %s", turn_id)
        return TurnOutcome(turn_id=turn_id, session_id=session_id, route="error", reason="internal_error",
                           answer=abstention("internal_error", language), escalation=escalation,
                           language=language, trace={"route_fired": "error"})

    async def _record(self, outcome: TurnOutcome, scope: Scope, question: str, surface: str,
                      timings: dict[str, float]) -> None:
        trace = {**outcome.trace, "surface": surface, "language": outcome.language}
        answerer = trace.get("answerer") or {}
        for search in trace.get("searches") or []:
            for key, ms in (search.get("timings_ms") or {}).items():
                timings[f"search_{key}_ms"] = timings.get(f"search_{key}_ms", 0.0) + float(ms)
        if answerer.get("ms") is not None:
            timings["answer_ms"] = float(answerer["ms"])
        try:
            await self.conversations.write_turn(
                turn_id=outcome.turn_id, session_id=outcome.session_id, user_id=scope.user_id,
                tenant_id=scope.tenant_id, question=question, route=outcome.route, reason=outcome.reason,
                answer=outcome.answer, top_score=outcome.top_score,
                passages=[{"chunk_id": p.chunk_id, "score": round(p.score, 4)} for p in outcome.passages],
                trace=trace, answerer=answerer.get("name"), model=answerer.get("model"),
                prompt_version=answerer.get("prompt_version"), validation=trace.get("validation"),
                timings=timings)
        except Exception:
            log.exception("could not record turn %s", outcome.turn_id)

    # -- a person's side ------------------------------------------------------------------------

    async def resume(self, *, escalation_id: str, reply: AdminReply) -> TurnOutcome | None:
        """Deliver an admin reply to the user. None when this message key was already delivered."""
        if reply.get("type") != "admin_reply":
            raise ValueError(f"resume expects an admin_reply, got {reply.get('type')!r}")
        async with self._lock(f"escalation:{escalation_id}"):
            esc = await self._escalation(escalation_id)
            if esc.status not in (OPEN, ANSWERED):
                raise EscalationError(f"escalation {escalation_id} is already {esc.status}")
            await self.conversations.record_admin_reply(
                escalation_id=escalation_id, message_key=reply["message_key"], admin_id=reply["admin_id"],
                text=reply["text"])
            record = await self.conversations.get_admin_reply(escalation_id=escalation_id,
                                                              message_key=reply["message_key"])
            if record is not None and record.delivered_at:
                return None
            answer = await self._deliver(esc, dict(reply))
            await self.conversations.mark_delivered(escalation_id=escalation_id, message_key=reply["message_key"])
            await self.conversations.mark_answered(escalation_id=escalation_id)
            await self._note(esc.turn_id, "deliveries", {"message_key": reply["message_key"],
                                                          "admin_id": reply["admin_id"]})
            return await self._human_outcome(esc, "admin_answer", answer)

    async def resolve(self, *, escalation_id: str, resolved_by: str) -> TurnOutcome | None:
        """Close once. An unanswered escalation tells the user it closed; otherwise returns None."""
        return await self._close(escalation_id, "resolve", resolved_by)

    async def expire(self, *, escalation_id: str) -> TurnOutcome | None:
        """Expire an unanswered escalation (deadline passed): the user is told honestly."""
        return await self._close(escalation_id, "expired", None)

    async def _close(self, escalation_id: str, kind: str, admin_id: str | None) -> TurnOutcome | None:
        async with self._lock(f"escalation:{escalation_id}"):
            esc = await self._escalation(escalation_id)
            if esc.status not in (OPEN, ANSWERED) or (kind == "expired" and esc.status != OPEN):
                return None
            answer = None
            if esc.status == OPEN:
                reply: dict[str, Any] = {"type": kind, **({"admin_id": admin_id} if admin_id else {})}
                answer = await self._deliver(esc, reply)
            closed = (await self.conversations.resolve(escalation_id=escalation_id, resolved_by=admin_id or "")
                      if kind == "resolve" else await self.conversations.expire(escalation_id=escalation_id))
            if not closed or answer is None:
                return None
            return await self._human_outcome(esc, "closed", answer)

    async def _deliver(self, esc: EscalationRecord, reply: dict[str, Any]) -> str:
        """Resume the graph when its interrupt is this escalation's; otherwise append the message."""
        config = _config(esc.session_id)
        snapshot = await self.graph.aget_state(config)
        payload = self._payload(snapshot, esc.turn_id)
        language = payload["language"] if payload is not None else await self._language(esc)
        if payload is not None:
            try:
                await self.graph.ainvoke(Command(resume=reply), config)
                values = (await self.graph.aget_state(config)).values
                if values.get("answer"):
                    return str(values["answer"])
            except Exception:
                log.exception("resuming escalation %s failed; delivering the reply directly", esc.escalation_id)
        if reply["type"] == "admin_reply":
            text = attributed_answer(admin=reply.get("admin_name") or reply["admin_id"], text=reply["text"],
                                     language=language)
            meta = {"author": "admin", "admin_id": reply["admin_id"], "message_key": reply["message_key"]}
        else:
            text, meta = fixed(reply["type"], language), {"author": "system", "kind": reply["type"]}
        snapshot = await self.graph.aget_state(config)
        if not snapshot.interrupts:  # never disturb an interrupt that belongs to another turn
            try:
                await self.graph.aupdate_state(config, {
                    "messages": [AIMessage(content=text, additional_kwargs={"cairn": meta})],
                    "validation": {"ok": True, "skipped": f"{meta['author']} message"}, "answer": text,
                    "human_reply": None}, as_node="validate")
            except Exception:
                log.exception("could not add the reply to session %s", esc.session_id)
        return text

    async def _human_outcome(self, esc: EscalationRecord, route: str, answer: str) -> TurnOutcome:
        fresh = await self.conversations.get_escalation(escalation_id=esc.escalation_id)
        return TurnOutcome(turn_id=esc.turn_id, session_id=esc.session_id, route=route, reason=esc.reason,
                           answer=answer, top_score=esc.top_score, escalation=fresh,
                           language=await self._language(esc), trace={"route_fired": route})

    async def _escalation(self, escalation_id: str) -> EscalationRecord:
        esc = await self.conversations.get_escalation(escalation_id=escalation_id)
        if esc is None:
            raise EscalationError(f"no escalation {escalation_id!r}")
        return esc

    async def _language(self, esc: EscalationRecord) -> str:
        session = await self.conversations.get_session(session_id=esc.session_id)
        return user_language(esc.question, session.lang if session else None)

    async def _note(self, turn_id: str, key: str, item: dict[str, object]) -> None:
        turn = await self.conversations.get_turn(turn_id=turn_id)
        if turn is None:
            return
        trace = dict(turn.trace)
        trace[key] = [*(trace.get(key) or []), item]  # type: ignore[misc]
        await self.conversations.write_turn(
            turn_id=turn.turn_id, session_id=turn.session_id, user_id=turn.user_id, tenant_id=turn.tenant_id,
            question=turn.question, route=turn.route, reason=turn.reason, answer=turn.answer,
            top_score=turn.top_score, passages=turn.passages, trace=trace, answerer=turn.answerer,
            model=turn.model, prompt_version=turn.prompt_version,
            validation=trace.get("validation"), timings=turn.timings)  # type: ignore[arg-type]

    @staticmethod
    def _payload(snapshot: Any, turn_id: str) -> EscalationPayload | None:
        return ConversationRunner._escalation_in(getattr(snapshot, "interrupts", ()) or (), turn_id)

    @staticmethod
    def _escalation_in(interrupts: Any, turn_id: str) -> EscalationPayload | None:
        """The escalation payload of `turn_id` among a run's (or a snapshot's) interrupts."""
        for item in interrupts or ():
            value = getattr(item, "value", None)
            if isinstance(value, dict) and value.get("type") == "escalation" and value.get("turn_id") == turn_id:
                return cast(EscalationPayload, value)
        return None

    async def pending_payload(self, *, session_id: str) -> EscalationPayload | None:
        """The interrupt the session's graph waits on, if any (for surfaces that re-render it)."""
        snapshot = await self.graph.aget_state(_config(session_id))
        for item in getattr(snapshot, "interrupts", ()) or ():
            if isinstance(item.value, dict) and item.value.get("type") == "escalation":
                return cast(EscalationPayload, item.value)
        return None


def _aside(outcome: TurnOutcome, pending: EscalationRecord) -> TurnOutcome:
    """A new message while a person looks at an earlier question: its reply says what became of it
    (answered on its own, escalated on its own, or a greeting) and that the earlier one is still open."""
    kind = {"answer": "aside_answer", "escalate": "aside_escalate", "conversation": "aside_conversation"}.get(
        outcome.route)
    if kind is None:
        return outcome
    note = fixed(kind, outcome.language)
    trace = {**outcome.trace, "open_escalation": pending.escalation_id}
    return dataclasses.replace(outcome, answer=f"{outcome.answer}\n\n{note}" if kind == "aside_answer"
                               else f"{outcome.answer} {note}", trace=trace)


def _trace(values: dict[str, Any]) -> dict[str, Any]:
    """What `cairn trace` shows. The validation verdict never contains draft text."""
    path = list(values.get("path") or [])
    answerer = values.get("answerer") or {}
    return {"path": path, "route_fired": route_fired(path),
            "reason": values.get("reason"), "searches": values.get("searches") or [],
            "passages": [{"chunk_id": p["chunk_id"], "score": round(float(p.get("score") or 0.0), 4)}
                         for p in values.get("passages") or []],
            "answerer": answerer, "model": answerer.get("model"), "prompt_version": answerer.get("prompt_version"),
            "validation": values.get("validation"), "tool_rounds": values.get("tool_rounds")}


def route_fired(path: list[str]) -> str | None:
    """The decisive edge of a turn, e.g. "tools→set_below_score_floor→force_escalate" or "validate→END"."""
    if "force_escalate" in path:
        i = len(path) - 1 - path[::-1].index("force_escalate")
        start = i - 2 if i >= 2 and path[i - 1].startswith("set_") else i - 1
        return "→".join(path[max(start, 0):i + 1])
    if path and path[-1] == "validate":
        return "validate→END"
    return None
