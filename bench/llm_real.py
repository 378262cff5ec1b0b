"""The LLM path against a real model: every sample question through Cairn with an OpenAI-compatible server.

    python -m bench.llm_real --server-url http://127.0.0.1:8080 --model NAME --home DIR

A standalone section (not in `python -m bench`): it needs a chat server that is already running (for
example llama.cpp's `llama-server --jinja` on loopback with a small GGUF model) and a Cairn home with the
sample handbook ingested. It downloads nothing and fails with a clear message when the server does not
answer. Each line of sample/questions.jsonl is one new conversation through the real graph
(`services.runner.ask`, as the line's `as` user), with the LLM answerer drafting and graph/validate.py
checking every draft. The bench records each call the answerer makes (in memory only: a draft that
fails validation is never shown nor stored by Cairn) and reports:

- drafts: text answers the model produced (a call that asked for another search is not a draft; a
  call that failed — timeout, HTTP error, no content — is an empty draft and fails as such);
- passed / failed validation, failures by cause (uncited sentence, unknown citation, unsupported
  figure, no citation at all, empty draft), with the figures the fact check refused;
- what the user was shown instead: an escalation (any failed draft) or an extractive answer (only
  while the LLM is paused);
- the key claim, checked here independently of the validator: no figure (number, amount, percentage,
  date, time) of a shown answer is missing from the chunks its sentence cites, read from the home's
  catalog (`chunks`: heading and text). Such a figure counts even when the validator accepted it on
  the passage's title, version or effective date (also sent to the model); those are also counted apart;
- turn latency p50/p95 and the latency of the model's calls.

Exit status: 0, or 1 when a shown answer states a figure its citations do not (the invariant broke),
2 when the server or the home is unusable. `--out FILE` writes one JSON row per turn, drafts included.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import asyncio
import json
import logging
import sqlite3
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report import log, percentile, section_header, table, target
from graph.answerers import AnswerRequest, Draft
from graph.facts import Facts, facts_in, unsupported
from graph.nodes.validate import sent_dates, sent_texts
from graph.validate import citations_in, is_factual, plain_sentence, segment, validate_answer

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_QUESTIONS = ROOT / "sample" / "questions.jsonl"
SAMPLE_ACCESS = ROOT / "sample" / "access.yml"
CAUSES = ("uncited_sentence", "unknown_citation", "unsupported_number", "no_citations", "empty_draft")


class BenchError(Exception):
    """A precondition failed (server unreachable, home missing): printed as one line, exit status 2."""


# -- the server ------------------------------------------------------------------------------------------


def api_base(url: str) -> str:
    """`http://127.0.0.1:8080`, `…/` or `…/v1` → `http://127.0.0.1:8080/v1` (what the OpenAI client takes)."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise BenchError(f"--server-url must start with http:// or https://, not {url!r}")
    return url if url.endswith("/v1") else url + "/v1"


def probe(base: str, timeout_s: float = 5.0) -> list[str]:
    """The model ids the server lists at GET /models; BenchError when nothing answers there."""
    try:
        with urllib.request.urlopen(f"{base}/models", timeout=timeout_s) as response:
            body = json.loads(response.read().decode("utf-8") or "{}")
    except urllib.error.HTTPError as exc:  # it answers, only not this endpoint: the turns will tell
        log(f"note: the LLM server at {base} answered GET /models with HTTP {exc.code}")
        return []
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BenchError(f"the LLM server at {base} is unreachable ({reason}): start it first, e.g. "
                         "`llama-server -m MODEL.gguf --jinja --host 127.0.0.1 --port 8080`") from exc
    except ValueError as exc:
        raise BenchError(f"the LLM server at {base} did not answer GET /models with JSON") from exc
    data = body.get("data") if isinstance(body, dict) else None
    return [str(m.get("id")) for m in data or [] if isinstance(m, dict)]


# -- recording what the answerer did ---------------------------------------------------------------------


@dataclass
class Call:
    """One call of the answerer in a turn, with what it was sent."""

    answerer: str
    content: str
    tool_calls: list[str]
    error: str | None
    finish_reason: str | None
    ms: float
    sent: dict[str, str]  # chunk id → the text the validator compares with (graph/nodes/validate.sent_texts)
    dates: dict[str, str]  # chunk id → the effective date sent (graph/nodes/validate.sent_dates)

    @property
    def is_draft(self) -> bool:
        return not self.tool_calls


