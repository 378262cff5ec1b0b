"""The `cairn` entry point itself: its version, and output cut short by the reader."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

CAIRN = Path(sys.executable).parent / "cairn"


def cairn(home: Path, *argv: str, stdout: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CAIRN_HOME": str(home)}
    env.pop("CAIRN_ACCESS_FILE", None)
    return subprocess.run([str(CAIRN), *argv], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=home.parent, timeout=120, check=False)


def test_version(tmp_path: Path) -> None:
    done = cairn(tmp_path / "home", "--version", stdout=subprocess.PIPE)
    assert (done.returncode, done.stdout.strip()) == (0, f"cairn {version('cairn')}")


@pytest.mark.parametrize("argv", [("docs",), ("jobs", "--all")])
def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path: Path, argv: tuple[str, ...]) -> None:
    """`cairn jobs | head -1`: the reader is gone before the command writes; no traceback follows."""
    read, write = os.pipe()
    os.close(read)  # the reader has already stopped: every write gets EPIPE
    try:
        done = cairn(tmp_path / "home", *argv, stdout=write)
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141
