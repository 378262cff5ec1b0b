"""Is the answer shown the fact asked for? End-to-end turns scored on the answer text (issue 12).

Every question is one new conversation through the real graph (`services.runner.ask`, the runner
`cairn ask` uses; offline extractive answerer), then scored on what the user is shown:

- a question with a gold answer is *right* when the answer shown contains one of its gold answers
  (`bench.answer_scoring.contains_fact`: case, punctuation, "USD 250" = "$250", Arabic-Indic
  digits), *wrong* when it answers without one, a *needless escalation* when it escalates;
- a question that must escalate (SQuAD adversarial unanswerable, out-of-corpus, handbook near-miss
  and out-of-corpus, the sample's deliberate gaps) is a *correct escalation* when it escalates,
  otherwise a wrong answer shown.

Sets: `sample` (the bundled handbook, in its own home as each line's `as` user), `handbooks`
(bench/questions/handbooks.jsonl over GitLab + Sourcegraph + Basecamp), `staff` (more questions over
the same tenant, bench/questions/handbooks-staff.jsonl, typed the way staff ask), `squad` (SQuAD 2.0 dev:
answerable and adversarial questions from the indexed articles, out-of-corpus ones from the others)
and `xquad` (Arabic questions over the English XQuAD paragraphs; gold = the English answer).

Tune / report: each question falls in one half by a hash of its set and id (`split_of`), fixed
across runs; tune on `tune`, quote `report`. Both are printed, labelled.

For each answerable question not answered right, where its gold stood in the turn's search (`gold_at`:
in a passage read, ranked out of them, or not retrieved) tells answer selection's misses from retrieval's.

Environment, for fast iteration: `CAIRN_BENCH_SPLIT=tune|report` (default both),
`CAIRN_BENCH_SETS=sample,handbooks` (default all five), `CAIRN_BENCH_LIMIT=N` (at most N questions
per set, kind and split). Per-turn rows go to bench/out/answers-<set>.jsonl.

`CAIRN_BENCH_EXTRA=FILE.jsonl` adds the set `extra`: questions of your own over the handbooks tenant,
in the form of bench/questions/handbooks.jsonl (`id`, `question`, `answers` or `answer`, and `kind`
`near_miss` / `ooc` with no `gold_path` for the ones that must escalate). It is how a set kept out
of the repository (held out, or a team's own) is scored the same way; with it, `extra` is in the
default sets.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import datasets as ds
from bench.answer_scoring import contains_fact
from bench.report import log, percentile, table, target
from bench.workspace import Workspace
from bot.services import Services
from graph.answerers.extractive import prepare_answer_vectors
from models import splits
from retrieval.search import FINAL_K, FUSE_K, Passage
from store.records import Scope

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out"
SAMPLE_QUESTIONS = ROOT / "sample" / "questions.jsonl"
# our labels for the sample: the fact asked where gold_text is only the passage's start, the kind of each
# must-escalate line, and extra questions for the failure classes of issue 12
SAMPLE_LABELS = Path(__file__).resolve().parent / "questions" / "sample.jsonl"
# Arabic questions over the English handbook pages (kept apart: the retrieval sections read only handbooks.jsonl)
HANDBOOKS_AR = Path(__file__).resolve().parent / "questions" / "handbooks-ar.jsonl"
# 190 more questions over the handbooks, typed the way staff ask in Slack (terse, chatty, misspelt), by
# people who had not seen the others: 114 answerable with minimal gold spans, 46 near-miss, 30 out of corpus
HANDBOOKS_STAFF = Path(__file__).resolve().parent / "questions" / "handbooks-staff.jsonl"
SETS = ("sample", "handbooks", "staff", "squad", "xquad", "extra")
SPLITS = ("tune", "report")
# SQuAD and XQuAD sample sizes (before the split): a few minutes on 2 cores with the other sets
SQUAD_ANSWERABLE, SQUAD_ADVERSARIAL, SQUAD_OOC = 240, 120, 120
XQUAD_AR_EN = 160
MUST_ESCALATE = ("adversarial", "ooc", "near_miss", "access", "conflict", "human", "null")


@dataclass(frozen=True)
class Case:
    set: str
    qid: str
    question: str
    kind: str  # answerable, or one of MUST_ESCALATE (access: the asker may not read the answer; human: asks for one)
    answers: tuple[str, ...] = ()
    lang: str = "en"
    as_user: str | None = None
    expect_reason: str | None = None
    # The judge's split (models/splits.py) where the case's page or article could be trained on:
    # `train` cases are never scored; otherwise `tune` or `report`. None: the hash of set and id.
    judge_split: str | None = None

    @property
    def expect(self) -> str:
        return "answer" if self.kind == "answerable" else "escalate"

    @property
    def split(self) -> str:
        return self.judge_split or split_of(self.set, self.qid)


@dataclass(frozen=True)
class Turn:
    case: Case
    route: str
    reason: str | None
    answer: str
    ms: float
    top_score: float | None
    cited: tuple[str, ...]
    sentence_scores: tuple[float, ...] = ()  # the extractive answerer's, for the sentences it quoted
    gold_at: str | None = None  # an answerable question not answered right: where its gold stood (`gold_at`)
    judge: float | None = None  # the judge's answerable probability (None: it did not read the turn)
    reading: dict[str, Any] | None = None  # the judge's reading in the turn's trace (graph/answerers/extractive.py)

    @property
    def escalated(self) -> bool:
        return self.route != "answer"

    @property
    def verdict(self) -> str:
        if self.case.expect == "escalate":
            return "correct_escalation" if self.escalated else "wrong"
        if self.escalated:
            return "needless_escalation"
        return "right" if contains_fact(self.answer, self.case.answers) else "wrong"


# Where the gold of an answerable question not answered right stood in the turn's search: in a
# passage the answerer read, among the candidates the reranker put below them, or not found at all.
GOLD_PLACES = ("read", "ranked out", "not retrieved")


def gold_at(passages: Sequence[Passage], golds: Sequence[str], *, read: int = FINAL_K) -> str:
    """Which of GOLD_PLACES: `passages` are the search's reranked candidates, best first, of which the
    answerer reads the first `read`."""
    holding = [i for i, p in enumerate(passages) if contains_fact(p.text, golds)]
    if not holding:
        return "not retrieved"
    return "read" if holding[0] < read else "ranked out"


def split_of(set_name: str, qid: str) -> str:
    """A fixed half per question: the first byte of sha256("set:id"), even → tune, odd → report."""
    return "tune" if hashlib.sha256(f"{set_name}:{qid}".encode()).digest()[0] % 2 == 0 else "report"


def _env_list(name: str, default: Sequence[str]) -> list[str]:
    raw = os.environ.get(name, "").strip()
    return [x.strip() for x in raw.split(",") if x.strip()] if raw else list(default)


def _limit(cases: list[Case], halves: Sequence[str]) -> list[Case]:
    chosen = [c for c in cases if c.split in halves]  # never `train`: what the judge learnt from
    raw = os.environ.get("CAIRN_BENCH_LIMIT", "").strip()
    if not raw:
        return chosen
    n, out = int(raw), []
    seen: dict[tuple[str, str], int] = {}
    for c in chosen:
        key = (c.kind, c.split)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] <= n:
            out.append(c)
    return out


# -- the sets --------------------------------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def sample_cases() -> list[Case]:
    labels = {x["id"]: x for x in _jsonl(SAMPLE_LABELS)} if SAMPLE_LABELS.exists() else {}
    lines = _jsonl(SAMPLE_QUESTIONS)
    known = {x["id"] for x in lines}
    out = []
    for x in [*({**x, **labels.get(x["id"], {})} for x in lines), *(x for i, x in labels.items() if i not in known)]:
        answerable = x["expect"] == "answer"
        lang = "ar" if any("\u0600" <= ch <= "\u06ff" for ch in x["question"]) else "en"
        answers = tuple(x.get("answers") or [x["gold_text"]]) if answerable else ()
        out.append(Case("sample", x["id"], x["question"], "answerable" if answerable else str(x.get("kind") or "null"),
                        answers=answers, lang=lang, as_user=x.get("as"), expect_reason=x.get("reason")))
    return out


def handbook_cases(lines: Sequence[dict[str, Any]] | None = None, set_name: str = "handbooks") -> list[Case]:
    out = []
    if lines is None:
        lines = [*ds.handbook_questions(), *(_jsonl(HANDBOOKS_AR) if HANDBOOKS_AR.exists() else [])]
    for x in lines:
        lang = str(x.get("lang") or "en")
        # A held-out set of one's own (`extra`) is never trained on: its hash halves stand.
        fixed = None if set_name == "extra" else \
            splits.handbook_split(gold_path=x.get("gold_path") or None, qid=str(x["id"]))
        if x.get("expect") == "escalate" or not x.get("gold_path"):
            kind = str(x.get("kind") or "ooc")
            out.append(Case(set_name, str(x["id"]), str(x["question"]), kind, lang=lang, judge_split=fixed))
            continue
        listed = x.get("answers")
        answers = list(listed) if isinstance(listed, list) and listed else [x.get("answer") or x["gold_text"]]
        out.append(Case(set_name, str(x["id"]), str(x["question"]), "answerable",
                        answers=tuple(str(a) for a in answers), lang=lang, judge_split=fixed))
    return out


def staff_cases() -> list[Case]:
    return handbook_cases(_jsonl(HANDBOOKS_STAFF), "staff")


def extra_cases() -> list[Case]:
    raw = os.environ.get("CAIRN_BENCH_EXTRA", "").strip()
    if not raw:
        raise ValueError("the set `extra` needs CAIRN_BENCH_EXTRA=FILE.jsonl")
    return handbook_cases(_jsonl(Path(raw)), "extra")


def squad_cases() -> list[Case]:
    answerable, adversarial, ooc = [], [], []
    for ai, article in enumerate(ds._squad()):
        if ai in splits.SQUAD_TRAIN_ARTICLES:
            continue  # the judge learnt from these articles' questions
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if ai >= ds.SQUAD_INDEXED_ARTICLES:
                    ooc.append(Case("squad", qa["id"], qa["question"], "ooc"))
                elif qa["is_impossible"]:
                    adversarial.append(Case("squad", qa["id"], qa["question"], "adversarial"))
                else:
                    golds = tuple(dict.fromkeys(a["text"] for a in qa["answers"]))
                    answerable.append(Case("squad", qa["id"], qa["question"], "answerable", answers=golds))
    rng = random.Random(ds.SEED + 12)
    return (rng.sample(answerable, min(SQUAD_ANSWERABLE, len(answerable)))
            + rng.sample(adversarial, min(SQUAD_ADVERSARIAL, len(adversarial)))
            + rng.sample(ooc, min(SQUAD_OOC, len(ooc))))


def xquad_cases() -> list[Case]:
    gold = {qa["id"]: tuple(dict.fromkeys(a["text"] for a in qa["answers"]))
            for a in ds._xquad("xquad.en.json") for p in a["paragraphs"] for qa in p["qas"]}
    cases = [Case("xquad", qa["id"], qa["question"].strip(), "answerable", answers=gold.get(qa["id"]) or
                  tuple(dict.fromkeys(x["text"] for x in qa["answers"])), lang="ar",
                  judge_split=splits.article_split("xquad", a["title"]))
             for a in ds._xquad("xquad.context-en.question-ar.json") for p in a["paragraphs"] for qa in p["qas"]]
    cases = [c for c in cases if c.split != splits.TRAIN]
    cases.sort(key=lambda c: c.qid)
    return random.Random(ds.SEED + 13).sample(cases, min(XQUAD_AR_EN, len(cases)))


# -- running turns ---------------------------------------------------------------------------------------


async def _prepare(services: Services, scopes: Sequence[tuple[str, Scope]]) -> None:
    """`cairn serve` prepares every new chunk's answer sentences after publication; here only the
    chunks these questions reach, before anything is timed (the state a running server is in)."""
    reached: set[str] = set()
    for question, scope in scopes:
        result = await services.searcher.search(question, scope)
        reached.update(p.chunk_id for p in result.passages)
    while await prepare_answer_vectors(services.catalog, services.embedder, limit=64, chunk_ids=sorted(reached)):
        pass


async def run_cases(services: Services, cases: Sequence[Case], scope_of: Callable[[Case], Scope]) -> list[Turn]:
    await _prepare(services, [(c.question, scope_of(c)) for c in cases])
    run = uuid.uuid4().hex[:8]  # new conversations even in a kept home
    turns = []
    for c in cases[:5]:  # warm-up: caches and lazy imports, not counted
        await services.runner.ask(session_id=f"bench-answers-warm-{run}-{c.qid}", scope=scope_of(c),
                                  question=c.question, surface="eval")
    for c in cases:
        started = time.perf_counter()
        out = await services.runner.ask(session_id=f"bench-answers-{run}-{c.set}-{c.qid}", scope=scope_of(c),
                                        question=c.question, surface="eval")
        ms = (time.perf_counter() - started) * 1000
        route = "answer" if out.route == "answer" else "escalate"
        quoted = ((out.trace or {}).get("answerer") or {}).get("sentences") or []
        readings = [s["judge"] for s in (out.trace or {}).get("searches") or [] if s.get("judge")]
        turn = Turn(c, route, out.reason, out.answer, ms, out.top_score,
                    tuple(str(x["chunk_id"]) for x in out.citations),
                    tuple(float(x["score"]) for x in quoted),
                    judge=float(readings[-1]["answerable"]) if readings else None,
                    reading=readings[-1] if readings else None)
        if c.expect == "answer" and turn.verdict != "right":  # after the timing: diagnosis, not the turn
            found = await services.searcher.search(c.question, scope_of(c), top_k=FUSE_K)
            turn = replace(turn, gold_at=gold_at(found.passages, c.answers))
        turns.append(turn)
    return turns


async def foreign_documents(ws: Workspace, corpus: str, tenant: str) -> list[str]:
    """Active documents of `tenant` that `corpus` does not hold: another section's, ingested into it (the
    handbooks' tenant is checked; the other corpora's tenants are only ever written by their builders)."""
    if corpus != "handbooks":
        return []
    expected = {d.doc_id for d in ds.handbook_docs()}
    rows = await ws.sql("SELECT doc_id FROM documents WHERE tenant_id=? AND status='active'", (tenant,))
    return sorted(str(r[0]) for r in rows if str(r[0]) not in expected)


async def _sample_turns(ws: Workspace, cases: Sequence[Case]) -> list[Turn]:
    """The sample handbook in a home of its own (its access file and tenant), as each line's user."""
    async with ws.sample_home("answers-sample-home") as svc:
        return await run_cases(svc, cases, lambda c: svc.access.resolve_cli(c.as_user))