class Recorder:
    """Wraps `answerer.respond` on the instance the graph holds; turns run one at a time, so the calls
    since `start()` are the current turn's."""

    def __init__(self, answerer: Any) -> None:
        self.answerer = answerer
        self.inner = answerer.respond
        self.calls: list[Call] = []

    def install(self) -> None:
        self.answerer.respond = self.respond
        fallback = getattr(self.answerer, "fallback", None)
        if fallback is not None:  # an extractive answer while the LLM is paused is recorded too
            inner = fallback.respond

            async def respond_fallback(request: AnswerRequest) -> Draft:
                return await self._record(inner, request, str(fallback.name))

            fallback.respond = respond_fallback

    def start(self) -> None:
        self.calls = []

    async def respond(self, request: AnswerRequest) -> Draft:
        return await self._record(self.inner, request, str(self.answerer.name))

    async def _record(self, inner: Any, request: AnswerRequest, name: str) -> Draft:
        started = time.perf_counter()
        draft: Draft = await inner(request)
        ms = (time.perf_counter() - started) * 1000
        msg = draft.message
        content = msg.content if isinstance(msg.content, str) else str(msg.text)
        passages = [{"chunk_id": p.chunk_id, "title": p.title, "heading": p.heading, "version": p.version,
                     "effective_at": p.effective_at, "text": p.text} for p in request.passages]
        self.calls.append(Call(answerer=name, content=content, tool_calls=[str(c["name"]) for c in msg.tool_calls],
                               error=draft.info.get("error"), finish_reason=draft.info.get("finish_reason"),
                               ms=ms, sent=sent_texts(passages), dates=sent_dates(passages)))
        return draft


# -- the fact check, independent of the validator's verdict ----------------------------------------------


def merged_facts(texts: Sequence[str]) -> Facts:
    out = Facts()
    for text in texts:
        out.add(facts_in(text, partial_dates=True))
    return out


def figure_text(figures: Sequence[tuple[str, str]]) -> str:
    """("usd", "999") → "USD 999", ("%", "15") → "15%", a bare number, date or time as it is."""
    def one(kind: str, value: str) -> str:
        if kind == "%":
            return f"{value}%"
        return value if kind in ("number", "date", "time") else f"{kind.upper()} {value}"

    return ", ".join(one(kind, value) for kind, value in figures)


@dataclass(frozen=True)
class Unsupported:
    sentence: int
    figures: tuple[tuple[str, str], ...]
    cited: tuple[str, ...]


def unsupported_figures(text: str, evidence_of: Mapping[str, str]) -> list[Unsupported]:
    """Per factual sentence of `text`: the figures that the chunks it cites (texts in `evidence_of`;
    an id missing there supports nothing) do not state. An uncited sentence supports none of its figures."""
    out = []
    for i, sentence in enumerate(segment(text)):
        if not is_factual(sentence):
            continue
        cited = tuple(dict.fromkeys(citations_in(sentence)))
        missing = unsupported(plain_sentence(sentence), merged_facts([evidence_of.get(c, "") for c in cited]))
        if missing:
            out.append(Unsupported(i, tuple(missing), cited))
    return out


