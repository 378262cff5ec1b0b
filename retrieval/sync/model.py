"""What a source listing hands the mirror: one Fetched per file or page, or a ListingError for the whole
source (an unreachable site, an unmounted folder) so that nothing is withdrawn on a bad day."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CONTENT = "content"  # data (or the file at path) holds the item's bytes: the mirror submits them (same bytes = no-op)
NOT_MODIFIED = "not_modified"  # the validators say nothing changed; no bytes were read or sent
GONE = "gone"  # the item no longer exists (file deleted, HTTP 404/410, moved elsewhere)
ERROR = "error"  # this item could not be read this time; it keeps its current version
SKIPPED = "skipped"  # not something the source syncs (content type, robots.txt); never becomes a document

_UNSAFE = re.compile(r"[^\w\-.\u0600-\u06FF/]+")


class ListingError(Exception):
    """The source as a whole could not be listed; str(e) says why. Nothing is withdrawn."""


@dataclass(frozen=True)
class Fetched:
    key: str  # the stable identity inside the source: a relative path, or a page's URL path
    doc_id: str
    result: str
    filename: str = ""  # what the parser sees (its suffix picks the format); also the citation's path
    data: bytes | None = None
    path: Path | None = None  # a folder file, read only when it is submitted (a listing holds no contents)
    url: str | None = None
    validator: str | None = None  # a folder file's size, mtime and options: unchanged = not re-read
    etag: str | None = None
    last_modified: str | None = None
    links: tuple[str, ...] = ()  # documents linked from a page, remembered for runs that get a 304
    message: str | None = None


def doc_id_from_path(path: str) -> str:
    """A URL or file path → a document id: no extension for pages, unsafe characters replaced."""
    path = path.strip("/")
    name = path.rsplit("/", 1)[-1]
    if name in ("index.html", "index.htm"):
        path = path[: -len(name)]
    elif name.endswith((".html", ".htm")):
        path = path.rsplit(".", 1)[0]
    cleaned = "/".join(part for part in (_UNSAFE.sub("-", p).strip("-") for p in path.split("/")) if part)
    return cleaned.replace("..", "-") or "index"
