"""What parsing produces (ParsedDocument of Sections), the per-file error, and the event stream every
format is reduced to before sections are assembled (retrieval/parse/assemble.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    heading_path: tuple[str, ...]
    text: str
    page: int | None


@dataclass(frozen=True)
class ParsedDocument:
    title: str
    sections: tuple[Section, ...]
    lang: str
    metadata: dict[str, object]


class ParseError(Exception):
    """A per-file, user-facing reason the file cannot be ingested. str(e) is shown to the user as-is."""


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Para:
    text: str
    page: int | None = None


Event = Heading | Para

AGAIN = "and upload it again."
EMPTY = f"The file is empty: it has no text to answer questions from. Add the policy text {AGAIN}"
BINARY = f"The file looks like a binary file, not text: export it as .md, .txt, .html or .pdf {AGAIN}"
