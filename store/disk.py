"""Free space under CAIRN_HOME.

The embedded index maps its files into memory and grows them 32 MB at a time; if the disk fills
while a segment grows, the engine cannot report an error and the process dies (SIGBUS). So the
server reports low disk in `/readyz` and the ingestion worker refuses to start a job (it stays
queued and is retried) while less than CAIRN_MIN_FREE_DISK_MB is free.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MB = 1024 * 1024


class LowDiskError(RuntimeError):
    """Too little free space under CAIRN_HOME to write safely."""


def free_mb(path: Path) -> int:
    """Free megabytes on the filesystem holding `path` (or its nearest existing parent)."""
    probe = Path(path).absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free // MB


def disk_status(path: Path, min_free_mb: int) -> str:
    free = free_mb(path)
    if free < min_free_mb:
        return f"low: {free} MB free under {path}, at least {min_free_mb} MB needed"
    return "ok"


def ensure_free(path: Path, min_free_mb: int) -> None:
    status = disk_status(path, min_free_mb)
    if status != "ok":
        raise LowDiskError(f"not enough disk space ({status.removeprefix('low: ')}); free some space "
                           "or set CAIRN_MIN_FREE_DISK_MB")
