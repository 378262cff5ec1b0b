"""`python -m bench [section ...]` (`make bench` runs them all).

Each section is one async function taking the shared `Workspace` (a temporary Cairn home with
the models loaded once); corpora are ingested on first use, so any section runs on its own. To add
one: write `async def section_x(ws)` in a module beside this one and list it in SECTIONS.
Output goes to stdout and to bench/out/last-run.txt (bench/out/last-run-<sections>.txt for a subset).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

OUT = Path(__file__).resolve().parent / "out"


@dataclass(frozen=True)
class Section:
    name: str
    description: str
    run: Callable[..., Awaitable[None]]


def sections() -> list[Section]:
    from bench.answers import section_answers
    from bench.api_latency import section_api
    from bench.calibrate import section_calibrate
    from bench.conflicts import section_conflicts
    from bench.engines import section_engines
    from bench.ingest import section_ingest
    from bench.judge_threshold import section_judge
    from bench.latency import section_latency
    from bench.retrieval import section_arcd, section_handbooks, section_squad, section_xquad
    from bench.robustness import section_robustness
    from bench.slack_ack import section_slack_ack
    from bench.sync import section_sync

    return [
        Section("ingest", "ingestion throughput vs raw encode; re-ingest and edit checks (issue 2)", section_ingest),
        Section("handbooks", "labelled handbook questions, three modes (issue 3)", section_handbooks),
        Section("squad", "SQuAD 2.0: recall, abstention, AUROC of the top score (issue 3)", section_squad),
        Section("xquad", "XQuAD en-en / ar-en / ar-ar recall (issue 3)", section_xquad),
        Section("arcd", "ARCD Arabic recall; Arabic questions that must be refused (issue 3)", section_arcd),
        Section("latency", "warm search latency at ~10k chunks (issue 3)", section_latency),
        Section("calibrate", "floor and reranker constants from the curves (issue 3)", section_calibrate),
        Section("slack_ack", "Slack event ack latency under 50 concurrent signed questions (issue 5)",
                section_slack_ack),
        Section("api", "POST /v1/retrieve p50/p95 at 20 clients over loopback (issue 7)", section_api),
        Section("conflicts", "conflict detector: false alarms on single-answer handbook questions, sample "
                "conflict and ordered pairs", section_conflicts),
        Section("judge", "the answer judge's threshold, chosen on the tune split's end-to-end turns", section_judge),
        Section("answers", "end-to-end turns scored on the answer text: right, wrong shown, escalations, "
                "per set and language, tune and report splits (issue 12)", section_answers),
        Section("sync", "website sync of the GitLab handbook served on 127.0.0.1: pages/s, first run and "
                "unchanged re-run", section_sync),
        Section("robustness", "CLI wall times (--help, docs, cold ask); Slack ack p95 while a 20 MB upload is "
                "ingested; a 16,000-deep HTML refused", section_robustness),
        Section("engines", "the state on PostgreSQL next to SQLite: warm turns, Slack acks, ingest rate at one "
                "and two lanes", section_engines),
    ]


class Tee:
    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


async def run(chosen: list[Section], *, keep: bool, home: Path | None) -> int:
    from bench.latency import build_scale
    from bench.report import section_header
    from bench.retrieval import BUILDERS
    from bench.workspace import Workspace

    t0 = time.perf_counter()
    ws = await Workspace.open(keep=keep, home=home)
    ws.builders.update(BUILDERS)
    ws.builders["scale"] = build_scale
    print(f"workspace: {ws.root} (models loaded in {time.perf_counter() - t0:.1f}s); "
          f"floor RERANK_MIN_SCORE={ws.settings.rerank_min_score}, reranker {ws.recorder.name}, "
          f"multilingual={ws.settings.multilingual_dense}", flush=True)
    timings, failed = [], []
    try:
        for section in chosen:
            section_header(section.name, section.description)
            s0 = time.perf_counter()
            try:
                await section.run(ws)
            except Exception:  # one broken section must not hide the others' numbers
                traceback.print_exc(file=sys.stdout)
                failed.append(section.name)
            timings.append((section.name, time.perf_counter() - s0))
            print(f"[{section.name} {'FAILED after' if section.name in failed else 'took'} {timings[-1][1]:.0f}s]",
                  flush=True)
    finally:
        await ws.close()
    print("\nsection times: " + ", ".join(f"{n} {s:.0f}s" for n, s in timings)
          + f"; total {time.perf_counter() - t0:.0f}s" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    available = sections()
    names = [s.name for s in available]
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"any of: {', '.join(names)} (default: all)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary Cairn home afterwards")
    parser.add_argument("--home", type=Path, help="use (and keep) this workspace; corpora already ingested "
                                                  "there are reused, e.g. one kept by an earlier --keep run")
    args = parser.parse_args(argv)
    unknown = [n for n in args.sections if n not in names]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {names}")
    chosen = [s for s in available if not args.sections or s.name in args.sections]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    suffix = "" if not args.sections or len(chosen) == len(available) else "-" + "-".join(args.sections)
    with open(OUT / f"last-run{suffix}.txt", "w", encoding="utf-8") as log_file:
        sys.stdout = Tee(sys.__stdout__, log_file)  # type: ignore[assignment]
        try:
            print(f"# Cairn bench — {time.strftime('%Y-%m-%d %H:%M:%S')} — python {platform.python_version()}, "
                  f"{os.cpu_count()} cores; sections: {', '.join(s.name for s in chosen)}")
            code = asyncio.run(run(chosen, keep=args.keep, home=args.home))
        finally:
            sys.stdout = sys.__stdout__
    return code


if __name__ == "__main__":
    raise SystemExit(main())
