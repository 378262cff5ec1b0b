"""Properties of the parsers: any bytes under any supported name end in a parsed document or a ParseError
with a message — never another exception, never past the budget, never more text than the budget allows."""

from __future__ import annotations

import io
import zipfile

from hypothesis import given
from hypothesis import strategies as st

from retrieval.parse import SUPPORTED_SUFFIXES, ParseBudget, ParsedDocument, ParseError, parse_bytes
from tests.bombs import docx_with_body
from tests.fuzz.strategies import hostile_text

SMALL = ParseBudget(max_chars=20_000, max_blocks=200, max_elements=2_000, max_pages=5,
                    max_unzipped_bytes=2 * 1024 * 1024)
MARKUP = st.lists(st.sampled_from(["<div>", "</div>", "<p>", "</p>", "<h2>", "</h2>", "<ul><li>", "</li></ul>",
                                   "<table><tr><td>", "</td></tr></table>", "<br>", "<", ">", "&amp;", "&#xD800;",
                                   "<!--", "-->", "<script>", "</script>", "\n\n", "# ", "## ", "---\n", "| a | b |\n"]),
                  max_size=80).map("".join)
WORD = st.lists(st.sampled_from(["<w:p>", "</w:p>", "<w:r>", "</w:r>", "<w:t>", "</w:t>", "x", "<w:tbl>",
                                 "</w:tbl>", "<w:tr>", "</w:tr>", "<w:tc>", "</w:tc>", "<w:pPr><w:pStyle w:val=\"Heading1\"/></w:pPr>",
                                 "<w:p><w:r><w:t>Rule</w:t></w:r></w:p>"]), max_size=40).map("".join)


def _check(result: ParsedDocument) -> None:
    assert result.sections
    assert sum(len(s.text) for s in result.sections) <= SMALL.max_chars + 10_000  # headings come on top


def _parse(data: bytes, name: str) -> None:
    try:
        result = parse_bytes(data, filename=name, budget=SMALL)
    except ParseError as exc:
        assert str(exc)
        return
    _check(result)


@given(st.binary(max_size=2000), st.sampled_from(sorted(SUPPORTED_SUFFIXES)))
def test_any_bytes_under_any_name(data: bytes, suffix: str) -> None:
    _parse(data, f"doc{suffix}")


@given(st.one_of(MARKUP, hostile_text), st.sampled_from([".md", ".html", ".txt"]))
def test_text_and_markup(text: str, suffix: str) -> None:
    _parse(text.encode("utf-8", "surrogatepass"), f"doc{suffix}")


@given(WORD, st.integers(min_value=1, max_value=400))
def test_word_bodies(body: str, repeat: int) -> None:
    _parse(docx_with_body(body, repeat), "doc.docx")


@given(st.binary(max_size=500), st.sampled_from(["word/document.xml", "[Content_Types].xml", "word/styles.xml"]))
def test_damaged_word_packages(part: bytes, name: str) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr(name, part)
    _parse(out.getvalue(), "doc.docx")
