"""Word (.docx): headings from Heading 1–6 styles or outline levels, tables as rows that carry their column
names, list items as lines, footnotes and endnotes kept beside the paragraph that cites them.

The body is read from the XML (python-docx gives the package and styles) rather than `Paragraph.text`,
because that property skips tracked insertions: the text a reader sees is the accepted state, so
insertions are kept and tracked deletions (w:del, w:moveFrom) are dropped. Comments live in their own
part (word/comments.xml), which is never read; their anchors in the body carry no text. Footnotes
matter: an exception to a limit is often written there, so each one follows the paragraph that
references it, in that paragraph's section.

Document properties fill what the file itself does not say: the core title is the document title, and
the last-modified date is the effective date (never a future one, which would hold the document back),
else the created date; neither when it is the date python-docx's blank template carries (a file a script
wrote without setting one says nothing of when its policy took effect).
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime

from docx import Document
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.exceptions import PackageNotFoundError
from lxml import etree

from retrieval.parse.assemble import finish
from retrieval.parse.budget import check_package
from retrieval.parse.model import AGAIN, Event, Heading, Para, ParsedDocument, ParseError

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_NS = {"w": _W}
_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file: encrypted .docx or legacy .doc
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
# Text inside these never reaches the reader: deletions, moved-away text, field codes, the note marks
# that Word draws inside a footnote's own text.
_SKIPPED = {f"{{{_W}}}{name}" for name in ("del", "moveFrom", "instrText", "delInstrText", "rPr", "pPr",
                                            "footnoteRef", "endnoteRef", "commentReference")}


# The core properties of python-docx's default template (docx/templates/default.docx), which a document it
# creates keeps unless the script sets its own: not an author's date.
_TEMPLATE_DATES = frozenset({datetime(2013, 12, 23, 23, 15, tzinfo=UTC)})


def _authored_date(*moments: datetime | None) -> str | None:
    """The first of `moments` an author's tool wrote (not python-docx's template) and not in the future."""
    for moment in moments:
        if moment is None:
            continue
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        if moment not in _TEMPLATE_DATES and moment <= datetime.now(UTC):
            return moment.date().isoformat()
    return None


def _docx_error(reason: str) -> ParseError:
    return ParseError(f"The Word file could not be read: {reason}. Open it in Word and save it again as "
                      f".docx {AGAIN}")


def parse_docx(data: bytes, stem: str) -> ParsedDocument:
    if data.startswith(_CFB_MAGIC):
        raise ParseError("The Word file is password-protected (encrypted), or it is an old .doc file renamed "
                         f"to .docx: remove the password, or save it as .docx from Word, {AGAIN}")
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise _docx_error("it is not a .docx package (damaged, or another format with a .docx name)")
    check_package(data)  # inflated once under the budget before python-docx builds any tree
    try:
        document = Document(io.BytesIO(data))
        notes = {**_notes(document, RT.FOOTNOTES, "footnote"), **_notes(document, RT.ENDNOTES, "endnote")}
        levels = _style_levels(document)
        events = list(_body_events(document.element.body, levels, notes))
        props = document.core_properties
        title, effective = (props.title or "").strip(), _authored_date(props.modified, props.created)
    except ParseError:
        raise
    except (PackageNotFoundError, KeyError, zipfile.BadZipFile, etree.XMLSyntaxError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise _docx_error(reason) from exc
    metadata: dict[str, object] = {}
    if effective is not None:
        metadata["effective"] = effective
    usable_title = title if title and not re.search(r"\.(docx?|dotx?)$", title, re.I) else None
    return finish(stem, events, metadata, title=usable_title)


# -- styles and notes -------------------------------------------------------------------------------


def _style_levels(document: object) -> dict[str, int]:
    """Style id → heading level (1-based), from the style's name or its outline level, following basedOn."""
    root = document.styles.element  # type: ignore[attr-defined]
    own: dict[str, int | None] = {}
    based: dict[str, str] = {}
    for style in root.findall("w:style", _NS):
        if style.get(f"{{{_W}}}type") != "paragraph":
            continue
        style_id = style.get(f"{{{_W}}}styleId") or ""
        name = style.find("w:name", _NS)
        match = _HEADING_STYLE.match(name.get(f"{{{_W}}}val", "") if name is not None else "")
        outline = style.find("w:pPr/w:outlineLvl", _NS)
        level = int(match.group(1)) if match else _outline_level(outline)
        own[style_id] = level
        parent = style.find("w:basedOn", _NS)
        if parent is not None:
            based[style_id] = parent.get(f"{{{_W}}}val", "")

    def resolve(style_id: str, depth: int = 0) -> int | None:
        level = own.get(style_id)
        if level is None and style_id in based and depth < 10:
            return resolve(based[style_id], depth + 1)
        return level

    return {style_id: level for style_id in own if (level := resolve(style_id)) is not None and level <= 6}


def _outline_level(element: etree._Element | None) -> int | None:
    # w:outlineLvl is 0-based; 9 means body text.
    if element is None:
        return None
    try:
        value = int(element.get(f"{{{_W}}}val", "9"))
    except ValueError:
        return None
    return value + 1 if 0 <= value < 6 else None


