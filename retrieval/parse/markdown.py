"""Markdown: YAML front matter, ATX and setext headings, fenced code kept verbatim, lists, tables and
inline markup reduced to plain text.

Handbooks written in Markdown embed raw HTML, which is read as HTML rather than kept as text: an HTML
block (a line opening a block element such as <table> or <div>) is parsed with the HTML parser's
rules (retrieval/parse/html.py), a <details>/<summary> pair becomes a heading over Markdown content,
and inline tags (<a>, <strong>, <br>…) inside Markdown lines are dropped keeping their text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from bs4 import BeautifulSoup

from retrieval.parse.assemble import finish
from retrieval.parse.front_matter import split_front_matter
from retrieval.parse.html import check_markup, html_events, separate_blocks
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
# CommonMark's HTML block start (its type 6 tags, plus the media and script elements handbooks embed):
# after at most 3 spaces, "<tag" or "</tag" followed by a space, ">", "/>" or the end of the line.
_BLOCK_TAGS = ("address|article|aside|audio|blockquote|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|"
               "dt|fieldset|figcaption|figure|footer|form|h[1-6]|header|hr|iframe|legend|li|main|menu|nav|"
               "object|ol|p|picture|pre|script|section|style|summary|table|tbody|td|tfoot|th|thead|tr|ul|video")
_HTML_BLOCK = re.compile(rf"^\s{{0,3}}</?({_BLOCK_TAGS})(?=[\s/>]|$)", re.IGNORECASE)
_BLOCK_TAG_LINE = re.compile(rf"^\s*</?(?:{_BLOCK_TAGS})(?=[\s/>]|$)", re.IGNORECASE)
# Their text is a fallback for browsers that cannot play or run them, never policy text.
_NO_TEXT_TAGS = ["audio", "embed", "iframe", "img", "object", "script", "source", "style", "track", "video"]
_CELL_BREAK = "\x00"  # a <br> in a table cell until the cell is read (decode_text refuses text with NULs)
# A <details> line, its <summary> (own line or the same one) and </details>; "\>" is a typo some pages have.
# Each space run follows a tag it belongs to: optional groups between bare \s* runs backtrack for minutes.
_DETAILS = re.compile(r"^\s*(?:(?P<open><details\b[^>]*>)\s*)?(?:<summary\b[^>]*>(?P<summary>.*?)</summary\s*>\s*)?"
                      r"(?:(?P<close></details\s*>)\s*)?$", re.IGNORECASE)
# Inline HTML in Markdown text. Only these names are tags: "<your-name>", "<URL>" or "a < b" are text.
_INLINE_TAG = re.compile(r"</?(?:a|abbr|b|code|em|font|i|kbd|mark|small|span|strong|sub|sup|u)(?:\s[^<>]*)?/?>"
                         r"|<img\b[^<>]*>", re.IGNORECASE)
# A run of breaks and the spaces around them is one break. Matched only from where a run of spaces
# starts: trying every position inside a long run would take quadratic time.
_BREAK_TAG = re.compile(r"(?<!\s)\s*(?:</?(?:br|div|p)(?:\s[^<>]*)?/?>\s*)+", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(`[^`]+`)")


def parse_markdown(text: str, stem: str) -> ParsedDocument:
    metadata, body = split_front_matter(text)
    body = re.sub(r"<!--.*?-->", "", body, flags=re.DOTALL)
    title = metadata.get("title")
    return finish(stem, _markdown_events(body), metadata, title=str(title) if title else None)


def _inline(text: str, *, cell: bool = False) -> str:
    # Code spans keep their tags and entities as written: `<a href="…">` there is an example.
    text = "".join(part if _CODE_SPAN.fullmatch(part) else _inline_html(part, _CELL_BREAK if cell else " ")
                   for part in _CODE_SPAN.split(text))
    if _CELL_BREAK in text:
        text = _join_cell_breaks(text)
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return text.strip()


def _inline_html(text: str, line_break: str) -> str:
    # Entities are decoded after the tags are dropped, so "&lt;b&gt;" stays text.
    return html.unescape(_BREAK_TAG.sub(line_break, _INLINE_TAG.sub("", text)))


def _join_cell_breaks(text: str) -> str:
    """A <br> in a table cell separates values of one field: "Mon<br>Tue" reads "Mon; Tue"."""
    return "; ".join(part for part in (" ".join(piece.split()) for piece in text.split(_CELL_BREAK)) if part)


def _markdown_events(body: str) -> Iterator[Event]:
    block: list[str] = []
    fence: str | None = None
    html_block: _HtmlBlock | None = None
    outline = _Outline()
    for line in body.split("\n"):
        if html_block is not None:
            if html_block.take(line):
                continue
            yield from html_block.events()
            html_block = None
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
        heading, setext, details = _ATX.match(line), _SETEXT.match(line), _DETAILS.match(line)
        # Only heading-like lines: a sentence above a "---" separator would otherwise be lost as an
        # empty heading, and a line that read as nothing (an image, a <br>) is no title.
        if (setext and len(block) == 1 and 0 < len(block[0]) <= 80 and not _LIST.match(block[0])
                and "|" not in block[0] and not block[0].endswith((".", ",", ";", ":"))):
            # "Title" underlined with === or ---
            yield outline.page_heading(Heading(1 if "=" in line else 2, block.pop()))
        elif heading:
            yield Para("\n".join(block))
            block = []
            heading_text = _inline(re.sub(r"\s+#+$", "", heading.group(2) or ""))
            if heading_text:
                yield outline.page_heading(Heading(len(heading.group(1)), heading_text))
        elif not line.strip():
            yield Para("\n".join(block))
            block = []
        elif details and any(details.groups()):
            yield Para("\n".join(block))
            block = []
            yield from outline.details(details["open"] is not None, _inline(details["summary"] or ""),
                                       details["close"] is not None)
        elif html_start := _HTML_BLOCK.match(line):
            yield Para("\n".join(block))
            block = []
            html_block = _HtmlBlock(line, html_start.group(1))
        elif not _RULE.match(line) and not _LINK_DEF.match(line):
            _add_markdown_line(block, line)
    if html_block is not None:
        yield from html_block.events()
    yield Para("\n".join(block))


class _Outline:
    """The headings open at this point of the page, so that a <summary> becomes a heading one level
    below the section its <details> is in, and the text after </details> is back in that section."""

    def __init__(self) -> None:
        self.path: list[Heading] = []
        self.around: list[list[Heading]] = []  # the path where each open <details> started
        self.summaries: list[Heading | None] = []  # the heading each open <details>' summary became

    def page_heading(self, heading: Heading) -> Heading:
        """A heading of the page's own. Inside a <details>, it is below the summary, as a reader sees
        it ("FAQ" > "Who is eligible?"), whatever its level: otherwise a heading right after the
        summary would close the summary's section before it held anything, and the summary be lost."""
        summary = self.summaries[-1] if self.summaries else None
        if summary is not None and summary in self.path and heading.level <= summary.level:
            heading = Heading(min(summary.level + 1, 6), heading.text)
        return self.enter(heading)

    def enter(self, heading: Heading) -> Heading:
        while self.path and self.path[-1].level >= heading.level:
            self.path.pop()
        self.path.append(heading)
        return heading

    def details(self, opens: bool, summary: str, closes: bool) -> Iterator[Heading]:
        if opens:
            self.around.append(list(self.path))
            self.summaries.append(None)
        if summary:
            around = self.around[-1] if self.around else self.path
            level = around[-1].level + 1 if around else 2
            # Never an H1: a page's single H1 names the document (retrieval/parse/assemble.py).
            heading = self.enter(Heading(min(max(level, 2), 6), summary))
            if self.summaries:
                self.summaries[-1] = heading
            yield heading
        if closes and self.around:
            self.summaries.pop()
            around = self.around.pop()
            below = len(self.path) > len(around) and self.path[:len(around)] == around
            # Back to the section the <details> is in by repeating its heading, unless a heading of the
            # page has already left it, or it is the H1 (a second H1 would no longer name the page).
            if around and below and around[-1].level > 1:
                yield self.enter(around[-1])


