"""Commands that need no model start without importing one: `cairn --help` and the database-only
commands must not load torch, the embedding stack, the graph or the LLM client (each costs seconds in a
new process). Checked by what a fresh interpreter has imported after the command ran, not by timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SAMPLE_ACCESS

HEAVY = ("torch", "sentence_transformers", "transformers", "langgraph", "langchain_core", "openai",
         "qdrant_edge", "qdrant_client")

# Runs the console script's main() with the given arguments, then reports the heavy packages imported.
PROBE = f"""
import json, sys
from bot.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # --help exits through argparse
    code = exc.code
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
sys.stderr.write("\\nPROBE " + json.dumps({{"code": code, "loaded": loaded}}) + "\\n")
"""


def _probe(tmp_path: Path, *argv: str) -> dict[str, object]:
    env = {**os.environ, "CAIRN_HOME": str(tmp_path / "home"), "CAIRN_ACCESS_FILE": str(SAMPLE_ACCESS)}
    env.pop("QDRANT_URL", None)
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.startswith("PROBE ")]
    assert lines, done.stderr[-2000:]
    return json.loads(lines[-1].removeprefix("PROBE "))


@pytest.mark.parametrize("argv", [("--help",), ("docs",), ("docs", "--json"), ("jobs", "--all"),
                                  ("escalations", "--open"), ("sources",), ("controls",), ("ingest", "--help"),
                                  ("digest", "--week", "2026-W05")], ids=" ".join)
def test_a_command_that_needs_no_model_imports_none(tmp_path: Path, argv: tuple[str, ...]) -> None:
    result = _probe(tmp_path, *argv)
    assert result["code"] == 0, result
    assert result["loaded"] == [], f"cairn {' '.join(argv)} imported {result['loaded']}"


def test_the_probe_sees_a_command_that_opens_the_graph(tmp_path: Path) -> None:
    """`cairn withdraw` opens the index and the graph: the same probe reports them, so it is not blind."""
    result = _probe(tmp_path, "withdraw", "no/such-doc")
    assert result["code"] == 2
    assert {"langgraph", "qdrant_edge"} <= set(result["loaded"]), result  # type: ignore[arg-type]
