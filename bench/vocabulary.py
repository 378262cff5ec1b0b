"""The answer layer's hand-written vocabulary, counted: what deciding by wording costs to keep right.

    python -m bench.vocabulary [--rev GIT_REV]

An entry is one alternative of a regular expression (`re.compile`: its unescaped `|` + 1) or one
item of a word list (the words of a `"…".split()` string, the pieces of a `"a|b".split("|")` one, the strings of a set, tuple or list
literal, the string keys of a dict literal). Counted over the modules that decide what an answer
quotes and whether the question is answered (ANSWER_LAYER); with `--rev`, as they were at that
revision (files that no longer exist included). Comments and docstrings are not counted.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANSWER_LAYER = ("graph/coverage.py", "graph/answerers/extractive.py", "graph/answerers/candidates.py",
                "graph/answerers/judging.py",
                "graph/answerers/features.py", "graph/answerers/figures.py", "graph/tenant_names.py",
                "graph/nodes/tools.py", "retrieval/glossary.py", "retrieval/conflicts.py", "retrieval/rerank.py",
                "retrieval/search.py", "models/judge/__init__.py", "models/places/__init__.py",
                "models/places/build.py")
_PIPE = re.compile(r"(?<!\\)\|")


def count(source: str) -> tuple[int, int]:
    """(regex alternatives, word-list entries) of one module's source."""
    tree = ast.parse(source)
    alternatives = words = 0
    patterns: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "compile" and node.args:
                pattern = _string(node.args[0])
                if pattern is not None:
                    alternatives += len(_PIPE.findall(pattern)) + 1
                    patterns.add(id(node.args[0]))
            elif node.func.attr == "split" and len(node.args) <= 1:
                text = _string(node.func.value)
                sep = _string(node.args[0]) if node.args else None
                if text is not None and (sep or not node.args):
                    words += len(text.split(sep))  # "a b c".split() and "a|b|c".split("|") alike
                    patterns.add(id(node.func.value))
    for node in tree.body:  # module-level constants: word lists, tables, synonym maps
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        for value in ast.walk(node.value):
            if id(value) in patterns:
                continue
            if isinstance(value, (ast.Set, ast.Tuple, ast.List)):
                strings = [e for e in value.elts if _string(e) is not None]
                if len(strings) >= 3 and len(strings) == len(value.elts):
                    words += len(strings)
            elif isinstance(value, ast.Dict):
                words += sum(1 for k in value.keys if k is not None and _string(k) is not None)
        text = _string(node.value)
        if text is not None and id(node.value) not in patterns:
            lines = [x for x in text.splitlines() if ":" in x]
            words += len(lines) if len(lines) >= 3 else (len(text.split()) if len(text.split()) >= 3 else 0)
    return alternatives, words


def _string(node: ast.AST) -> str | None:
    """A string constant, or the concatenation of adjacent ones (an implicitly joined pattern)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _string(node.left), _string(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _source(path: str, rev: str | None) -> str | None:
    if rev is None:
        file = ROOT / path
        return file.read_text(encoding="utf-8") if file.exists() else None
    shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return shown.stdout if shown.returncode == 0 else None


def tally(rev: str | None = None) -> dict[str, tuple[int, int]]:
    out = {}
    for path in ANSWER_LAYER:
        source = _source(path, rev)
        if source is not None:
            out[path] = count(source)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a git revision to count instead of the working tree")
    args = parser.parse_args(argv)
    rows = tally(args.rev)
    for path, (alternatives, words) in rows.items():
        print(f"{path:40s} {alternatives:6d} regex alternatives {words:6d} word-list entries")
    alternatives = sum(a for a, _ in rows.values())
    words = sum(w for _, w in rows.values())
    print(f"{'total':40s} {alternatives:6d} regex alternatives {words:6d} word-list entries = {alternatives + words}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
