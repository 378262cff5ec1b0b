"""The `engines` bench section's pieces at tiny counts: it runs end to end on both engines, and
without PostgreSQL it prints the SQLite numbers and why, instead of crashing. Speed is not tested."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench import engines
from bench.workspace import Workspace
from tests.pg import PgServer

pytestmark = pytest.mark.slow


@pytest.fixture
async def workspace(tmp_path: Path) -> AsyncIterator[Workspace]:
    ws = await Workspace.open(home=tmp_path / "bench")
    try:
        yield ws
    finally:
        await ws.close()


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "N_TURNS", 2)
    monkeypatch.setattr(engines, "N_TURN_WARMUP", 1)
    monkeypatch.setattr(engines, "ACK_BURSTS", 2)
    monkeypatch.setattr(engines, "ACK_CONCURRENT", 2)
    monkeypatch.setattr(engines, "REUSED_REPEATS", 1)
    pages, handbook = engines.ingest_docs()[:2], engines.sample_docs()[:3]
    monkeypatch.setattr(engines, "ingest_docs", lambda: pages)
    monkeypatch.setattr(engines, "sample_docs", lambda: handbook)


def test_the_ingest_pages_are_a_fixed_sample_of_small_gitlab_pages() -> None:
    docs = engines.ingest_docs()
    if not docs:
        pytest.skip("the GitLab handbook is not beside the checkout")
    assert docs == engines.ingest_docs()
    assert all(d.filename.startswith("gitlab/") and len(d.data) <= engines.INGEST_MAX_BYTES for d in docs)
    assert len({d.doc_id for d in docs}) == len(docs)


async def test_both_engines_measured_with_ratios(workspace: Workspace, tiny: None, pg_server: PgServer,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    await engines.section_engines(workspace)
    out = capsys.readouterr().out
    assert "PostgreSQL not measured" not in out
    turns = _table(out, "Warm offline turns")
    assert turns["turn p50 ms"][0] != "n/a" and turns["turn p50 ms"][1] != "n/a"
    assert float(turns["turn p50 ms"][2]) > 0  # PostgreSQL / SQLite
    acks = _table(out, "Slack event ack latency")
    assert float(acks["ack max ms (sender)"][2]) > 0
    ingest = _table(out, "Ingest rate")
    assert set(ingest) >= {"embeddings computed, 1 lane: pages/s", "embeddings computed, 2 lanes: pages/s",
                           "embeddings reused, 2 lanes: chunks/s", "embeddings computed: 2 lanes ÷ 1 lane"}
    assert all(v[2] != "n/a" for v in ingest.values())
    assert not list(workspace.root.glob("engines-*")), "the section's homes are removed"


async def test_without_postgresql_the_sqlite_numbers_and_the_reason(
        workspace: Workspace, tiny: None, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import tests.pg

    monkeypatch.setattr(tests.pg, "unavailable_reason", lambda: "no PostgreSQL binaries here")
    await engines.section_engines(workspace)
    out = capsys.readouterr().out
    assert "PostgreSQL not measured, SQLite only: no PostgreSQL binaries here" in out
    turns = _table(out, "Warm offline turns")
    sqlite, postgres, ratio, difference = turns["turn p50 ms"]
    assert float(sqlite) > 0 and postgres == ratio == difference == "n/a"
    assert _table(out, "Ingest rate")["embeddings computed, 2 lanes: pages/s"][1:] == ["n/a", "n/a"]


def _table(out: str, title: str) -> dict[str, list[str]]:
    """The rows of the printed table whose title starts with `title`: first cell → the other cells."""
    lines = out.split(f"### {title}", 1)[1].splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.startswith("### ")), len(lines))
    rows = [line for line in lines[:end] if line.startswith("| ")][1:]  # without the header
    return {cells[0]: cells[1:] for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)}