async def _tenant_turns(ws: Workspace, corpus: str, tenant: str, cases: Sequence[Case]) -> list[Turn]:
    await ws.ensure(corpus)
    foreign = await foreign_documents(ws, corpus, tenant)
    if foreign:
        raise RuntimeError(f"tenant {tenant} of this bench home holds {len(foreign)} document(s) that the {corpus} "
                           f"corpus does not ({', '.join(foreign[:3])}{', …' if len(foreign) > 3 else ''}): its "
                           "questions would be scored on another corpus. Run on a fresh home (no --home).")
    if ws.services.answerer.name != "extractive":
        log(f"note: the workspace answers with {ws.services.answerer.name}, not the offline extractive answerer")
    scope = ws.scope(tenant)
    return await run_cases(ws.services, cases, lambda c: scope)


RUNNERS: dict[str, tuple[Callable[[], list[Case]], Callable[[Workspace, Sequence[Case]], Awaitable[list[Turn]]]]] = {
    "sample": (sample_cases, _sample_turns),
    "handbooks": (handbook_cases, lambda ws, cs: _tenant_turns(ws, "handbooks", "eval", cs)),
    "squad": (squad_cases, lambda ws, cs: _tenant_turns(ws, "squad", "squad", cs)),
    "xquad": (xquad_cases, lambda ws, cs: _tenant_turns(ws, "xq_en", "xq_en", cs)),
    "staff": (staff_cases, lambda ws, cs: _tenant_turns(ws, "handbooks", "eval", cs)),
    "extra": (extra_cases, lambda ws, cs: _tenant_turns(ws, "handbooks", "eval", cs)),
}


