"""`cairn search` and `cairn eval`: retrieval (or, with `eval --turns`, full turns) in the JSON shapes
scripts rely on."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.cli.common import CommandError, emit_json, local_services, resolve_as
from bot.cli.conversation import run_turn_json
from bot.settings import Settings
from store import untrusted

if TYPE_CHECKING:
    from retrieval.search import SearchResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="retrieval only: the passages a question would get")
    p.add_argument("question", metavar="Q")
    p.add_argument("--as", dest="as_user", metavar="USER", help="ask as this user from the access file")
    p.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default="hybrid")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=search)

    p = sub.add_parser("eval", help="batch retrieval (or, with --turns, full turns) over a JSONL file of "
                                    "{id, question, as?}",
                       description="One JSON output line per input line. Without --turns: retrieval only, in the "
                                   "`search --json` shape. With --turns: one full turn through the graph per line, "
                                   "each in a new conversation, in the `ask --json` shape plus `id` and `ms`. "
                                   "A line that cannot be run gives {id, line, error} and the rest go on.")
    p.add_argument("file", type=Path, metavar="FILE.jsonl")
    p.add_argument("--as", dest="as_user", metavar="USER")
    p.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default="hybrid", help="retrieval mode (not with --turns)")
    p.add_argument("--turns", action="store_true", help="run full turns through the graph, not retrieval only")
    p.add_argument("--json", action="store_true", help="(default) one JSON object per input line")
    p.set_defaults(handler=evaluate)


def result_json(result: SearchResult, *, qid: str | None = None) -> dict[str, object]:
    return {"id": qid, "route": "escalate" if result.gate else "answer", "reason": result.gate,
            "top_score": None if result.top_score is None else round(result.top_score, 4),
            "language": result.language, "mode": result.mode,
            "passages": [p.as_json() for p in result.passages], "answer": None, "turn_id": None,
            "legs": {k: v.status for k, v in result.legs.items()}, "reranker": result.reranker,
            "rerank_fail_open": result.rerank_fail_open, "timings_ms": result.timings}


async def search(args: argparse.Namespace, settings: Settings) -> int:
    if not args.question.strip():
        raise CommandError("the question is empty")
    async with local_services(settings) as services:
        scope = resolve_as(services, args.as_user)
        result = await services.searcher.search(args.question, scope, mode=args.mode)
    if args.json:
        emit_json(result_json(result, qid=uuid.uuid4().hex[:8]))
        return 0
    status = f"gate: {result.gate}" if result.gate else "answerable"
    print(f"{status}  (top score {result.top_score if result.top_score is not None else '-'}, "
          f"floor {result.min_score}, language {result.language})")
    for i, p in enumerate(result.passages, 1):
        page = f" p.{p.page}" if p.page else ""
        print(f"\n{i}. [{p.chunk_id}] {p.title} {p.version}{page} — {p.heading}  score {p.score:.3f}")
        print("   " + p.text.replace("\n", "\n   ")[:600])
    return 0


@dataclass(frozen=True)
class EvalLine:
    number: int
    qid: str
    question: str
    as_user: str | None


def parse_eval_line(number: int, line: str | bytes) -> EvalLine | dict[str, object]:
    """One input line, or the error object printed in its place (the batch goes on). Never raises:
    invalid UTF-8 and lone surrogates are replaced (store/untrusted.py), nesting and numbers bounded."""
    try:
        item = untrusted.loads(line)
    except untrusted.UntrustedInput as exc:
        return {"id": None, "line": number, "error": f"bad input line: {exc}"}
    except json.JSONDecodeError as exc:
        return {"id": None, "line": number, "error": f"bad input line: not JSON ({exc.msg})"}
    if not isinstance(item, dict):
        return {"id": None, "line": number, "error": "bad input line: expected an object {id, question, as?}"}
    qid = str(item.get("id", number))
    question = item.get("question")
    if not isinstance(question, str) or not question.strip():
        return {"id": qid, "line": number, "error": "bad input line: `question` must be a non-empty string"}
    as_user = item.get("as")
    if as_user is not None and not isinstance(as_user, str):
        return {"id": qid, "line": number, "error": "bad input line: `as` must be a user name or Slack id"}
    return EvalLine(number=number, qid=qid, question=question, as_user=as_user)


async def evaluate(args: argparse.Namespace, settings: Settings) -> int:
    try:
        # Bytes, split into lines first: one line of invalid UTF-8 is that line's problem, not the batch's.
        lines = args.file.read_bytes().splitlines()
    except OSError as exc:
        raise CommandError(f"cannot read {args.file}: {exc}") from exc
    failures = 0
    async with local_services(settings) as services:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            item = parse_eval_line(number, line)
            if not isinstance(item, EvalLine):
                emit_json(item)
                failures += 1
                continue
            try:
                scope = resolve_as(services, item.as_user or args.as_user)
            except CommandError as exc:
                emit_json({"id": item.qid, "line": number, "error": str(exc)})
                failures += 1
                continue
            if args.turns:
                started = time.perf_counter()
                turn = await run_turn_json(services, item.question, scope, item.qid)
                emit_json({**turn, "ms": round((time.perf_counter() - started) * 1000, 1)})
            else:
                result = await services.searcher.search(item.question, scope, mode=args.mode)
                emit_json(result_json(result, qid=item.qid))
    if failures:
        print(f"{failures} input line(s) could not be evaluated", file=sys.stderr)
    return 1 if failures else 0
