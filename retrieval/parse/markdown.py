"""Markdown: YAML front matter, ATX and setext headings, fenced code kept verbatim, lists, tables and
inline markup reduced to plain text."""

from __future__ import annotations

import re
from collections.abc import Iterator

from retrieval.parse.assemble import finish
from retrieval.parse.front_matter import split_front_matter
from retrieval.parse.model import Event, Heading, Para, ParsedDocument

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


def parse_markdown(text: str, stem: str) -> ParsedDocument:
    metadata, body = split_front_matter(text)
    body = re.sub(r"<!--.*?-->", "", body, flags=re.DOTALL)
    title = metadata.get("title")
    return finish(stem, _markdown_events(body), metadata, title=str(title) if title else None)


def _inline(text: str) -> str:
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return text.strip()


def _markdown_events(body: str) -> Iterator[Event]:
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
            yield Heading(1 if "=" in line else 2, block.pop())  # "Title" underlined with === or ---
        elif heading:
            yield Para("\n".join(block))
            block = []
            heading_text = _inline(re.sub(r"\s+#+$", "", heading.group(2) or ""))
            if heading_text:
                yield Heading(len(heading.group(1)), heading_text)
        elif not line.strip():
            yield Para("\n".join(block))
            block = []
        elif not _RULE.match(line) and not _LINK_DEF.match(line):
            _add_markdown_line(block, line)
    yield Para("\n".join(block))


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
