"""Turn an uploaded policy file (Markdown, plain text, HTML, PDF) into titled, sectioned text.

Every format is reduced to the same event stream (headings with a level, paragraphs with a page) and
then assembled into sections by one function, so heading-path rules are identical across formats.
Anything that would make an answer untrustworthy (undecodable text, pages without text, broken front
matter that may carry access groups) raises ParseError instead of ingesting a partial document.

Heuristics for formats without explicit structure:

* Plain text: the first non-empty line is the title when it is at most 80 characters. A line that is
  a block of its own (blank lines around it), at most 80 characters, without a final period, and either
  numbered ("2. Hotels", "2.1 Boston") or ALL CAPS is a heading when the next block is body text or a
  deeper numbered heading. Numbering depth sets the level ("2." → 2, "2.1" → 3); ALL CAPS is level 2.
  Requiring body text after it keeps a list of one-line numbered items from being read as headings
  (and then dropped as empty sections).
* PDF: the first line is the level-1 heading (path root) when it is short and has no final period.
  Other lines are headings when shorter than 70 characters, not ending in . , ; and either numbered,
  ALL CAPS, or Title Case, and the next line is body text. Lines that are only a page number are
  dropped. Body lines are re-joined into paragraphs; a paragraph ends at a blank line, at a list
  bullet, or after a line that ends a sentence while being clearly shorter than the page's longest line.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml
from bs4 import BeautifulSoup, NavigableString, Tag
from pypdf import PdfReader

from retrieval.language import detect_language


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


SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm", ".pdf"}
_SUFFIX_LIST = ".md, .markdown, .txt, .html, .htm, .pdf"
_METADATA_KEYS = ("title", "policy_id", "owner", "effective", "expires", "supersedes", "groups",
                  "sensitivity", "lang")
_LANGS = ("en", "ar", "mixed")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # control characters that plain text never needs
_AGAIN = "and upload it again."


@dataclass(frozen=True)
class _Heading:
    level: int
    text: str


@dataclass(frozen=True)
class _Para:
    text: str
    page: int | None = None


_Event = _Heading | _Para


_EMPTY = f"The file is empty: it has no text to answer questions from. Add the policy text {_AGAIN}"
_BINARY = f"The file looks like a binary file, not text: export it as .md, .txt, .html or .pdf {_AGAIN}"



def parse_file(path: Path, *, max_bytes: int) -> ParsedDocument:
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
    return parse_bytes(data, filename=path.name)


def _size_phrase(size: int, limit: int) -> str:
    # Match the unit the limit was configured in so "10.0 MB limit" reads as the operator wrote it.
    unit = 1_000_000 if limit % 1_000_000 == 0 else 1_048_576
    shown, cap = f"{size / unit:.1f}", f"{limit / unit:.1f}"
    if shown == cap:
        return f"file is {size:,} bytes, over the {limit:,}-byte limit"
    return f"file is {shown} MB, over the {cap} MB limit"


def parse_bytes(data: bytes, *, filename: str) -> ParsedDocument:
    """Parse file content; the suffix of `filename` picks the format and its stem is the fallback title."""
    name = Path(filename)
    suffix = name.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        shown = f"type '{suffix}'" if suffix else "type (no file extension)"
        raise ParseError(f"Cairn cannot ingest this unsupported file {shown}; supported: {_SUFFIX_LIST}. "
                         f"Export it to one of these formats {_AGAIN}")
    if not data.strip():
        raise ParseError(_EMPTY)
    stem = name.stem or filename
    if suffix == ".pdf":
        return _parse_pdf(data, stem)
    text = _decode_text(data)
    if suffix == ".txt":
        return _finish(stem, _text_events(text), {})
    if suffix in {".html", ".htm"}:
        return _parse_html(text, stem)
    return _parse_markdown(text, stem)


def _decode_text(data: bytes) -> str:
    # UTF-16 files contain NULs but are text: let the UTF-8 check explain them instead of "binary".
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError(_BINARY)
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        text = data[bom:].decode("utf-8")  # strict on purpose: replacement chars would corrupt policy text
    except UnicodeDecodeError as exc:
        offset = exc.start + bom
        raise ParseError(f"The file is not valid UTF-8 text (byte 0x{data[offset]:02x} at offset {offset}); "
                         f"save it as UTF-8 {_AGAIN}") from exc
    if len(_CONTROL.findall(text)) > max(2, len(text) // 100):
        raise ParseError(_BINARY)
    return text.replace("\r\n", "\n").replace("\r", "\n")



def _finish(stem: str, events: Iterable[_Event], metadata: dict[str, object], *,
            title: str | None = None) -> ParsedDocument:
    events = list(events)
    headings = [event for event in events if isinstance(event, _Heading)]
    # A single leading H1 names the document; several H1s are its top-level sections instead.
    root_from_h1 = bool(headings) and headings[0].level == 1 and [h.level for h in headings].count(1) == 1
    title = title or (headings[0].text if root_from_h1 else None) or stem
    sections = _assemble(events, title, root_from_h1=root_from_h1)
    if not sections:
        raise ParseError(_EMPTY)
    body = "\n".join(section.text for section in sections)
    lang = metadata.get("lang") or detect_language(body)
    return ParsedDocument(title=title, sections=sections, lang=str(lang), metadata=metadata)


def _assemble(events: list[_Event], title: str, *, root_from_h1: bool) -> tuple[Section, ...]:
    # The root of every path is the document's single leading H1, or else the title at level 0.
    stack: list[tuple[int, str]] = [] if root_from_h1 else [(0, title)]
    sections: list[Section] = []
    paras: list[str] = []
    page: int | None = None

    def flush() -> None:
        text = "\n\n".join(paras).strip()
        path = tuple(t for _, t in stack) or (title,)
        if text and sections and sections[-1].heading_path == path and sections[-1].page == page:
            sections[-1] = Section(path, f"{sections[-1].text}\n\n{text}", page)  # intro around an H1
        elif text:
            sections.append(Section(path, text, page))
        paras.clear()

    for event in events:
        if isinstance(event, _Heading):
            flush()
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            stack.append((event.level, event.text))
        elif event.text.strip():
            # A new page starts a new Section with the same path so every Section has one page.
            if paras and event.page != page:
                flush()
            if not paras:
                page = event.page
            paras.append(event.text.strip())
    flush()
    return tuple(sections)



def _clean_metadata(raw: dict[object, object]) -> dict[str, object]:
    """Keep the known keys, as strings (dates ISO) and `groups` as a list of names."""
    out: dict[str, object] = {}
    for key in _METADATA_KEYS:
        value = raw.get(key)
        if value is None or value == "" or value == []:
            continue
        if key == "groups":
            out[key] = _groups(value)
        elif isinstance(value, list):
            out[key] = ", ".join(_scalar(item) for item in value)
        else:
            out[key] = _scalar(value)
    lang = out.get("lang")
    if lang is not None:
        lang = str(lang).lower()
        if lang not in _LANGS:
            raise ParseError(f"The metadata field 'lang' is '{out['lang']}', but it must be one of "
                             f"{', '.join(_LANGS)}: correct it {_AGAIN}")
        out["lang"] = lang
    return out


def _scalar(value: object) -> str:
    return value.isoformat() if isinstance(value, date) else str(value).strip()


def _groups(value: object) -> list[str]:
    # Groups drive access control, so an unreadable value must stop ingestion, never widen access.
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list) and all(isinstance(item, str | int) for item in value):
        return [str(item).strip() for item in value if str(item).strip()]
    raise ParseError("The metadata field 'groups' must be a list of group names (for example "
                     f"'groups: [hr, finance]'): correct it {_AGAIN}")


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^\s{0,3}(#{1,6})(?:\s+(.*?))?\s*$")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_LIST = re.compile(r"^(\s*)(?:[-*+]|(\d+[.)]))\s+(.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_LINK_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(https?://|mailto:|/|#)\S*.*$")
_INLINE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"!\[[^\]]*\]\([^)]*\)|!\[[^\]]*\]\[[^\]]*\]"), ""),  # images
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # [text](url)
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),  # [text][ref]
    (re.compile(r"<(https?://[^>\s]+)>"), r"\1"),  # autolinks
    (re.compile(r"`([^`]+)`"), r"\1"),
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])"), r"\1"),
    # Word-bounded so identifiers such as policy_id keep their underscores.
    (re.compile(r"(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)"), r"\1"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),
)


def _inline(text: str) -> str:
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return text.strip()


def _split_front_matter(text: str) -> tuple[dict[str, object], str]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    # An unterminated or unparsable block may hold `groups`; ingesting it as body would make a
    # restricted policy public, so these are errors rather than "not front matter".
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in {"---", "..."}), None)
    if end is None:
        raise ParseError("The front matter is not valid YAML: it has no closing '---' line. Add one after "
                         f"the metadata {_AGAIN}")
    try:
        raw = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ParseError(f"The front matter is not valid YAML: {problem}{where}. Fix the metadata between "
                         f"the '---' lines {_AGAIN}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParseError("The front matter is not valid YAML: it must be 'key: value' lines. Fix the "
                         f"metadata between the '---' lines {_AGAIN}")
    return _clean_metadata(raw), "\n".join(lines[end + 1:])


def _parse_markdown(text: str, stem: str) -> ParsedDocument:
    metadata, body = _split_front_matter(text)
    body = re.sub(r"<!--.*?-->", "", body, flags=re.DOTALL)
    title = metadata.get("title")
    return _finish(stem, _markdown_events(body), metadata, title=str(title) if title else None)


def _markdown_events(body: str) -> Iterator[_Event]:
    block: list[str] = []
    fence: str | None = None
    for line in body.split("\n"):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if fence_match and fence_match.group(1)[0] == fence[0] and len(fence_match.group(1)) >= len(fence):
                fence = None
            else:
                block.append(line.rstrip())  # code is kept verbatim, including '#' lines
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        heading, setext = _ATX.match(line), _SETEXT.match(line)
        # Only heading-like lines: a sentence above a "---" separator would otherwise be lost as an
        # empty heading.
        if (setext and len(block) == 1 and len(block[0]) <= 80 and not _LIST.match(block[0])
                and "|" not in block[0] and not block[0].endswith((".", ",", ";", ":"))):
            yield _Heading(1 if "=" in line else 2, block.pop())  # "Title" underlined with === or ---
        elif heading:
            yield _Para("\n".join(block))
            block = []
            heading_text = _inline(re.sub(r"\s+#+$", "", heading.group(2) or ""))
            if heading_text:
                yield _Heading(len(heading.group(1)), heading_text)
        elif not line.strip():
            yield _Para("\n".join(block))
            block = []
        elif not _RULE.match(line) and not _LINK_DEF.match(line):
            _add_markdown_line(block, line)
    yield _Para("\n".join(block))


def _add_markdown_line(block: list[str], line: str) -> None:
    stripped = re.sub(r"^\s{0,3}(>\s?)+", "", line).rstrip()  # blockquote markers
    table_row = "|" in stripped and (stripped.lstrip().startswith("|") or bool(block and "|" in block[-1]))
    if table_row:
        if not _TABLE_SEP.match(stripped):
            cells = [_inline(cell) for cell in stripped.strip().strip("|").split("|")]
            block.append(" | ".join(cells))
        return
    item = _LIST.match(stripped)
    if item:
        indent = " " * min(len(item.group(1)) // 2 * 2, 8)
        marker = item.group(2) or "-"
        block.append(f"{indent}{marker} {_inline(item.group(3))}")
    elif block:
        block[-1] = f"{block[-1]} {_inline(stripped)}"  # soft-wrapped continuation line
    else:
        block.append(_inline(stripped))


# One or two digits per level, so a line such as "2024 Travel Policy" is not read as numbered.
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)[.)]?\s+\S")


def _caps(line: str) -> bool:
    letters = [char for char in line if char.isalpha()]
    return len(letters) >= 2 and all(char.isupper() for char in letters)


def _text_heading_level(block: str) -> int | None:
    if "\n" in block or len(block) > 80 or block.endswith((".", ",", ";")):
        return None
    numbered = _NUMBERED.match(block)
    if numbered:
        return 2 + numbered.group(1).count(".")
    return 2 if _caps(block) else None


def _text_events(text: str) -> list[_Event]:
    blocks = [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]
    if not blocks:
        return []
    events: list[_Event] = []
    first, *rest = blocks[0].split("\n", 1)
    if len(first.strip()) <= 80:
        events.append(_Heading(1, first.strip()))
        blocks[0] = rest[0].strip() if rest else ""
    levels = [_text_heading_level(block) for block in blocks]
    for i, block in enumerate(blocks):
        level, following = levels[i], levels[i + 1] if i + 1 < len(blocks) else -1
        if level is not None and (following is None or (following != -1 and following > level)):
            events.append(_Heading(level, block))
        else:
            events.append(_Para(block))
    return events


_DROP_TAGS = ("script", "style", "nav", "header", "footer", "noscript", "template")
_INLINE_TAGS = {"a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "dfn", "em", "font", "i", "img",
                "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time",
                "u", "var"}
_HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


def _parse_html(text: str, stem: str) -> ParsedDocument:
    soup = BeautifulSoup(text, "html.parser")
    raw: dict[object, object] = {}
    for meta in soup.find_all("meta"):
        name, content = meta.get("name"), meta.get("content")
        if isinstance(name, str) and isinstance(content, str):
            raw[name.strip().lower().replace("-", "_")] = content.strip()
    title_tag = soup.find("title")
    if title_tag and title_tag.get_text(strip=True) and "title" not in raw:
        raw["title"] = title_tag.get_text(" ", strip=True)
    metadata = _clean_metadata(raw)
    for tag in soup.find_all(list(_DROP_TAGS)):
        # An <article>'s own <header> usually holds its <h1>; only site-wide headers/footers are chrome.
        if tag.name not in {"header", "footer"} or not tag.find_parent(["article", "main"]):
            tag.decompose()
    # Text is read with get_text("") so inline markup does not split words; block boundaries and
    # <br> still need a space so neighbouring blocks do not run together.
    for tag in soup.find_all(True):
        if tag.name == "br":
            tag.replace_with(" ")
        elif tag.name not in _INLINE_TAGS and tag.parent is not None:
            tag.insert_after(" ")
    root = soup.find("body") or soup
    title = metadata.get("title")
    return _finish(stem, list(_html_events(root)), metadata, title=str(title) if title else None)


def _words(node: Tag | NavigableString) -> str:
    return " ".join(node.get_text("").split())


def _html_events(node: Tag) -> Iterator[_Event]:
    inline: list[str] = []
    for child in node.children:
        if isinstance(child, NavigableString):
            if type(child) is NavigableString:  # skips comments, doctype, CDATA
                inline.append(str(child))
            continue
        if not isinstance(child, Tag) or child.name in {"title", "head", "meta"}:
            continue
        if child.name in _INLINE_TAGS:
            inline.append(child.get_text(""))
            continue
        yield _Para(" ".join("".join(inline).split()))
        inline = []
        if child.name in _HEADING_TAGS:
            if _words(child):
                yield _Heading(int(child.name[1]), _words(child))
        elif child.name in {"p", "dt", "dd", "figcaption", "caption"}:
            yield _Para(_words(child))
        elif child.name == "pre":
            yield _Para(child.get_text().strip("\n"))
        elif child.name in {"ul", "ol"}:
            yield _Para("\n".join(_html_list(child, 0)))
        elif child.name == "table":
            yield _Para("\n".join(_html_table(child)))
        else:
            yield from _html_events(child)
    yield _Para(" ".join("".join(inline).split()))


def _html_list(node: Tag, depth: int) -> Iterator[str]:
    for number, item in enumerate(node.find_all("li", recursive=False), 1):
        nested = item.find_all(["ul", "ol"], recursive=False)
        for sub in nested:
            sub.extract()
        marker = f"{number}." if node.name == "ol" else "-"
        if _words(item):
            yield f"{'  ' * depth}{marker} {_words(item)}"
        for sub in nested:
            yield from _html_list(sub, depth + 1)


def _html_table(table: Tag) -> Iterator[str]:
    for row in table.find_all("tr"):
        cells = [_words(cell) for cell in row.find_all(["td", "th"], recursive=False)]
        if any(cells):
            yield " | ".join(cells)


_PAGE_NUMBER = re.compile(r"^(page\s+)?\d+(\s*(of|/)\s*\d+)?$", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[•·▪◦●‣]\s*|[*–-]\s+)")
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "per", "the", "to", "with"}


def _pdf_error(reason: str) -> ParseError:
    return ParseError(f"The PDF could not be read: {reason}. Re-export or re-save it as PDF {_AGAIN}")


def _parse_pdf(data: bytes, stem: str) -> ParsedDocument:
    # The PDF spec lets readers accept a header within the first 1024 bytes.
    if b"%PDF-" not in data[:1024]:
        raise _pdf_error("it does not start with a PDF header, so it is probably not a PDF")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _pdf_error("it is password-protected; remove the password")
        pages = [page.extract_text() or "" for page in reader.pages]
        info_title = reader.metadata.title if reader.metadata else None
    except ParseError:
        raise
    except Exception as exc:  # pypdf raises many unrelated types for damaged files
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise _pdf_error(reason) from exc
    if not pages:
        raise ParseError(_EMPTY)
    # NFKC turns ligatures and Arabic presentation forms back into ordinary letters so search matches.
    page_lines = [_page_lines(unicodedata.normalize("NFKC", text)) for text in pages]
    # A scanned page often still carries a digital page number, so that alone does not count as text.
    blank = [str(number) for number, lines in enumerate(page_lines, 1) if not any(lines)]
    if blank:
        raise ParseError(f"In this PDF, page(s) {', '.join(blank)} have no extractable text (scanned "
                         "image?): it needs OCR before it can be ingested. Run OCR on it or export a "
                         f"text-based PDF from the original {_AGAIN}")
    lines = [(line, number) for number, page in enumerate(page_lines, 1) for line in page]
    return _finish(stem, _pdf_events(lines), {}, title=_pdf_title(info_title))


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
    styled = _caps(line) or bool(significant and all(word[0].isupper() for word in [words[0], *significant]))
    numbered = _NUMBERED.match(line)
    if numbered and (styled or len(words) <= 4):  # so "1. Submit the form to HR" stays a list item
        return 2 + numbered.group(1).count(".")
    return 2 if styled and not numbered else None


def _pdf_events(lines: list[tuple[str, int]]) -> Iterator[_Event]:
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
            yield _Para("\n".join(para), page)
            para, previous = [], ""
            yield _Heading(level, line)
            continue
        bullet = _BULLET.match(line)
        item = bool(bullet or _NUMBERED.match(line))
        if para and _starts_paragraph(line, item, previous, para[-1], page_break=line_page != page,
                                      blank_before=not lines[i - 1][0], widest=widest[line_page]):
            yield _Para("\n".join(para), page)
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
    yield _Para("\n".join(para), page)


def _starts_paragraph(line: str, item: bool, previous: str, last: str, *, page_break: bool,
                      blank_before: bool, widest: int) -> bool:
    """Whether `line` opens a new paragraph after `previous` (the last physical line of `last`)."""
    sentence_ended = previous.endswith((".", "!", "?", ":", "؟", "۔"))
    if page_break:  # a sentence running over the page break stays whole (and keeps its first page)
        return sentence_ended or not line[:1].islower()
    if item:  # list items are lines of one paragraph
        return not (last.startswith("- ") or _NUMBERED.match(last))
    return blank_before or (sentence_ended and len(previous) < 0.75 * widest)
