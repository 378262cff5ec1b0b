"""CLI fixtures: a private CAIRN_HOME in the environment (the CLI reads its Settings from there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.main import main
from retrieval.embed import Embedder
from tests.conftest import SAMPLE_ACCESS, copy_home


@pytest.fixture
def cairn_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> Path:
    """An empty home for the CLI; `embedder` makes the CLI reuse the session's loaded model."""
    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("CAIRN_HOME", str(home))
    monkeypatch.setenv("CAIRN_ACCESS_FILE", str(SAMPLE_ACCESS))
    for name in ("QDRANT_URL", "CAIRN_RERANK_MODEL", "CAIRN_MULTILINGUAL_DENSE", "CAIRN_MAX_FILE_MB"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def handbook_home(cairn_home: Path, handbook_template: Path) -> Path:
    copy_home(handbook_template, cairn_home)
    return cairn_home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    """Run the CLI; every stdout line must be one JSON object."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err