# -- reporting -------------------------------------------------------------------------------------------


def write_rows(set_name: str, turns: Sequence[Turn]) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"answers-{set_name}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for t in turns:
            c = t.case
            f.write(json.dumps({
                "id": c.qid, "set": c.set, "split": c.split, "kind": c.kind, "lang": c.lang, "as": c.as_user,
                "question": c.question, "expected": c.expect, "expected_reason": c.expect_reason,
                "gold": list(c.answers), "route": t.route, "reason": t.reason, "verdict": t.verdict,
                "answer": t.answer, "cited": list(t.cited), "top_score": t.top_score,
                "sentence_scores": list(t.sentence_scores), "judge": t.judge, "reading": t.reading,
                "gold_at": t.gold_at, "ms": round(t.ms, 1),
            }, ensure_ascii=False) + "\n")
    return path


@dataclass(frozen=True)
class Tally:
    n: int
    answerable: int
    right: int
    wrong_answerable: int  # answered without the fact
    needless: int
    must_escalate: int
    correct_escalations: int
    wrong_unanswerable: int  # answered when it should have escalated

    @property
    def wrong(self) -> int:
        return self.wrong_answerable + self.wrong_unanswerable

    @classmethod
    def of(cls, turns: Sequence[Turn]) -> Tally:
        ans = [t for t in turns if t.case.expect == "answer"]
        neg = [t for t in turns if t.case.expect == "escalate"]
        return cls(n=len(turns), answerable=len(ans), right=sum(t.verdict == "right" for t in ans),
                   wrong_answerable=sum(t.verdict == "wrong" for t in ans),
                   needless=sum(t.verdict == "needless_escalation" for t in ans), must_escalate=len(neg),
                   correct_escalations=sum(t.verdict == "correct_escalation" for t in neg),
                   wrong_unanswerable=sum(t.verdict == "wrong" for t in neg))


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _row(label: str, kind: str, turns: Sequence[Turn]) -> list[object]:
    t = Tally.of(turns)
    ms = [x.ms for x in turns]
    return [label, kind, t.n, f"{t.right}/{t.answerable}" if t.answerable else "-", _rate(t.right, t.answerable),
            _rate(t.needless, t.answerable), f"{t.wrong}", _rate(t.wrong, t.n),
            f"{t.correct_escalations}/{t.must_escalate}" if t.must_escalate else "-",
            _rate(t.correct_escalations, t.must_escalate), f"{percentile(ms, 50):.0f}", f"{percentile(ms, 95):.0f}"]


