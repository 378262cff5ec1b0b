"""The files of a folder source, confined to the folder: what `cairn sync FOLDER` and `cairn ingest DIR`
may read.

Only regular files whose real path is inside the folder are read. A symlink that leads outside it
(`share/passwd.txt -> /etc/passwd`), a device, a FIFO or a socket, and a file on another mount than the
folder's are skipped, each with a one-line reason, so a person who can write to a shared folder can
publish nothing but what is in that folder. Directory symlinks are not followed at all. Hidden files
and folders (`.git`) are not sources.

Reading re-checks at the moment of opening (O_NOFOLLOW on the last component, then fstat of the open
file), so a file swapped for a symlink between listing and reading is refused too, and reads at most
`max_bytes + 1` bytes, so a file that grows meanwhile cannot make the read unbounded.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SkippedFile:
    path: Path
    reason: str


class OutsideSource(OSError):
    """The file is not a regular file inside its folder (any more); str(e) says why."""


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _inside(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def check_file(root: Path, path: Path, *, same_mount: bool = True) -> str | None:
    """Why `path` may not be read as part of the folder `root`, or None when it may."""
    root_real = os.path.realpath(root)
    try:
        real = os.path.realpath(path)
        if not _inside(real, root_real):
            return f"skipped: a symlink to {real}, outside the folder {root_real} (only files inside it are read)"
        info = os.stat(real)
    except OSError as exc:
        return f"skipped: cannot read it ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return f"skipped: {_kind(info.st_mode)}, not a regular file"
    if same_mount and info.st_dev != os.stat(root_real).st_dev:
        return "skipped: the file is on another mounted file system than the folder"
    return None


def list_source_files(root: Path, suffixes: set[str] | frozenset[str] | None) -> tuple[list[Path], list[SkippedFile]]:
    """Regular files under `root` (not following directory symlinks, hidden entries left out) whose
    suffix is in `suffixes` (None: any), sorted; and every entry with such a suffix that was skipped,
    with why.

    Raises OSError when the folder itself cannot be listed."""
    files: list[Path] = []
    skipped: list[SkippedFile] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=_raise):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or (suffixes is not None and Path(name).suffix.lower() not in suffixes):
                continue
            path = Path(dirpath) / name
            reason = check_file(root, path)
            if reason is None:
                files.append(path)
            else:
                skipped.append(SkippedFile(path, reason))
    return sorted(files), sorted(skipped, key=lambda s: s.path)


def _raise(exc: OSError) -> None:
    raise exc


def read_source_file(root: Path, path: Path, *, max_bytes: int) -> bytes:
    """The bytes of a file of the folder, at most `max_bytes + 1` of them (the caller refuses more).

    Raises OutsideSource when the file is not (any more) a regular file inside the folder, and OSError
    when it cannot be read."""
    reason = check_file(root, path)
    if reason is not None:
        raise OutsideSource(reason.removeprefix("skipped: "))
    real = os.path.realpath(path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise OutsideSource(f"it changed while it was being read ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OutsideSource(f"{_kind(info.st_mode)}, not a regular file")
        return handle.read(max_bytes + 1)
