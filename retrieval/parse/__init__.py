"""Turn an uploaded policy file (Markdown, plain text, HTML, PDF) into titled, sectioned text.

Every format is reduced to the same event stream (headings with a level, paragraphs with a page) and
then assembled into sections by one function, so heading-path rules are identical across formats.
Anything that would make an answer untrustworthy (undecodable text, pages without text, broken front
matter that may carry access groups) raises ParseError instead of ingesting a partial document.

One module a format, each with its own heuristics: markdown.py, text.py (also the UTF-8 decoding the
text formats share), html.py, pdf.py; front_matter.py (metadata), assemble.py (events → sections) and
model.py (the records, the events and the shared messages). This module picks the format.
"""

from __future__ import annotations

from pathlib import Path

from retrieval.parse import budget as _budget
from retrieval.parse.budget import ParseBudget
from retrieval.parse.docx import parse_docx
from retrieval.parse.html import parse_html
from retrieval.parse.markdown import parse_markdown
from retrieval.parse.model import AGAIN, EMPTY, ParsedDocument, ParseError, Section
from retrieval.parse.pdf import parse_pdf
from retrieval.parse.text import decode_text, parse_text

__all__ = ["SUPPORTED_SUFFIXES", "ParseBudget", "ParseError", "ParsedDocument", "Section", "parse_bytes", "parse_file"]

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx"}
_SUFFIX_LIST = ".md, .markdown, .txt, .html, .htm, .pdf, .docx"


def parse_file(path: Path, *, max_bytes: int, budget: ParseBudget | None = None) -> ParsedDocument:
    """Read and parse one file, refusing it before reading when it is over `max_bytes`."""
    try:
        size = path.stat().st_size
        if size <= max_bytes:
            with path.open("rb") as handle:
                data = handle.read(max_bytes + 1)  # bounded: the file may grow after stat()
            size = max(size, len(data))
    except OSError as exc:
        raise ParseError(f"The file could not be opened ({exc.strerror or exc}); upload it again.") from exc
    if size > max_bytes:
        raise ParseError(f"The {_size_phrase(size, max_bytes)}: split it into smaller documents "
                         "and upload them separately.")
    return parse_bytes(data, filename=path.name, budget=budget)


def _size_phrase(size: int, limit: int) -> str:
    # Match the unit the limit was configured in so "10.0 MB limit" reads as the operator wrote it.
    # (Also used by retrieval/ingest.py, which refuses an oversized upload with the same words.)
    unit = 1_000_000 if limit % 1_000_000 == 0 else 1_048_576
    shown, cap = f"{size / unit:.1f}", f"{limit / unit:.1f}"
    if shown == cap:
        return f"file is {size:,} bytes, over the {limit:,}-byte limit"
    return f"file is {shown} MB, over the {cap} MB limit"


def parse_bytes(data: bytes, *, filename: str, budget: ParseBudget | None = None) -> ParsedDocument:
    """Parse file content; the suffix of `filename` picks the format and its stem is the fallback title.

    Reading stops at the first limit of `budget` (retrieval/parse/budget.py) that the file crosses:
    ParseError with the limit, as for any other file Cairn cannot ingest."""
    with _budget.using(budget):
        return _parse(data, filename)


def _parse(data: bytes, filename: str) -> ParsedDocument:
    name = Path(filename)
    suffix = name.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        shown = f"type '{suffix}'" if suffix else "type (no file extension)"
        raise ParseError(f"Cairn cannot ingest this unsupported file {shown}; supported: {_SUFFIX_LIST}. "
                         f"Export it to one of these formats {AGAIN}")
    if not data.strip():
        raise ParseError(EMPTY)
    stem = name.stem or filename
    if suffix == ".pdf":
        return parse_pdf(data, stem)
    if suffix == ".docx":
        return parse_docx(data, stem)
    text = decode_text(data)
    if suffix in {".html", ".htm"}:
        return parse_html(text, stem)  # markup is counted by elements, its text by `finish`
    _budget.check_chars(len(text), complete=True)
    # Each blank line may start a paragraph: counted before any parser builds them.
    _budget.check_blocks(text.count("\n\n"))
    if suffix == ".txt":
        return parse_text(text, stem)
    return parse_markdown(text, stem)