HEADER = ["set / language", "kind", "turns", "right", "right rate", "needless esc. rate", "wrong shown",
          "wrong rate (of turns)", "correct esc.", "correct esc. rate", "p50 ms", "p95 ms"]


def split_table(split: str, turns: Sequence[Turn]) -> None:
    rows: list[list[object]] = []
    for set_name in SETS:
        mine = [t for t in turns if t.case.set == set_name]
        if not mine:
            continue
        for lang in sorted({t.case.lang for t in mine}):
            by_lang = [t for t in mine if t.case.lang == lang]
            for kind in ("answerable", *MUST_ESCALATE):
                group = [t for t in by_lang if t.case.kind == kind]
                if group:
                    rows.append(_row(f"{set_name} / {lang}", kind, group))
        rows.append(_row(f"{set_name} / all", "all", mine))
    label = ("TUNE split — the half constants may be tuned on" if split == "tune"
             else "REPORT split — held out: quote these numbers")
    table(f"Answers shown, scored on the answer text — {label}", HEADER, rows,
          note="right = the answer shown contains a gold answer (normalised); wrong shown = an answer that "
               "lacks the fact, or any answer to a question that must escalate; needless = escalated although "
               "answerable; correct esc. = escalated when it must.")


def reasons_table(split: str, turns: Sequence[Turn]) -> None:
    """Why turns escalated, by whether they should have: where the needless escalations come from."""
    rows = []
    for set_name in SETS:
        mine = [t for t in turns if t.case.set == set_name and t.escalated]
        for expect in ("answer", "escalate"):
            counts: dict[str, int] = {}
            for t in mine:
                if t.case.expect == expect:
                    counts[t.reason or "?"] = counts.get(t.reason or "?", 0) + 1
            if counts:
                rows.append([set_name, "answerable (needless)" if expect == "answer" else "must escalate (correct)",
                             ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))])
    if rows:
        table(f"Escalation reasons — {split.upper()} split", ["set", "questions", "reasons"], rows)
    wrong = [t for t in turns if t.verdict == "wrong"]
    for set_name in SETS:
        ids = [t.case.qid for t in wrong if t.case.set == set_name]
        if ids:
            print(f"{split} · {set_name}: wrong answers shown ({len(ids)}): {', '.join(ids[:40])}"
                  + (" …" if len(ids) > 40 else ""))


