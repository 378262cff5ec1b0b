"""PDF: text per page (pypdf), NFKC-normalised, with headings and paragraphs recovered from lines.

Heuristics: the first line is the level-1 heading (path root) when it is short and has no final period.
Other lines are headings when shorter than 70 characters, not ending in . , ; and either numbered, ALL
CAPS, or Title Case, and the next line is body text. Lines that are only a page number are dropped. Body
lines are re-joined into paragraphs; a paragraph ends at a blank line, at a list bullet, or after a line
that ends a sentence while being clearly shorter than the page's longest line. A page without text
(a scan) refuses the whole file: it needs OCR first.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Iterator

from pypdf import PdfReader

from retrieval.parse import budget
from retrieval.parse.assemble import finish
from retrieval.parse.model import AGAIN, EMPTY, Event, Heading, Para, ParsedDocument, ParseError
from retrieval.parse.text import NUMBERED, is_caps

_PAGE_NUMBER = re.compile(r"^(page\s+)?\d+(\s*(of|/)\s*\d+)?$", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[•·▪◦●‣]\s*|[*–-]\s+)")
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "per", "the", "to", "with"}


def _pdf_error(reason: str) -> ParseError:
    return ParseError(f"The PDF could not be read: {reason}. Re-export or re-save it as PDF {AGAIN}")


def parse_pdf(data: bytes, stem: str) -> ParsedDocument:
    # The PDF spec lets readers accept a header within the first 1024 bytes.
    if b"%PDF-" not in data[:1024]:
        raise _pdf_error("it does not start with a PDF header, so it is probably not a PDF")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _pdf_error("it is password-protected; remove the password")
        budget.check_pages(len(reader.pages))
        pages: list[str] = []
        chars = 0
        for page in reader.pages:  # stops at the character budget, not after the last page
            pages.append(page.extract_text() or "")
            chars += len(pages[-1])
            budget.check_chars(chars)
        info_title = reader.metadata.title if reader.metadata else None
    except ParseError:
        raise
    except Exception as exc:  # pypdf raises many unrelated types for damaged files
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise _pdf_error(reason) from exc
    if not pages:
        raise ParseError(EMPTY)
    # NFKC turns ligatures and Arabic presentation forms back into ordinary letters so search matches.
    page_lines = [_page_lines(unicodedata.normalize("NFKC", text)) for text in pages]
    # A scanned page often still carries a digital page number, so that alone does not count as text.
    blank = [str(number) for number, lines in enumerate(page_lines, 1) if not any(lines)]
    if blank:
        raise ParseError(f"In this PDF, page(s) {', '.join(blank)} have no extractable text (scanned "
                         "image?): it needs OCR before it can be ingested. Run OCR on it or export a "
                         f"text-based PDF from the original {AGAIN}")
    lines = [(line, number) for number, page in enumerate(page_lines, 1) for line in page]
    return finish(stem, _pdf_events(lines), {}, title=_pdf_title(info_title))


def _page_lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.split("\n")]
    filled = [i for i, line in enumerate(lines) if line]
    # Only the first/last line can be a running page number; a bare number elsewhere may be a table cell.
    for i in {filled[0], filled[-1]} if filled else set():
        if _PAGE_NUMBER.match(lines[i]):
            lines[i] = ""
    return lines


def _pdf_title(info_title: object) -> str | None:
    # Word and similar tools often write the source file name as the title; that is worse than none.
    if not isinstance(info_title, str) or not info_title.strip():
        return None
    title = info_title.strip()
    if title.lower().startswith("microsoft word - ") or re.search(r"\.(docx?|pdf|pptx?|odt)$", title, re.I):
        return None
    return title


def _pdf_heading_level(line: str) -> int | None:
    if not line or len(line) >= 70 or line.endswith((".", ",", ";")) or _BULLET.match(line):
        return None
    words = re.findall(r"[^\W\d_][\w'’-]*", line)
    significant = [word for word in words if word.lower() not in _SMALL_WORDS]
    styled = is_caps(line) or bool(significant and all(word[0].isupper() for word in [words[0], *significant]))
    numbered = NUMBERED.match(line)
    if numbered and (styled or len(words) <= 4):  # so "1. Submit the form to HR" stays a list item
        return 2 + numbered.group(1).count(".")
    return 2 if styled and not numbered else None


def _pdf_events(lines: list[tuple[str, int]]) -> Iterator[Event]:
    content = [(i, line) for i, (line, _) in enumerate(lines) if line]
    levels = [_pdf_heading_level(line) for _, line in content]
    if content and len(content[0][1]) <= 80 and not content[0][1].endswith("."):
        levels[0] = 1
    widest: dict[int, int] = {}
    for line, number in lines:
        widest[number] = max(widest.get(number, 0), len(line))
    para: list[str] = []
    page: int | None = None
    previous = ""  # the previous physical line, to judge where a paragraph ended
    for position, (i, line) in enumerate(content):
        level, line_page = levels[position], lines[i][1]
        following = levels[position + 1] if position + 1 < len(content) else 0
        if level == 1 or (level is not None and (following is None or following > level)):
            yield Para("\n".join(para), page)
            para, previous = [], ""
            yield Heading(level, line)
            continue
        bullet = _BULLET.match(line)
        item = bool(bullet or NUMBERED.match(line))
        if para and _starts_paragraph(line, item, previous, para[-1], page_break=line_page != page,
                                      blank_before=not lines[i - 1][0], widest=widest[line_page]):
            yield Para("\n".join(para), page)
            para = []
        if not para:
            page = line_page
        if item:
            para.append("- " + line[bullet.end():] if bullet else line)
        elif para and para[-1].endswith("-") and line[:1].islower():
            para[-1] = para[-1][:-1] + line  # re-join a hyphenated word
        elif para:
            para[-1] = f"{para[-1]} {line}"
        else:
            para.append(line)
        previous = line
    yield Para("\n".join(para), page)


def _starts_paragraph(line: str, item: bool, previous: str, last: str, *, page_break: bool,
                      blank_before: bool, widest: int) -> bool:
    """Whether `line` opens a new paragraph after `previous` (the last physical line of `last`)."""
    sentence_ended = previous.endswith((".", "!", "?", ":", "؟", "۔"))
    if page_break:  # a sentence running over the page break stays whole (and keeps its first page)
        return sentence_ended or not line[:1].islower()
    if item:  # list items are lines of one paragraph
        return not (last.startswith("- ") or NUMBERED.match(last))
    return blank_before or (sentence_ended and len(previous) < 0.75 * widest)
