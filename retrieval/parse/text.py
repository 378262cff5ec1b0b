"""Plain text, and the decoding every text format (Markdown, HTML, plain text) shares.

Heuristics, since plain text has no explicit structure: the first non-empty line is the title when it
is at most 80 characters. A line that is a block of its own (blank lines around it), at most 80
characters, without a final period, and either numbered ("2. Hotels", "2.1 Boston") or ALL CAPS is a
heading when the next block is body text or a deeper numbered heading. Numbering depth sets the level
("2." → 2, "2.1" → 3); ALL CAPS is level 2. Requiring body text after it keeps a list of one-line
numbered items from being read as headings (and then dropped as empty sections).
"""

from __future__ import annotations

import re

from retrieval.parse.assemble import finish
from retrieval.parse.model import AGAIN, BINARY, Event, Heading, Para, ParsedDocument, ParseError

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")  # control characters that plain text never needs
# One or two digits per level, so a line such as "2024 Travel Policy" is not read as numbered.
NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2})*)[.)]?\s+\S")


def decode_text(data: bytes) -> str:
    """Strict UTF-8 (an optional BOM) with normalised newlines; binary or undecodable data is refused."""
    # UTF-16 files contain NULs but are text: let the UTF-8 check explain them instead of "binary".
    if b"\x00" in data and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError(BINARY)
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        text = data[bom:].decode("utf-8")  # strict on purpose: replacement chars would corrupt policy text
    except UnicodeDecodeError as exc:
        offset = exc.start + bom
        raise ParseError(f"The file is not valid UTF-8 text (byte 0x{data[offset]:02x} at offset {offset}); "
                         f"save it as UTF-8 {AGAIN}") from exc
    if len(_CONTROL.findall(text)) > max(2, len(text) // 100):
        raise ParseError(BINARY)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def is_caps(line: str) -> bool:
    letters = [char for char in line if char.isalpha()]
    return len(letters) >= 2 and all(char.isupper() for char in letters)


def parse_text(text: str, stem: str) -> ParsedDocument:
    return finish(stem, _text_events(text), {})


def _text_heading_level(block: str) -> int | None:
    if "\n" in block or len(block) > 80 or block.endswith((".", ",", ";")):
        return None
    numbered = NUMBERED.match(block)
    if numbered:
        return 2 + numbered.group(1).count(".")
    return 2 if is_caps(block) else None


def _text_events(text: str) -> list[Event]:
    blocks = [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]
    if not blocks:
        return []
    events: list[Event] = []
    first, *rest = blocks[0].split("\n", 1)
    if len(first.strip()) <= 80:
        events.append(Heading(1, first.strip()))
        blocks[0] = rest[0].strip() if rest else ""
    levels = [_text_heading_level(block) for block in blocks]
    for i, block in enumerate(blocks):
        level, following = levels[i], levels[i + 1] if i + 1 < len(blocks) else -1
        if level is not None and (following is None or (following != -1 and following > level)):
            events.append(Heading(level, block))
        else:
            events.append(Para(block))
    return events