def gold_table(split: str, turns: Sequence[Turn]) -> None:
    """Where the gold of each answerable question not answered right stood: in a passage read (the
    answerer quoted another sentence, or the gate escalated), ranked out of the passages read, or
    never retrieved. It tells answer selection's share of the misses from retrieval's."""
    rows = []
    for set_name in SETS:
        for verdict in ("wrong", "needless_escalation"):
            mine = [t for t in turns if t.case.set == set_name and t.verdict == verdict and t.gold_at]
            if mine:
                rows.append([set_name, verdict.replace("_", " "), len(mine),
                             *(sum(t.gold_at == place for t in mine) for place in GOLD_PLACES)])
    if rows:
        table(f"Where the gold stood, answerable questions not answered right — {split.upper()} split",
              ["set", "verdict", "turns", *GOLD_PLACES], rows,
              note=f"read: in one of the {FINAL_K} passages the answerer read; ranked out: among the {FUSE_K} "
                   "candidates the reranker ordered, below those; not retrieved: in none of them.")


def targets_table(split: str, turns: Sequence[Turn]) -> None:
    def of(set_name: str, *kinds: str, lang: str | None = None) -> list[Turn]:
        return [t for t in turns if t.case.set == set_name and (not kinds or t.case.kind in kinds)
                and (lang is None or t.case.lang == lang)]

    rows = []
    for set_name, lang in (("squad", None), ("handbooks", "en"), ("staff", None), ("sample", None)):
        ans = Tally.of(of(set_name, "answerable", lang=lang))
        if ans.answerable:
            rows.append([f"{set_name}{' (' + lang + ')' if lang else ''}: answer contains the fact",
                         target(ans.right / ans.answerable, 0.80)])
            rows.append([f"{set_name}{' (' + lang + ')' if lang else ''}: needless escalations",
                         target(ans.needless / ans.answerable, 0.10, higher=False)])
    for set_name in ("handbooks", "staff"):
        hb = Tally.of(of(set_name))
        if hb.n:
            rows.append([f"{set_name}: wrong answers shown, of all turns", target(hb.wrong / hb.n, 0.10, higher=False)])
    for set_name, kinds, goal in (("squad", ("adversarial",), 0.50), ("handbooks", ("near_miss",), 0.50),
                                  ("staff", ("near_miss",), 0.50), ("squad", ("ooc",), 0.95),
                                  ("handbooks", ("ooc",), 0.95), ("staff", ("ooc",), 0.95)):
        t = Tally.of(of(set_name, *kinds))
        if t.must_escalate:
            rows.append([f"{set_name} {'/'.join(kinds)}: escalated", target(t.correct_escalations / t.must_escalate, goal)])
    xq = Tally.of(of("xquad", "answerable"))
    if xq.answerable:
        rows.append(["xquad Arabic question → English paragraph: right", target(xq.right / xq.answerable, 0.60)])
    if rows:
        table(f"Issue 12 targets — {split.upper()} split", ["measure", "value vs target"], rows)


