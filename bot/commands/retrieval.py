"""`cairn search` and `cairn eval`: retrieval only, in the JSON shape scripts rely on."""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from bot.commands.common import CommandError, emit_json, local_services, resolve_as
from bot.settings import Settings
from retrieval.search import SearchResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("search", help="retrieval only: the passages a question would get")
    p.add_argument("question", metavar="Q")
    p.add_argument("--as", dest="as_user", metavar="USER", help="ask as this user from the access file")
    p.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default="hybrid")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=search)

    p = sub.add_parser("eval", help="batch retrieval over a JSONL file of {id, question, as?}")
    p.add_argument("file", type=Path, metavar="FILE.jsonl")
    p.add_argument("--as", dest="as_user", metavar="USER")
    p.add_argument("--mode", choices=["hybrid", "dense", "bm25"], default="hybrid")
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


async def evaluate(args: argparse.Namespace, settings: Settings) -> int:
    try:
        lines = args.file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {args.file}: {exc}") from exc
    failures = 0
    async with local_services(settings) as services:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                question = str(item["question"])
                qid = str(item.get("id", number))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                emit_json({"id": None, "line": number, "error": f"bad input line: {exc}"})
                failures += 1
                continue
            try:
                scope = resolve_as(services, item.get("as") or args.as_user)
            except CommandError as exc:
                emit_json({"id": qid, "error": str(exc)})
                failures += 1
                continue
            result = await services.searcher.search(question, scope, mode=args.mode)
            emit_json(result_json(result, qid=qid))
    if failures:
        print(f"{failures} input line(s) could not be evaluated", file=sys.stderr)
    return 1 if failures else 0
