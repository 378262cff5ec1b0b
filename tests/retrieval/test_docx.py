"""Word documents: built here with python-docx, with the parts python-docx cannot write itself (footnotes,
a tracked deletion, a tracked insertion) added as WordprocessingML, then parsed, chunked, ingested and found."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime

import docx
import pytest
from docx.opc.constants import CONTENT_TYPE as CT
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import parse_xml

from bot.services import Services
from retrieval.chunk import chunk_document
from retrieval.ingest import DocumentOptions
from retrieval.parse import ParseError, parse_bytes

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
EXCEPTION = "Employees based in Zurich may book rooms up to CHF 310 per night during trade fairs."
COMMENT = "Reviewer note: check the Boston figure with procurement"
DELETED = "Suites are always reimbursed"
INSERTED = "Receipts are required for every night."

FOOTNOTES = f"""<w:footnotes {W}>
  <w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>
  <w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:footnote>
  <w:footnote w:id="1"><w:p><w:pPr><w:pStyle w:val="FootnoteText"/></w:pPr>
    <w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteRef/></w:r>
    <w:r><w:t xml:space="preserve"> Exception: {EXCEPTION}</w:t></w:r></w:p></w:footnote>
</w:footnotes>"""


def build_policy(*, title: str | None = "Travel and Expenses Policy", modified: datetime | None = None) -> bytes:
    document = docx.Document()
    if title:
        document.core_properties.title = title
    document.core_properties.modified = modified or datetime(2025, 3, 4, 9, 30, tzinfo=UTC)
    document.add_heading("Travel", level=1)
    document.add_paragraph("Book travel through the company portal at least 14 days ahead.")
    document.add_heading("Hotels", level=2)
    limit = document.add_paragraph("Hotel stays are reimbursed up to USD 250 per night.")
    limit._p.append(parse_xml(f'<w:r {W}><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr>'
                              '<w:footnoteReference w:id="1"/></w:r>'))
    document.add_comment(limit.runs, text=COMMENT, author="Dana", initials="DK")
    tracked = document.add_paragraph("Upgrades are not reimbursed. ")
    tracked._p.append(parse_xml(f'<w:del {W} w:id="91" w:author="Dana" w:date="2025-03-01T00:00:00Z">'
                                f'<w:r><w:delText xml:space="preserve">{DELETED}. </w:delText></w:r></w:del>'))
    tracked._p.append(parse_xml(f'<w:ins {W} w:id="92" w:author="Dana" w:date="2025-03-01T00:00:00Z">'
                                f'<w:r><w:t>{INSERTED}</w:t></w:r></w:ins>'))
    document.add_heading("Boston", level=3)
    document.add_paragraph("Use the partner hotel near the office.")
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, [("Role", "Nightly limit"), ("Staff", "USD 250"), ("Director", "USD 320")],
                          strict=True):
        for cell, value in zip(row.cells, cells, strict=True):
            cell.text = value
    document.add_heading("Meals", level=2)
    document.add_paragraph("Breakfast is included in the room rate.", style="List Bullet")
    document.add_paragraph("Dinner is reimbursed up to USD 60.", style="List Bullet")
    outline = document.add_paragraph("Per diem")  # a heading by outline level, not by style name
    outline._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl {W} w:val="1"/>'))
    document.add_paragraph("Per diem rates follow the GSA table.")

    part = document.part
    footnotes = Part(PackURI("/word/footnotes.xml"), CT.WML_FOOTNOTES, FOOTNOTES.encode(), part.package)
    part.relate_to(footnotes, RT.FOOTNOTES)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_headings_tables_lists_and_footnotes_are_kept_comments_and_deletions_are_not() -> None:
    parsed = parse_bytes(build_policy(), filename="finance/travel.docx")
    assert parsed.title == "Travel and Expenses Policy"
    assert parsed.metadata["effective"] == "2025-03-04"
    by_path = {section.heading_path: section.text for section in parsed.sections}
    hotels = by_path[("Travel", "Hotels")]
    assert "USD 250 per night.[1]" in hotels
    assert f"Footnote [1]: Exception: {EXCEPTION}" in hotels
    assert "Upgrades are not reimbursed. " + INSERTED in hotels
    boston = by_path[("Travel", "Hotels", "Boston")]
    assert "Role: Staff | Nightly limit: USD 250" in boston
    assert "Role: Director | Nightly limit: USD 320" in boston
    assert by_path[("Travel", "Meals")] == "- Breakfast is included in the room rate.\n\n- Dinner is reimbursed up to USD 60."
    assert by_path[("Travel", "Per diem")] == "Per diem rates follow the GSA table."
    everything = "\n".join(by_path.values()) + " ".join(" ".join(p) for p in by_path)
    assert COMMENT not in everything and "Reviewer" not in everything
    assert DELETED not in everything and "Suites" not in everything
    assert "Employees based in Zurich" in everything  # the comment part was there to be skipped
    assert "word/comments.xml" in zipfile.ZipFile(io.BytesIO(build_policy())).namelist()


def test_title_falls_back_to_the_single_heading_and_future_dates_are_not_effective() -> None:
    parsed = parse_bytes(build_policy(title=None, modified=datetime(2999, 1, 1, tzinfo=UTC)),
                         filename="travel.docx")
    assert parsed.title == "Travel"
    assert "effective" not in parsed.metadata


def test_python_docx_template_dates_are_no_effective_date() -> None:
    """A file a script wrote with python-docx keeps its blank template's 2013-12-23 dates: not the author's."""
    document = docx.Document()
    document.add_heading("Parking", level=1)
    document.add_paragraph("Staff park in level 2 of the garage.")
    assert document.core_properties.modified == datetime(2013, 12, 23, 23, 15, tzinfo=UTC)

    def saved() -> bytes:
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()

    assert "effective" not in parse_bytes(saved(), filename="parking.docx").metadata
    document.core_properties.created = datetime(2024, 6, 1, 8, 0, tzinfo=UTC)  # a real date, where only it is
    assert parse_bytes(saved(), filename="parking.docx").metadata["effective"] == "2024-06-01"


def test_chunks_keep_the_heading_path_the_rows_and_the_footnote(embedder: object) -> None:
    parsed = parse_bytes(build_policy(), filename="travel.docx")
    drafts = chunk_document(parsed, count_tokens=embedder.count_tokens, max_tokens=400, overlap=50)  # type: ignore[attr-defined]
    text = "\n".join(d.text for d in drafts)
    assert any(d.heading_path[:2] == ("Travel", "Hotels") and EXCEPTION in d.text for d in drafts)
    # Boston is merged into its Hotels chunk (one level-2 section) and keeps its own heading line.
    [rows] = [d for d in drafts if "Role: Director | Nightly limit: USD 320" in d.text]
    assert rows.heading_path[:2] == ("Travel", "Hotels") and "Role: Staff | Nightly limit: USD 250" in rows.text
    assert "Boston" in rows.text
    assert COMMENT not in text and DELETED not in text


@pytest.mark.parametrize(("data", "says"), [
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "password-protected"),
    (b"this is not a zip at all, just text", "not a .docx package"),
    (b"PK\x03\x04" + b"\x00" * 40, "not a .docx package"),
])
def test_protected_or_corrupt_files_get_a_clear_error(data: bytes, says: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse_bytes(data, filename="policy.docx")
    assert says in str(caught.value)


def test_a_zip_that_is_not_a_word_document_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hello")
    with pytest.raises(ParseError) as caught:
        parse_bytes(out.getvalue(), filename="policy.docx")
    assert "The Word file could not be read" in str(caught.value)


async def test_the_footnote_exception_is_retrievable(services: Services) -> None:
    submitted = await services.ingestor.submit_bytes(build_policy(), filename="finance/travel.docx",
                                                     doc_id="finance/travel",
                                                     options=DocumentOptions(tenant_id="larkspur"))
    assert submitted.status == "queued", submitted
    [outcome] = await services.ingestor.run_pending()
    assert outcome.status == "published", outcome
    doc = await services.catalog.get_document(tenant_id="larkspur", doc_id="finance/travel")
    assert doc is not None and doc.title == "Travel and Expenses Policy"
    assert doc.effective_at is not None and doc.effective_at.startswith("2025-03-04")
    result = await services.searcher.search("hotel limit for Zurich employees during trade fairs",
                                            services.access.resolve_cli(None))
    assert result.passages, result.gate
    top = result.passages[0]
    assert top.doc_id == "finance/travel" and "CHF 310" in top.text
    assert top.heading.startswith("Travel > Hotels")
    async with services.db.execute("SELECT text FROM chunks WHERE doc_id='finance/travel'") as cur:
        stored = " ".join(r[0] for r in await cur.fetchall())
    assert COMMENT not in stored and DELETED not in stored
