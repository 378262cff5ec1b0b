"""Validate the judge's staff-style question files: python -m models.judge.data.check_questions

Checks, for handbook-questions.jsonl and handbook-questions-ar.jsonl:
  * every line is valid JSON with the fields its kind needs;
  * ids are unique across both files;
  * gold_path / near_path are training pages (models/splits.py), never README/SOURCE;
  * gold_text is an exact substring of the page text;
  * every entry of answers is a non-empty substring of gold_text.
Prints counts and exits non-zero on any problem.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from models.judge.pairs import DATA, pages_of
from models.splits import TRAIN

HERE = Path(__file__).resolve().parent
HANDBOOKS = DATA / "handbooks"
FILES = [HERE / "handbook-questions.jsonl", HERE / "handbook-questions-ar.jsonl"]
KINDS = {"answerable", "near_miss", "ooc"}


def main() -> int:
    train = set(pages_of(TRAIN))
    pages: dict[str, str] = {}
    problems: list[str] = []
    ids: Counter[str] = Counter()
    kinds: Counter[tuple[str, str]] = Counter()
    prefixes: Counter[tuple[str, str]] = Counter()
    per_page: Counter[str] = Counter()

    def page_text(path: str) -> str:
        if path not in pages:
            pages[path] = (HANDBOOKS / path).read_text(encoding="utf-8")
        return pages[path]

    for f in FILES:
        if not f.exists():
            problems.append(f"{f.name}: missing file")
            continue
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{f.name}:{n}"
            if not line.strip():
                problems.append(f"{where}: blank line")
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{where}: bad JSON ({e})")
                continue
            qid, kind, q = d.get("id"), d.get("kind"), d.get("question")
            ids[qid] += 1
            if not qid or not isinstance(q, str) or not q.strip():
                problems.append(f"{where}: missing id or question")
            if kind not in KINDS:
                problems.append(f"{where}: bad kind {kind!r}")
                continue
            lang = d.get("lang", "en")
            kinds[(f.name, kind)] += 1
            if f.name.endswith("-ar.jsonl") and lang != "ar":
                problems.append(f"{where}: Arabic file line without lang=ar")
            if kind == "answerable":
                p, g, ans = d.get("gold_path"), d.get("gold_text"), d.get("answers")
                if p not in train:
                    problems.append(f"{where}: gold_path not in train list: {p}")
                    continue
                if not isinstance(g, str) or not g.strip() or g not in page_text(p):
                    problems.append(f"{where}: gold_text not an exact substring of {p}: {str(g)[:70]!r}")
                if not isinstance(ans, list) or not ans:
                    problems.append(f"{where}: answers must be a non-empty list")
                else:
                    for a in ans:
                        if not isinstance(a, str) or not a.strip() or a not in (g or ""):
                            problems.append(f"{where}: answer {a!r} not in gold_text")
                prefixes[(kind, p.split("/")[0])] += 1
                per_page[p] += 1
            elif kind == "near_miss":
                p = d.get("near_path")
                if p not in train:
                    problems.append(f"{where}: near_path not in train list: {p}")
                    continue
                if not d.get("why"):
                    problems.append(f"{where}: near_miss without why")
                prefixes[(kind, p.split("/")[0])] += 1

    for qid, c in ids.items():
        if c > 1:
            problems.append(f"duplicate id {qid} ({c}x)")

    for (fname, kind), c in sorted(kinds.items()):
        print(f"{fname:32s} {kind:11s} {c}")
    for (kind, pre), c in sorted(prefixes.items()):
        print(f"  {kind:11s} {pre:12s} {c}")
    print(f"pages with answerable questions: {len(per_page)}; max per page: {max(per_page.values(), default=0)}")
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
