"""What one document may cost to read, enforced while it is read: a parser stops at the first limit it
crosses and refuses the file with the limit's name, instead of reading everything and refusing after.

`ParseBudget` holds the numbers; `parse_bytes` makes one current for the parse (a context variable, so
every format and the shared `finish` see it without threading it through each signature). The limits:

* characters of text — a document that would make far more passages than CAIRN_MAX_CHUNKS allows is
  refused as soon as its text passes twice that many passages' worth;
* blocks (paragraphs, headings, table rows) — a few bytes of markup per paragraph make millions of
  them, and each costs the chunker and the embedder;
* elements of markup (HTML tags, the XML of a Word file) and PDF pages;
* decompressed bytes of a Word file's parts, counted as they are inflated (a zip's declared sizes
  may lie).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from retrieval.parse.model import AGAIN, ParseError

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_SPLIT = "Split it into smaller documents and upload them separately."


@dataclass(frozen=True)
class ParseBudget:
    max_chars: int = 8_400_000  # = 2 × 3,000 passages × 1,400 characters: the passage limit, twice over
    max_blocks: int = 100_000
    max_elements: int = 2_000_000
    max_pages: int = 2_000
    max_unzipped_bytes: int = 64 * 1024 * 1024
    max_passages: int = 3_000  # CAIRN_MAX_CHUNKS, named in the refusal
    chars_per_passage: int = 1_400  # about 4 characters a token × the new tokens of a passage

    @classmethod
    def for_passages(cls, max_chunks: int, chunk_tokens: int, chunk_overlap: int) -> ParseBudget:
        """The character budget that matches a passage limit (about 4 characters a token, twice over)."""
        per_passage = 4 * max(chunk_tokens - chunk_overlap, 1)
        return cls(max_chars=2 * max_chunks * per_passage, max_passages=max_chunks, chars_per_passage=per_passage)


DEFAULT_BUDGET = ParseBudget()
_current: contextvars.ContextVar[ParseBudget] = contextvars.ContextVar("parse_budget", default=DEFAULT_BUDGET)


def current() -> ParseBudget:
    return _current.get()


@contextlib.contextmanager
def using(budget: ParseBudget | None) -> Iterator[ParseBudget]:
    token = _current.set(budget or DEFAULT_BUDGET)
    try:
        yield _current.get()
    finally:
        _current.reset(token)


def over(what: str, limit: int, unit: str) -> ParseError:
    """The refusal for a crossed limit: what was counted, the limit, what to do."""
    return ParseError(f"The file has more than {limit:,} {unit} of {what}, over what Cairn reads in one "
                      f"document. {_SPLIT}")


def check_chars(count: int, *, complete: bool = False) -> None:
    """Refuse text past the budget. `complete`: `count` is the whole text (else reading stopped here)."""
    budget = current()
    if count > budget.max_chars:
        estimate = count // budget.chars_per_passage
        amount = f"about {estimate:,}" if complete else f"more than {estimate:,}"
        raise ParseError(f"The document would make {amount} passages, over the limit of {budget.max_passages:,} "
                         f"per document (CAIRN_MAX_CHUNKS): it holds more than {budget.max_chars:,} characters "
                         f"of text. {_SPLIT}")


def check_blocks(count: int) -> None:
    budget = current()
    if count > budget.max_blocks:
        raise ParseError(f"The file has more than {budget.max_blocks:,} paragraphs, headings and table rows, "
                         f"over what Cairn reads in one document. {_SPLIT}")


def check_elements(count: int) -> None:
    budget = current()
    if count > budget.max_elements:
        raise ParseError(f"The file's markup has more than {budget.max_elements:,} elements, over what Cairn "
                         f"reads in one document. {_SPLIT}")


def check_pages(count: int) -> None:
    budget = current()
    if count > budget.max_pages:
        raise ParseError(f"The PDF has {count:,} pages, over the limit of {budget.max_pages:,} pages per "
                         f"document. {_SPLIT}")


_READ = 1024 * 1024
_COUNTED_PARTS = ("word/document.xml", "word/footnotes.xml", "word/endnotes.xml")


def check_package(data: bytes) -> None:
    """Inflate every part of a Word package once, stopping at the decompressed-size budget, and count
    the main parts' XML elements and paragraphs, stopping at theirs. Raises ParseError (a damaged zip
    included); returns when the package is within budget."""
    budget = current()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ParseError(f"The Word file could not be read: it is not a .docx package ({exc}). Open it in "
                         f"Word and save it again as .docx {AGAIN}") from exc
    total = elements = paragraphs = 0
    with archive:
        for info in archive.infolist():
            if info.file_size > budget.max_unzipped_bytes - total:  # declared: refuse before inflating
                raise _too_big(budget)
            counter = _XmlCounter() if info.filename in _COUNTED_PARTS else None
            try:
                with archive.open(info) as part:
                    while chunk := part.read(_READ):
                        total += len(chunk)
                        if total > budget.max_unzipped_bytes:  # actual: a lying header changes nothing
                            raise _too_big(budget)
                        if counter is not None:
                            counter.feed(chunk)
                            if elements + counter.elements > budget.max_elements:
                                check_elements(elements + counter.elements)
                            if paragraphs + counter.paragraphs > budget.max_blocks:
                                check_blocks(paragraphs + counter.paragraphs)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
                raise ParseError(f"The Word file could not be read: a part of it is damaged ({exc}). Open it "
                                 f"in Word and save it again as .docx {AGAIN}") from exc
            if counter is not None:
                elements += counter.elements
                paragraphs += counter.paragraphs


def _too_big(budget: ParseBudget) -> ParseError:
    return ParseError(f"The Word file expands to more than {budget.max_unzipped_bytes / 1048576:g} MB when "
                      f"unpacked, over what Cairn reads in one document. {_SPLIT}")


class _XmlCounter:
    """Counts elements and Word paragraphs of XML fed in pieces; keeps no tree (each element is cleared
    when it ends). Malformed XML is left for the real parser to report."""

    def __init__(self) -> None:
        self._parser = etree.XMLPullParser(events=("end",), resolve_entities=False, no_network=True,
                                           huge_tree=False)
        self.elements = 0
        self.paragraphs = 0
        self._broken = False

    def feed(self, chunk: bytes) -> None:
        if self._broken:
            return
        try:
            self._parser.feed(chunk)
            for _event, element in self._parser.read_events():
                self.elements += 1
                if element.tag == f"{{{_W}}}p":
                    self.paragraphs += 1
                element.clear(keep_tail=False)
                parent = element.getparent()
                while parent is not None and element.getprevious() is not None:
                    del parent[0]  # finished siblings: the tree never grows past one path of elements
        except etree.XMLSyntaxError:
            self._broken = True