async def section_answers(ws: Workspace) -> None:
    chosen = _env_list("CAIRN_BENCH_SETS", SETS if os.environ.get("CAIRN_BENCH_EXTRA") else SETS[:-1])
    halves = _env_list("CAIRN_BENCH_SPLIT", SPLITS)
    unknown = [s for s in chosen if s not in RUNNERS] + [s for s in halves if s not in SPLITS]
    if unknown:
        raise ValueError(f"unknown set(s) or split(s) {unknown}; sets: {', '.join(SETS)}; splits: tune, report")
    log(f"sets {', '.join(chosen)}; splits {', '.join(halves)}"
        + (f"; at most {os.environ['CAIRN_BENCH_LIMIT']} per set, kind and split"
           if os.environ.get("CAIRN_BENCH_LIMIT") else ""))
    turns: list[Turn] = []
    needs = {"handbooks": ds.HANDBOOKS, "staff": ds.HANDBOOKS, "extra": ds.HANDBOOKS, "squad": ds.DATA / "squad2", "xquad": ds.DATA / "arabic_qa" / "xquad"}
    for set_name in chosen:
        if set_name in needs and not needs[set_name].exists():
            log(f"{set_name}: skipped, no data at {needs[set_name]}")
            continue
        make, run = RUNNERS[set_name]
        cases = _limit(make(), halves)
        started = time.perf_counter()
        mine = await run(ws, cases)
        path = write_rows(set_name, mine)
        log(f"{set_name}: {len(mine)} turns in {time.perf_counter() - started:.0f}s → {path.relative_to(ROOT)}")
        turns += mine
    ws.results["answers"] = turns
    for split in halves:
        mine = [t for t in turns if t.case.split == split]
        split_table(split, mine)
        reasons_table(split, mine)
        gold_table(split, mine)
        targets_table(split, mine)
