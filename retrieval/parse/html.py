"""HTML: <meta> tags and <title> as metadata, site chrome dropped, block elements as paragraphs,
lists and tables flattened to lines.

Nesting is bounded before the tree is built: the tree's work grows with the square of its depth
(16,000 nested elements took half a minute) and a policy page never nests anywhere near
MAX_DEPTH, so deeper markup is refused at once with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser

from bs4 import BeautifulSoup, NavigableString, Tag

from retrieval.parse import budget
from retrieval.parse.assemble import finish
from retrieval.parse.front_matter import clean_metadata
from retrieval.parse.model import AGAIN, Event, Heading, Para, ParsedDocument, ParseError

MAX_DEPTH = 400
MAX_UNCLOSED = 100
# Elements that never hold content, so never deepen the tree (as the tree builder treats them).
_VOID_TAGS = {"area", "base", "basefont", "bgsound", "br", "col", "command", "embed", "frame", "hr", "image",
              "img", "input", "isindex", "keygen", "link", "menuitem", "meta", "nextid", "param", "source",
              "spacer", "track", "wbr"}

_DROP_TAGS = ("script", "style", "nav", "header", "footer", "noscript", "template")
_INLINE_TAGS = {"a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "dfn", "em", "font", "i", "img",
                "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time",
                "u", "var"}
_HEADING_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _DepthProbe(HTMLParser):
    """Follows the nesting the tree builder will produce (an unclosed element stays open, an end tag
    closes up to its element) and stops at the first element deeper than MAX_DEPTH, or past the
    budget's number of elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.open: list[str] = []
        self.elements = 0
        self.limit = budget.current().max_elements

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.elements += 1
        if self.elements > self.limit:
            budget.check_elements(self.elements)
        if tag in _VOID_TAGS:
            return
        self.open.append(tag)
        if len(self.open) > MAX_DEPTH:
            line, _ = self.getpos()
            raise ParseError(f"The HTML nests elements more than {MAX_DEPTH} deep (line {line}), which no "
                             "policy page needs and Cairn cannot read safely. Save it as simpler HTML, as "
                             f"Markdown or as PDF {AGAIN}")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            while self.open.pop() != tag:
                pass


def check_markup(text: str) -> None:
    """Refuses, with the reason, markup the parser cannot read in reasonable time: elements nested
    deeper than MAX_DEPTH, or more than MAX_UNCLOSED tags that never close ("<div <div <div …": the
    parser rescans the rest of the text at each one, 80 KB of them took a minute and a half)."""
    unclosed = text.count("<") - text.count(">")
    if unclosed > MAX_UNCLOSED:
        raise ParseError(f"The HTML has {unclosed} more '<' than '>' (tags that never close), which Cairn cannot "
                         f"read safely. Save it as valid HTML, as Markdown or as PDF {AGAIN}")
    probe = _DepthProbe()
    probe.feed(text)
    probe.close()


def parse_html(text: str, stem: str) -> ParsedDocument:
    check_markup(text)
    soup = BeautifulSoup(text, "html.parser")
    raw: dict[object, object] = {}
    for meta in soup.find_all("meta"):
        name, content = meta.get("name"), meta.get("content")
        if isinstance(name, str) and isinstance(content, str):
            raw[name.strip().lower().replace("-", "_")] = content.strip()
    title_tag = soup.find("title")
    if title_tag and title_tag.get_text(strip=True) and "title" not in raw:
        raw["title"] = title_tag.get_text(" ", strip=True)
    metadata = clean_metadata(raw)
    for tag in soup.find_all(list(_DROP_TAGS)):
        # An <article>'s own <header> usually holds its <h1>; only site-wide headers/footers are chrome.
        if tag.name not in {"header", "footer"} or not tag.find_parent(["article", "main"]):
            tag.decompose()
    separate_blocks(soup)
    root = soup.find("body") or soup
    title = metadata.get("title")
    return finish(stem, list(html_events(root)), metadata, title=str(title) if title else None)


def separate_blocks(soup: Tag) -> None:
    """Text is read with get_text("") so inline markup does not split words; block boundaries and
    <br> still need a space so neighbouring blocks do not run together. (Also used for the HTML
    blocks of Markdown pages, retrieval/parse/markdown.py.)"""
    for tag in soup.find_all(True):
        if tag.name == "br":
            tag.replace_with(" ")
        elif tag.name not in _INLINE_TAGS and tag.parent is not None:
            tag.insert_after(" ")


def _words(node: Tag | NavigableString) -> str:
    return " ".join(node.get_text("").split())


def html_events(node: Tag) -> Iterator[Event]:
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
        yield Para(" ".join("".join(inline).split()))
        inline = []
        if child.name in _HEADING_TAGS:
            if _words(child):
                yield Heading(int(child.name[1]), _words(child))
        elif child.name in {"p", "dt", "dd", "figcaption", "caption"}:
            yield Para(_words(child))
        elif child.name == "pre":
            yield Para(child.get_text().strip("\n"))
        elif child.name in {"ul", "ol"}:
            yield Para("\n".join(_html_list(child, 0)))
        elif child.name == "table":
            yield Para("\n".join(_html_table(child)))
        else:
            yield from html_events(child)
    yield Para(" ".join("".join(inline).split()))


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
