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