def _notes(document: object, reltype: str, tag: str) -> dict[tuple[str, str], str]:
    """(kind, id) → text of every real footnote or endnote (separators excluded)."""
    part = document.part  # type: ignore[attr-defined]
    for rel in part.rels.values():
        if rel.reltype == reltype and not rel.is_external:
            root = etree.fromstring(rel.target_part.blob)
            out: dict[tuple[str, str], str] = {}
            for note in root.findall(f"w:{tag}", _NS):
                if note.get(f"{{{_W}}}type") in ("separator", "continuationSeparator", "continuationNotice"):
                    continue
                text = " ".join(" ".join(_text(p) for p in note.iter(f"{{{_W}}}p")).split())
                if text:
                    out[(tag, note.get(f"{{{_W}}}id", ""))] = text
            return out
    return {}


# -- the body -------------------------------------------------------------------------------------


def _body_events(body: etree._Element, levels: dict[str, int], notes: dict[tuple[str, str], str]) -> Iterator[Event]:
    numbers: dict[str, int] = {}
    for child in _blocks(body):
        if child.tag == f"{{{_W}}}tbl":
            yield Para("\n".join(_table_rows(child)))
            yield from _cited_notes(child, notes)
            continue
        text = " ".join(_text(child).split())
        level = _paragraph_level(child, levels)
        if level is not None and text:
            yield Heading(level, text)
        elif text:
            yield Para(_list_marker(child, numbers) + text)
        yield from _cited_notes(child, notes)


def _blocks(node: etree._Element) -> Iterator[etree._Element]:
    """Paragraphs and tables in reading order; content controls and inserted blocks are opened up."""
    for child in node:
        if child.tag in (f"{{{_W}}}p", f"{{{_W}}}tbl"):
            yield child
        elif child.tag in (f"{{{_W}}}sdt", f"{{{_W}}}sdtContent", f"{{{_W}}}ins", f"{{{_W}}}customXml"):
            yield from _blocks(child)


def _paragraph_level(p: etree._Element, levels: dict[str, int]) -> int | None:
    direct = _outline_level(p.find("w:pPr/w:outlineLvl", _NS))
    if direct is not None:
        return direct
    style = p.find("w:pPr/w:pStyle", _NS)
    return levels.get(style.get(f"{{{_W}}}val", "")) if style is not None else None


def _list_marker(p: etree._Element, numbers: dict[str, int]) -> str:
    num = p.find("w:pPr/w:numPr", _NS)
    style = p.find("w:pPr/w:pStyle", _NS)
    style_id = style.get(f"{{{_W}}}val", "") if style is not None else ""
    if num is None and not style_id.lower().startswith("list"):
        return ""
    depth_el = num.find("w:ilvl", _NS) if num is not None else None
    depth = int(depth_el.get(f"{{{_W}}}val", "0")) if depth_el is not None else 0
    indent = "  " * min(depth, 4)
    if "number" in style_id.lower():
        key = f"{style_id}:{depth}"
        numbers[key] = numbers.get(key, 0) + 1
        return f"{indent}{numbers[key]}. "
    return f"{indent}- "


def _text(node: etree._Element) -> str:
    parts: list[str] = []

    def walk(element: etree._Element) -> None:
        for child in element:
            tag = child.tag
            if tag in _SKIPPED or not isinstance(tag, str):
                continue
            if tag == f"{{{_W}}}t":
                parts.append(child.text or "")
            elif tag in (f"{{{_W}}}tab", f"{{{_W}}}br", f"{{{_W}}}cr"):
                parts.append(" ")
            elif tag == f"{{{_W}}}noBreakHyphen":
                parts.append("-")
            elif tag in (f"{{{_W}}}footnoteReference", f"{{{_W}}}endnoteReference"):
                parts.append(f"[{child.get(f'{{{_W}}}id', '')}]")
            else:
                walk(child)

    walk(node)
    return "".join(parts)


def _cited_notes(node: etree._Element, notes: dict[tuple[str, str], str]) -> Iterator[Event]:
    for tag in ("footnote", "endnote"):
        for ref in node.iter(f"{{{_W}}}{tag}Reference"):
            if any(a.tag in _SKIPPED for a in ref.iterancestors()):
                continue  # a note cited only from deleted text was deleted with it
            note_id = ref.get(f"{{{_W}}}id", "")
            text = notes.get((tag, note_id))
            if text:
                yield Para(f"{tag.capitalize()} [{note_id}]: {text}")


def _table_rows(table: etree._Element) -> Iterator[str]:
    """A header row names the columns; every other row is "Column: value | Column: value"."""
    rows = [[" ".join(_text(cell).split()) for cell in row.findall("w:tc", _NS)]
            for row in table.iter(f"{{{_W}}}tr") if not any(a.tag in _SKIPPED for a in row.iterancestors())]
    rows = [row for row in rows if any(row)]
    if not rows:
        return
    header, body = (rows[0], rows[1:]) if len(rows) > 1 and all(rows[0]) else ([], rows)
    for row in body:
        if header and len(row) == len(header):
            yield " | ".join(f"{name}: {value}" for name, value in zip(header, row, strict=True) if value)
        else:
            yield " | ".join(row)
    if not body and header:
        yield " | ".join(header)
