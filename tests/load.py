"""A CPU hog for tests whose promise must hold on a busy machine: one busy process per core."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[None]:
    count = processes or os.cpu_count() or 2
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