def chunk_texts(home: Path, chunk_ids: Sequence[str]) -> dict[str, str]:
    """Heading and text of each chunk as the catalog stores it (read-only)."""
    if not chunk_ids:
        return {}
    db = sqlite3.connect(f"file:{home / 'cairn.db'}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(chunk_ids))
        rows = db.execute(f"SELECT chunk_id, heading, text FROM chunks WHERE chunk_id IN ({marks})", list(chunk_ids))
        return {r[0]: f"{r[1]}\n{r[2]}" for r in rows}
    finally:
        db.close()


# -- one turn --------------------------------------------------------------------------------------------


@dataclass
class Row:
    qid: str
    as_user: str | None
    question: str
    expect: str | None
    route: str  # answer | escalate
    outcome: str
    reason: str | None
    answerer: str | None  # the answerer of the turn's last call (trace), None if the gate stopped the turn
    validation: dict[str, Any] | None
    answer: str
    ms: float
    turn_id: str = ""  # `cairn trace TURN_ID` shows the stored trace
    calls: list[Call] = field(default_factory=list)
    # filled by analyse()
    draft_verdicts: list[dict[str, Any]] = field(default_factory=list)
    shown_unsupported: list[Unsupported] = field(default_factory=list)
    shown_metadata_only: list[Unsupported] = field(default_factory=list)

    @property
    def drafts(self) -> list[Call]:
        return [c for c in self.calls if c.is_draft]


def questions(path: Path, limit: int | None) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return lines[:limit] if limit else lines


async def run_turns(settings: Any, items: Sequence[dict[str, Any]], *, warmup: int) -> list[Row]:
    from bot.services import open_services

    rows: list[Row] = []
    async with open_services(settings) as services:
        if services.answerer.name != "llm":
            raise BenchError(f"the answerer is {services.answerer.name!r}, not the LLM: is CAIRN_CHAT_MODEL set?")
        if await services.controls.is_paused("llm"):
            log("note: the LLM is paused in this home (`cairn unpause llm`): answers are extractive")
        recorder = Recorder(services.answerer)
        recorder.install()
        run = uuid.uuid4().hex[:8]
        for item in items[:warmup]:  # the first call pays for lazy imports and the server's first prompt
            await services.runner.ask(session_id=f"bench-llm-warm-{run}-{item['id']}",
                                      scope=services.access.resolve_cli(item.get("as")),
                                      question=item["question"], surface="eval")
        for n, item in enumerate(items, 1):
            scope = services.access.resolve_cli(item.get("as"))
            recorder.start()
            started = time.perf_counter()
            out = await services.runner.ask(session_id=f"bench-llm-{run}-{item['id']}", scope=scope,
                                            question=item["question"], surface="eval")
            ms = (time.perf_counter() - started) * 1000
            trace = out.trace or {}
            rows.append(Row(qid=str(item["id"]), as_user=item.get("as"), question=item["question"],
                            expect=item.get("expect"), route="answer" if out.route == "answer" else "escalate",
                            outcome=out.route, reason=out.reason,
                            answerer=(trace.get("answerer") or {}).get("name"),
                            validation=trace.get("validation"), answer=out.answer, ms=ms,
                            turn_id=out.turn_id, calls=list(recorder.calls)))
            r = rows[-1]
            log(f"{n}/{len(items)} {r.qid}: {r.route}{' ' + r.reason if r.reason else ''} "
                f"({len(r.calls)} call(s), {r.ms:.0f} ms)")
    return rows


def analyse(rows: Sequence[Row], home: Path) -> None:
    """Each draft re-validated on what it was sent; each shown answer checked against the catalog."""
    for r in rows:
        for c in r.drafts:
            verdict = validate_answer(c.content, list(c.sent), texts=c.sent, effective=c.dates)
            r.draft_verdicts.append({"ok": verdict.ok, "kinds": sorted({str(p["kind"]) for p in verdict.problems}),
                                     "unsupported": unsupported_figures(c.content, c.sent)})
    cited = sorted({c for r in rows if r.route == "answer" for c in citations_in(r.answer)})
    stored = chunk_texts(home, cited)
    for r in rows:
        if r.route != "answer":
            continue
        r.shown_unsupported = unsupported_figures(r.answer, stored)
        sent = r.calls[-1].sent if r.calls else {}
        by_sent = unsupported_figures(r.answer, sent)
        if r.shown_unsupported and len(by_sent) < len(r.shown_unsupported):
            r.shown_metadata_only = [u for u in r.shown_unsupported
                                     if not any(b.sentence == u.sentence for b in by_sent)]


# -- the report ------------------------------------------------------------------------------------------


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def turns_table(rows: Sequence[Row]) -> None:
    out = []
    for r in rows:
        verdicts = r.draft_verdicts
        last = verdicts[-1] if verdicts else None
        validation = "-" if r.validation is None else ("ok" if r.validation.get("ok") else ",".join(
            sorted({str(p.get("kind")) for p in r.validation.get("problems") or []})) or "failed")
        refused = "; ".join(figure_text(u.figures) for u in (last or {}).get("unsupported") or [])
        llm_ms = sum(c.ms for c in r.calls if c.answerer == "llm")
        out.append([r.qid, r.as_user or "-", r.route, r.reason or "-", r.answerer or "-",
                    f"{len(r.drafts)}/{len(r.calls)}", validation, refused or "-", f"{r.ms:.0f}", f"{llm_ms:.0f}",
                    _short(r.answer)])
    table("Turns", ["id", "as", "route", "reason", "answerer", "drafts/calls", "validation", "figures refused",
                    "turn ms", "LLM ms", "shown"], out,
          note="validation: the verdict in the turn's trace (kinds of problems); figures refused: those of the "
               "last draft that no chunk its sentence cites states; shown: what the user got (an escalation "
               "is Cairn's fixed text).")


def summary_table(rows: Sequence[Row], model: str) -> int:
    drafts = [(r, c, v) for r in rows for c, v in zip(r.drafts, r.draft_verdicts, strict=True)]
    llm_drafts = [(r, c, v) for r, c, v in drafts if c.answerer == "llm"]
    produced = [(r, c, v) for r, c, v in llm_drafts if c.content.strip() and not c.error]
    empty = [(r, c, v) for r, c, v in llm_drafts if not (c.content.strip() and not c.error)]
    passed = [x for x in llm_drafts if x[2]["ok"]]
    failed = [x for x in llm_drafts if not x[2]["ok"]]
    by_cause = {k: sum(k in v["kinds"] for _, _, v in failed) for k in CAUSES}
    # the figures of failed drafts, by why they could not be shown: no citation at all on their sentence,
    # or a citation whose chunks do not state them (the fact check proper, unsupported_number)
    uncited = [f"{r.qid}: {figure_text(u.figures)}" for r, _, v in failed for u in v["unsupported"] if not u.cited]
    refused = [f"{r.qid}: {figure_text(u.figures)}" for r, _, v in failed for u in v["unsupported"] if u.cited]
    errors: dict[str, int] = {}
    for _, c, _ in empty:
        key = _short(c.error or "no content", 90)
        errors[key] = errors.get(key, 0) + 1
    shown = [r for r in rows if r.route == "answer"]
    bad = [(r, u) for r in shown for u in r.shown_unsupported]
    metadata_only = [(r, u) for r in shown for u in r.shown_metadata_only]
    escalations: dict[str, int] = {}
    for r in rows:
        if r.route != "answer":
            escalations[r.reason or "?"] = escalations.get(r.reason or "?", 0) + 1
    gate = sum(1 for r in rows if not r.calls)
    turn_ms = [r.ms for r in rows]
    call_ms = [c.ms for r in rows for c in r.calls if c.answerer == "llm"]
    tool_calls = sum(len(c.tool_calls) for r in rows for c in r.calls)
    mismatch = [r.qid for r in rows if r.validation is not None and r.draft_verdicts
                and bool(r.validation.get("ok")) != bool(r.draft_verdicts[-1]["ok"])]
    causes = ", ".join(f"{k} {n}" for k, n in by_cause.items() if n) or "-"
    out: list[list[object]] = [
        ["model", model],
        ["turns", len(rows)],
        ["turns stopped before the answerer (gate, conflict, asked for a person)", gate],
        ["LLM calls (drafts + search requests)", f"{len(call_ms)} ({tool_calls} tool call(s) asked for)"],
        ["drafts the model produced (text)", len(produced)],
        ["empty drafts (call failed or no content)",
         f"{len(empty)}" + (f": {'; '.join(f'{k} ×{n}' for k, n in errors.items())}" if errors else "")],
        ["drafts that passed validation", f"{len(passed)} of {len(llm_drafts)} (empty ones included)"],
        ["drafts that failed validation", f"{len(failed)} ({causes})"],
        ["cited figures the cited chunks do not state (refused)", "; ".join(dict.fromkeys(refused)) or "-"],
        ["figures in uncited sentences (refused)", "; ".join(dict.fromkeys(uncited)) or "-"],
        ["answers shown", f"{len(shown)} (llm {sum(r.answerer == 'llm' for r in shown)}, "
                          f"extractive {sum(r.answerer == 'extractive' for r in shown)})"],
        ["shown-answer figures not in the chunks they cite",
         target(float(sum(len(u.figures) for _, u in bad)), 0, higher=False, digits=0)],
        ["… of which the validator let through on the title/version/effective date sent",
         sum(len(u.figures) for _, u in metadata_only)],
        ["extractive fallbacks shown", sum(r.answerer == "extractive" for r in shown)],
        ["escalations", f"{sum(escalations.values())} ("
                        + (", ".join(f"{k} {n}" for k, n in sorted(escalations.items(), key=lambda kv: -kv[1]))
                           or "-") + ")"],
        ["validator verdicts this bench could not reproduce", ", ".join(mismatch) or "none"],
        ["turn p50 / p95 ms", f"{percentile(turn_ms, 50):.0f} / {percentile(turn_ms, 95):.0f}"],
        ["LLM call p50 / p95 ms", f"{percentile(call_ms, 50):.0f} / {percentile(call_ms, 95):.0f}"
                                  if call_ms else "-"],
    ]
    table("The LLM path with a real model", ["measure", "value"], out,
          note="A draft that fails validation is never shown: the turn escalates (answer_validation_failed). "
               "Shown-answer figures are checked here against the cited chunks' heading and text in the "
               "home's catalog, independently of the validator.")
    for r, u in bad:
        print(f"UNSUPPORTED FIGURE SHOWN · {r.qid} sentence {u.sentence}: {figure_text(u.figures)} "
              f"(cites {', '.join(u.cited) or 'nothing'})")
    return len(bad)


def write_rows(path: Path, rows: Sequence[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({
                "id": r.qid, "turn_id": r.turn_id, "as": r.as_user, "question": r.question, "expected": r.expect,
                "route": r.route,
                "outcome": r.outcome, "reason": r.reason, "answerer": r.answerer, "validation": r.validation,
                "answer": r.answer, "ms": round(r.ms, 1),
                "calls": [{"answerer": c.answerer, "content": c.content, "tool_calls": c.tool_calls,
                           "error": c.error, "finish_reason": c.finish_reason, "ms": round(c.ms, 1),
                           "sent": sorted(c.sent)} for c in r.calls],
                "draft_verdicts": [{**v, "unsupported": [{"sentence": u.sentence, "figures": u.figures,
                                                          "cited": u.cited} for u in v["unsupported"]]}
                                   for v in r.draft_verdicts],
                "shown_unsupported": [{"sentence": u.sentence, "figures": u.figures, "cited": u.cited}
                                      for u in r.shown_unsupported],
            }, ensure_ascii=False) + "\n")


# -- entry point -----------------------------------------------------------------------------------------


def llm_settings(home: Path, access: Path, *, base: str, model: str, timeout_s: float) -> Any:
    """The settings `cairn eval --turns` would read with these variables set (the rest from the
    environment and .env, as the CLI does)."""
    from bot.settings import Settings

    os.environ.update({"CAIRN_HOME": str(home), "CAIRN_ACCESS_FILE": str(access), "CAIRN_CHAT_MODEL": model,
                       "OPENAI_BASE_URL": base, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "none",
                       "CAIRN_LLM_TIMEOUT": str(timeout_s)})
    return Settings()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llm_real", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-url", required=True, help="the OpenAI-compatible server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--model", required=True, help="the model name sent with each request (CAIRN_CHAT_MODEL)")
    parser.add_argument("--home", required=True, type=Path, help="a Cairn home with the sample handbook ingested")
    parser.add_argument("--access", type=Path, default=SAMPLE_ACCESS, help="access file (default: the sample's)")
    parser.add_argument("--questions", type=Path, default=SAMPLE_QUESTIONS, help="JSONL of {id, question, as?}")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per LLM call (CAIRN_LLM_TIMEOUT)")
    parser.add_argument("--limit", type=int, help="only the first N questions")
    parser.add_argument("--warmup", type=int, default=1, help="turns run first and not counted (default 1)")
    parser.add_argument("--out", type=Path, help="write one JSON row per turn here, drafts included")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        base = api_base(args.server_url)
        models = probe(base)
        if not (args.home / "cairn.db").is_file():
            raise BenchError(f"{args.home} is not a Cairn home (no cairn.db): ingest the sample handbook there first")
        if not args.access.is_file():
            raise BenchError(f"no access file at {args.access}")
        settings = llm_settings(args.home, args.access, base=base, model=args.model, timeout_s=args.timeout)
        section_header("llm_real", f"sample questions through the LLM path with {args.model} at {base}")
        log(f"server lists {', '.join(models) or 'no models'}"
            + ("" if not models or args.model in models else f"; {args.model!r} is not among them (sent anyway)"))
        items = questions(args.questions, args.limit)
        rows = asyncio.run(run_turns(settings, items, warmup=min(args.warmup, len(items))))
    except BenchError as exc:
        print(f"bench.llm_real: {exc}", file=sys.stderr)
        return 2
    analyse(rows, args.home)
    turns_table(rows)
    bad = summary_table(rows, args.model)
    if args.out:
        write_rows(args.out, rows)
        log(f"rows → {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
