"""`cairn ask`, `cairn chat`, `cairn escalations`, `cairn reply`, `cairn resolve`, `cairn trace`:
full turns through the graph, and the escalation queue, from a terminal."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot.cli.common import CommandError, emit_json, local_services, resolve_as
from bot.cli.parsers import add_command
from bot.cli.proposals import file_answer, filed_line
from bot.services import escalation_desk, open_store, slack_notifier
from bot.settings import Settings
from store.untrusted import clean_text, decode

if TYPE_CHECKING:
    from bot.services import Services
    from escalations.desk import Reply
    from graph.runner import TurnOutcome
    from store.proposals import ProposalRecord
    from store.records import EscalationRecord, Scope, TurnRecord

CHAT_HELP = """\
Type a question to ask it as the current user. Commands:
  /escalations          open escalations
  /reply ID text        answer an escalation as the current user (the user sees it); after /as USER
                        only an admin of the access file may, as with `cairn reply --as USER`
  /resolve ID           close an escalation (the same rule)
  /as USER              ask (and answer) as another user from the access file (/as alone: the local user)
  /new                  start a new conversation
  /help                 this help
  /quit                 leave"""


def register(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "ask", ask, help="one full turn through the graph: a cited answer or an escalation")
    p.add_argument("question", metavar="Q")
    p.add_argument("--as", dest="as_user", metavar="USER", help="ask as this user from the access file")
    p.add_argument("--session", metavar="ID", help="continue this conversation (default: a new one)")

    p = add_command(sub, "chat", chat, json=False,
                    help="interactive console: ask, see escalations, answer them as an admin")
    p.add_argument("--as", dest="as_user", metavar="USER")

    p = add_command(sub, "escalations", escalations, help="the escalation queue")
    p.add_argument("--open", action="store_true", help="only those not yet closed")

    p = add_command(sub, "reply", reply, help="answer an escalation as an admin (resumes the conversation)")
    p.add_argument("escalation_id", metavar="ID")
    p.add_argument("text")
    p.add_argument("--as", dest="as_user", metavar="ADMIN", help="reply as this admin (default: local)")
    p.add_argument("--key", help="idempotency key: the same key is delivered once (default: new)")
    p.add_argument("--propose", action="store_true",
                   help="also file this answer for the document owner's approval (`cairn proposals`)")

    p = add_command(sub, "resolve", resolve, help="close an escalation")
    p.add_argument("escalation_id", metavar="ID")
    p.add_argument("--as", dest="as_user", metavar="ADMIN")
    p.add_argument("--propose", action="store_true",
                   help="file its last admin answer for the document owner's approval (`cairn proposals`)")

    p = add_command(sub, "trace", trace,
                    help="what happened in a turn: route, chunks and scores, answerer, validation")
    p.add_argument("turn_id", metavar="TURN_ID")


async def run_turn_json(services: Services, question: str, scope: Scope, qid: str | None) -> dict[str, object]:
    """One turn in a fresh session, in the `ask` / eval JSON shape (for `cairn eval`)."""
    outcome = await services.runner.ask(session_id=f"eval-{uuid.uuid4().hex[:12]}", scope=scope,
                                        question=question, surface="eval")
    return outcome.as_json(qid=qid)


# -- ask and chat ---------------------------------------------------------------------------------


async def ask(args: argparse.Namespace, settings: Settings) -> int:
    if not args.question.strip():
        raise CommandError("the question is empty")
    async with local_services(settings) as services:
        scope = resolve_as(services, args.as_user)
        session = args.session or f"cli-{uuid.uuid4().hex[:12]}"
        outcome = await services.runner.ask(session_id=session, scope=scope, question=args.question, surface="cli")
    if args.json:
        emit_json(outcome.as_json(qid=uuid.uuid4().hex[:8]))
    else:
        print(render_outcome(outcome))
    return 0


def render_outcome(outcome: TurnOutcome) -> str:
    lines = [outcome.answer]
    if outcome.citations:
        lines.append("")
        for c in outcome.citations:
            page = f", p.{c['page']}" if c.get("page") else ""
            lines.append(f"  [{c['chunk_id']}] {c['title']} {c['version']}{page} — {c['heading']} ({c['source_path']})")
    if outcome.escalation is not None and outcome.route in ("escalate", "escalate_pending", "error"):
        lines.append(f"\n  (escalation {outcome.escalation.escalation_id}: {outcome.reason}; "
                     f"answer it with `cairn reply {outcome.escalation.escalation_id} \"…\"`)")
    lines.append(f"  (turn {outcome.turn_id}, session {outcome.session_id})")
    return "\n".join(lines)


async def chat(args: argparse.Namespace, settings: Settings) -> int:
    from graph.runner import EscalationError

    interactive = sys.stdin.isatty()
    async with local_services(settings) as services:
        state = {"as": args.as_user, "scope": resolve_as(services, args.as_user),
                 "session": f"chat-{uuid.uuid4().hex[:12]}"}
        if interactive:
            print(f"Cairn console, asking as {state['scope'].display_name or state['scope'].user_id}. "
                  "Type /help for commands.")
        while True:
            line = await _read_line(interactive)
            if line is None:
                break
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                try:
                    if not await _chat_command(services, state, line, print):
                        break
                except (CommandError, EscalationError, ValueError) as exc:
                    print(f"! {exc}")
                continue
            outcome = await services.runner.ask(session_id=state["session"], scope=state["scope"],
                                                question=line, surface="console")
            print(("cairn> " if interactive else "") + render_outcome(outcome))
    return 0


async def _read_line(interactive: bool) -> str | None:
    try:
        # Text from outside is made safe here: invalid UTF-8 and lone surrogates become U+FFFD.
        if interactive:
            return clean_text(await asyncio.to_thread(input, "you> "))
        raw = await asyncio.to_thread(getattr(sys.stdin, "buffer", sys.stdin).readline)
        line = decode(raw) if isinstance(raw, bytes) else clean_text(raw)
        return line if line else None
    except EOFError:
        return None


async def _chat_command(services: Services, state: dict, line: str, out: Callable[[str], None]) -> bool:
    command, _, rest = line.partition(" ")
    rest = rest.strip()
    if command in ("/quit", "/exit"):
        return False
    if command == "/help":
        out(CHAT_HELP)
    elif command == "/escalations":
        records = await services.conversations.list_escalations(open_only=True)
        out("\n".join(_escalation_line(e) for e in records) or "no open escalations")
    elif command == "/reply":
        escalation_id, _, text = rest.partition(" ")
        if not escalation_id or not text.strip():
            raise CommandError("usage: /reply ID text")
        admin = _admin_scope(services, state["as"])  # the access file's rule, as `cairn reply --as`
        result = await _reply(services, admin, escalation_id, text, None)
        out(f"→ user receives: {result.outcome.answer}" if result.outcome else "(already delivered)")
    elif command == "/resolve":
        if not rest:
            raise CommandError("usage: /resolve ID")
        admin = _admin_scope(services, state["as"])
        desk = escalation_desk(services, slack_notifier(services))
        before = await desk.get(rest)
        if before is None:
            raise CommandError(f"no escalation {rest!r}")
        if not desk.may_handle(admin, before):
            raise CommandError(f"{admin.display_name or admin.user_id} may not resolve escalation {rest}")
        closing = await desk.resolve(rest, admin_id=admin.user_id)
        out(f"resolved {rest}" if closing.result == "done" else f"{rest} was already closed")
    elif command == "/as":
        state["scope"] = resolve_as(services, rest or None)
        state["as"] = rest or None
        state["session"] = f"chat-{uuid.uuid4().hex[:12]}"
        out(f"now asking as {state['scope'].display_name or state['scope'].user_id} (new conversation)")
    elif command == "/new":
        state["session"] = f"chat-{uuid.uuid4().hex[:12]}"
        out("new conversation")
    else:
        raise CommandError(f"unknown command {command}; try /help")
    return True


# -- the escalation queue -------------------------------------------------------------------------


def _admin_scope(services: Services, as_user: str | None) -> Scope:
    scope = resolve_as(services, as_user)
    if as_user is not None and not scope.is_admin and services.access.admins_listed:
        raise CommandError(f"{as_user} is not an admin in the access file")
    return scope


async def _reply(services: Services, admin: Scope, escalation_id: str, text: str, key: str | None) -> Reply:
    desk = escalation_desk(services, slack_notifier(services))
    escalation = await desk.get(escalation_id)
    if escalation is not None and not desk.may_handle(admin, escalation):
        raise CommandError(f"{admin.display_name or admin.user_id} may not answer escalation {escalation_id}")
    return await desk.reply(escalation_id, admin_id=admin.user_id, admin_name=admin.display_name or admin.user_id,
                            text=text, message_key=key or f"cli-{uuid.uuid4().hex[:12]}", written_elsewhere=True)


async def _propose(services: Services, admin: Scope, escalation_id: str, text: str | None) -> ProposalRecord:
    return await file_answer(services, escalation_id=escalation_id, admin=admin, text=text)


def _escalation_line(e: EscalationRecord) -> str:
    return (f"{e.escalation_id}  {e.status:<8} {e.reason:<24} {e.created_at[:16]}  {e.user_id}: "
            f"{e.question[:70]}")


def _escalation_json(e: EscalationRecord) -> dict[str, object]:
    return {"escalation_id": e.escalation_id, "status": e.status, "reason": e.reason, "question": e.question,
            "user_id": e.user_id, "tenant_id": e.tenant_id, "session_id": e.session_id, "turn_id": e.turn_id,
            "top_score": e.top_score, "passages": e.passages, "transcript": e.transcript,
            "created_at": e.created_at, "first_reply_at": e.first_reply_at, "closed_at": e.closed_at,
            "deadline_at": e.deadline_at, "claimed_by": e.claimed_by, "resolved_by": e.resolved_by,
            "kind": e.kind, "topic": e.topic, "channel": e.channel, "thread_ts": e.thread_ts}


async def escalations(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:  # a read: works while the server holds the index
        records = await store.conversations.list_escalations(open_only=args.open)
    if args.json:
        emit_json([_escalation_json(e) for e in records])
    elif not records:
        print("no open escalations" if args.open else "no escalations")
    else:
        for e in records:
            print(_escalation_line(e))
    return 0


async def reply(args: argparse.Namespace, settings: Settings) -> int:
    from graph.runner import EscalationError

    if not args.text.strip():
        raise CommandError("the reply is empty")
    async with local_services(settings, warm=False) as services:
        admin = _admin_scope(services, args.as_user)
        try:
            result = await _reply(services, admin, args.escalation_id, args.text, args.key)
        except EscalationError as exc:
            raise CommandError(str(exc)) from exc
        proposal = await _propose(services, admin, args.escalation_id, args.text) if args.propose else None
    outcome = result.outcome
    if args.json:
        emit_json({"escalation_id": args.escalation_id, "delivered": outcome is not None, "relay": result.result,
                   "relay_error": result.error, **(outcome.as_json() if outcome else {}),
                   **({"proposal": proposal.as_json()} if proposal else {})})
        return 0
    if proposal is not None:
        print(filed_line(proposal))
    if outcome is None:
        print("already delivered: nothing sent")
        return 0
    print(f"user receives: {outcome.answer}")
    if result.result == "not_relayed":
        print(f"warning: Slack refused to show it to the user ({result.error}); it is in their conversation "
              "history and the escalation stays answered", file=sys.stderr)
    return 0


async def resolve(args: argparse.Namespace, settings: Settings) -> int:
    async with local_services(settings, warm=False) as services:
        admin = _admin_scope(services, args.as_user)
        desk = escalation_desk(services, slack_notifier(services))
        before = await desk.get(args.escalation_id)
        if before is None:
            raise CommandError(f"no escalation {args.escalation_id!r}")
        if not desk.may_handle(admin, before):
            raise CommandError(f"{admin.display_name or admin.user_id} may not resolve escalation {args.escalation_id}")
        closing = await desk.resolve(args.escalation_id, admin_id=admin.user_id)
        proposal = await _propose(services, admin, args.escalation_id, None) if args.propose else None
    after = closing.escalation
    changed = closing.result == "done"
    if args.json:
        emit_json({"escalation_id": args.escalation_id, "resolved": changed,
                   "status": after.status if after else None, "user_receives": closing.told,
                   **({"proposal": proposal.as_json()} if proposal else {})})
    else:
        if proposal is not None:
            print(filed_line(proposal))
        print(f"resolved {args.escalation_id}" if changed else f"{args.escalation_id} was already {before.status}")
        if closing.told:
            print(f"user receives: {closing.told}")
    return 0


async def trace(args: argparse.Namespace, settings: Settings) -> int:
    async with open_store(settings) as store:
        turn = await store.conversations.get_turn(turn_id=args.turn_id)
    if turn is None:
        raise CommandError(f"no turn {args.turn_id!r}")
    if args.json:
        emit_json(_turn_json(turn))
        return 0
    t: dict[str, Any] = turn.trace
    print(f"turn {turn.turn_id}  session {turn.session_id}  user {turn.user_id}  at {turn.created_at}")
    print(f"question: {turn.question}")
    print(f"route: {turn.route}  reason: {turn.reason or '-'}  fired: {t.get('route_fired') or '-'}")
    print(f"path: {' → '.join(t.get('path') or []) or '-'}")
    for s in t.get("searches") or []:
        print(f"search {s.get('query')!r}: gate {s.get('gate') or '-'}, top {s.get('top_score')}, "
              f"floor {s.get('min_score')}, reranker {s.get('reranker', '-')}")
        for c in s.get("chunks") or []:
            print(f"    {c['chunk_id']}  score {c['score']}")
    print(f"answerer: {turn.answerer or '-'}  model: {turn.model or '-'}  prompt: {turn.prompt_version or '-'}")
    print(f"validation: {turn.validation or '-'}")
    print(f"timings: {json.dumps(turn.timings)}")
    if turn.answer:
        print(f"answer shown:\n{turn.answer}")
    return 0


def _turn_json(turn: TurnRecord) -> dict[str, object]:
    return {"turn_id": turn.turn_id, "session_id": turn.session_id, "user_id": turn.user_id,
            "tenant_id": turn.tenant_id, "question": turn.question, "route": turn.route, "reason": turn.reason,
            "route_fired": turn.trace.get("route_fired"), "path": turn.trace.get("path"),
            "top_score": turn.top_score, "passages": turn.passages, "searches": turn.trace.get("searches"),
            "answerer": turn.answerer, "model": turn.model, "prompt_version": turn.prompt_version,
            "validation": json.loads(turn.validation) if turn.validation else None, "answer": turn.answer,
            "timings": turn.timings, "created_at": turn.created_at, "trace": turn.trace}
