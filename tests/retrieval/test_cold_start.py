"""The first question of a new process, on a loaded machine, is answered — slow is not unavailable —
while a real outage of the index still escalates as `retrieval_unavailable`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from retrieval.embed import Embedder
from tests.conftest import ROOT, SAMPLE_ACCESS, copy_home, handbook_copy
from tests.load import cpu_hog

HOTEL = "What is the hotel limit per night?"


def cairn(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CAIRN_HOME": str(home), "CAIRN_ACCESS_FILE": str(SAMPLE_ACCESS),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("QDRANT_URL", None)
    return subprocess.run([sys.executable, "-c", "import sys; from bot.cli.main import main; sys.exit(main())",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


async def test_a_fresh_process_on_a_loaded_machine_answers_its_first_question(
        tmp_path: Path, handbook_template: Path) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    with cpu_hog():
        done = cairn(home, "ask", HOTEL, "--json")
    assert done.returncode == 0, done.stderr
    turn = json.loads(done.stdout)
    assert (turn["route"], turn["reason"]) == ("answer", None), (turn["reason"], done.stderr[-2000:])
    assert any(p["doc_id"] == "finance/travel" for p in turn["passages"])


async def test_an_index_that_stopped_working_still_escalates_as_retrieval_unavailable(
        tmp_path: Path, handbook_template: Path, embedder: Embedder) -> None:
    async with handbook_copy(handbook_template, tmp_path / "home", embedder) as svc:
        scope = svc.access.resolve_cli(None)
        await svc.searcher.warm_up()
        assert (await svc.searcher.search(HOTEL, scope)).gate is None
        svc.index.close()  # the engine is gone from under the searcher: every leg raises
        result = await svc.searcher.search(HOTEL, scope)
        assert result.gate == "retrieval_unavailable"
        assert {leg.status for leg in result.legs.values()} == {"error"}