class _HtmlBlock:
    """The lines of one HTML block: to the first blank line, as CommonMark has it, except that while the
    element it opens is still open a blank line is crossed when the next line is a block tag again
    (CommonMark would start another HTML block there and a browser renders both as one element). Tables
    with blank lines between cells need this, and so do blocks whose comment lines were removed."""

    def __init__(self, first: str, name: str) -> None:
        self.lines = [first]
        self.opening = re.compile(rf"<{name}\b", re.IGNORECASE)
        self.closing = re.compile(rf"</{name}\s*>", re.IGNORECASE)
        self.depth = 0
        self._count(first)

    def take(self, line: str) -> bool:
        if not line.strip():
            if self.depth <= 0:
                return False
        elif not self.lines[-1].strip() and not _BLOCK_TAG_LINE.match(line):
            return False
        self.lines.append(line)
        self._count(line)
        return True

    def _count(self, line: str) -> None:
        self.depth += len(self.opening.findall(line)) - len(self.closing.findall(line))

    def events(self) -> Iterator[Event]:
        markup = "\n".join(self.lines)
        check_markup(markup)
        soup = BeautifulSoup(markup, "html.parser")
        for tag in soup.find_all(_NO_TEXT_TAGS):
            tag.decompose()
        for br in soup.select("td br, th br"):
            br.replace_with(_CELL_BREAK)
        separate_blocks(soup)
        for cell in soup.find_all(["td", "th"]):
            if _CELL_BREAK in cell.get_text(""):
                cell.string = _join_cell_breaks(cell.get_text(""))
        yield from html_events(soup)


def _add_markdown_line(block: list[str], line: str) -> None:
    stripped = re.sub(r"^\s{0,3}(>\s?)+", "", line).rstrip()  # blockquote markers
    table_row = "|" in stripped and (stripped.lstrip().startswith("|") or bool(block and "|" in block[-1]))
    if table_row:
        if not _TABLE_SEP.match(stripped):
            cells = [_inline(cell, cell=True) for cell in stripped.strip().strip("|").split("|")]
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
