"""A parse worker dies with the process it parses for, even when that process is killed with -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import asyncio, os, time
from retrieval.parse.isolated import parse_in_worker
asyncio.run(parse_in_worker(b"# Leave\\n\\nFull-time staff receive 25 days.\\n", filename="leave.md"))
print("parsed", flush=True)
time.sleep(120)
"""


def test_a_killed_command_leaves_no_parse_worker_holding_its_output() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env, cwd=ROOT)
    assert run.stdout is not None
    assert run.stdout.readline().strip() == "parsed"
    run.send_signal(signal.SIGKILL)
    # The worker inherited stdout and stderr: the pipes close only once it is gone too.
    out, _ = run.communicate(timeout=30)
    assert run.returncode == -signal.SIGKILL and out == ""


def test_a_worker_whose_parent_died_while_it_started_exits_at_once() -> None:
    # The pool passes its own pid; a worker that finds another parent (init, after a kill -9 during
    # its start-up) must not wait for a parent-death signal that was armed too late.
    script = "from retrieval.parse.isolated import _die_with\n_die_with(1)\nprint('still running')\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert done.returncode == 1 and "still running" not in done.stdout
