from __future__ import annotations

import time
from pathlib import Path

import pytest
from fpdf import FPDF
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.parse import SUPPORTED_SUFFIXES, ParsedDocument, ParseError, parse_bytes, parse_file

TRAVEL_MD = """\
---
title: Travel and Expenses Policy (2024)
policy_id: FIN-007
owner: finance@larkspur.example
effective: 2024-01-01
expires: 2025-12-31
groups: [all-staff, finance]
sensitivity: internal
reviewer: someone  # unknown keys are dropped
---
Read this before booking.

# Travel and Expenses Policy

All travel is booked through [the travel portal](https://travel.example/) and **must** be _pre-approved_.

![logo](logo.png)
<!-- internal note: do not publish -->

## Hotels

Limits depend on the city.

### Boston

- Nightly cap: $250
* Exceptions need finance approval

| City | Cap | Currency |
|------|----:|----------|
| Boston | 250 | USD |

```yaml
# not a heading
cap: 250
```

## Meals

Per diem is $75, see `policy_id` FIN-007.
"""


def _parse(text: str, filename: str = "travel.md") -> ParsedDocument:
    return parse_bytes(text.encode(), filename=filename)


def _paths(doc: ParsedDocument) -> list[tuple[str, ...]]:
    return [section.heading_path for section in doc.sections]


def _error(data: bytes, filename: str) -> str:
    with pytest.raises(ParseError) as info:
        parse_bytes(data, filename=filename)
    message = str(info.value)
    # Shown to document owners as-is: a full sentence that says what to do next.
    assert message[0].isupper() and message.endswith("."), message
    assert any(word in message for word in ("again", "upload", "save", "export", "Export")), message
    return message


# ------------------------------------------------------------------------------------------- markdown


def test_markdown_heading_paths() -> None:
    doc = _parse(TRAVEL_MD)
    assert _paths(doc) == [
        ("Travel and Expenses Policy (2024)",),  # text before the first heading: (title,)
        ("Travel and Expenses Policy",),
        ("Travel and Expenses Policy", "Hotels"),
        ("Travel and Expenses Policy", "Hotels", "Boston"),
        ("Travel and Expenses Policy", "Meals"),
    ]
    assert all(section.page is None and section.text.strip() for section in doc.sections)


def test_front_matter_becomes_metadata_and_title() -> None:
    doc = _parse(TRAVEL_MD)
    assert doc.title == "Travel and Expenses Policy (2024)"
    assert doc.metadata == {
        "title": "Travel and Expenses Policy (2024)",
        "policy_id": "FIN-007",
        "owner": "finance@larkspur.example",
        "effective": "2024-01-01",
        "expires": "2025-12-31",
        "groups": ["all-staff", "finance"],
        "sensitivity": "internal",
    }
    assert doc.lang == "en"


def test_markdown_inline_syntax_is_stripped() -> None:
    sections = {section.heading_path[-1]: section.text for section in _parse(TRAVEL_MD).sections[1:]}
    intro = sections["Travel and Expenses Policy"]
    assert intro == "All travel is booked through the travel portal and must be pre-approved."
    assert "Meals" in sections and sections["Meals"] == "Per diem is $75, see policy_id FIN-007."
    body = "\n".join(sections.values())
    assert "logo" not in body and "internal note" not in body and "https://" not in body


def test_markdown_lists_tables_and_code() -> None:
    boston = _parse(TRAVEL_MD).sections[3].text
    assert "- Nightly cap: $250\n- Exceptions need finance approval" in boston
    assert "City | Cap | Currency\nBoston | 250 | USD" in boston
    assert "---" not in boston
    assert "# not a heading\ncap: 250" in boston  # fenced code kept, its '#' line is not a heading


def test_h2_pops_previous_h2_and_deeper() -> None:
    doc = _parse("# Root\n\n## A\n\na\n\n### A1\n\na1\n\n#### A1x\n\nx\n\n## B\n\nb\n\n### B1\n\nb1\n")
    assert _paths(doc) == [("Root", "A"), ("Root", "A", "A1"), ("Root", "A", "A1", "A1x"), ("Root", "B"),
                           ("Root", "B", "B1")]
    assert doc.title == "Root"


def test_headings_without_body_are_dropped_but_prefix_children() -> None:
    doc = _parse("# Root\n\n## Empty\n\n### Child\n\nchild text\n\n## Also empty\n")
    assert [(s.heading_path, s.text) for s in doc.sections] == [(("Root", "Empty", "Child"), "child text")]


def test_without_h1_the_file_stem_is_title_and_root() -> None:
    doc = _parse("Intro line.\n\n## Scope\n\nEveryone.\n", filename="docs/remote-work.md")
    assert doc.title == "remote-work"
    assert _paths(doc) == [("remote-work",), ("remote-work", "Scope")]


def test_front_matter_title_does_not_replace_h1_root() -> None:
    doc = _parse("---\ntitle: Official Name\n---\n# Short Name\n\n## Part\n\ntext\n")
    assert doc.title == "Official Name"
    assert _paths(doc) == [("Short Name", "Part")]


def test_several_h1s_are_sections_under_the_title() -> None:
    doc = _parse("# Purpose\n\nWhy.\n\n# Scope\n\nWho.\n\n## Contractors\n\nAlso.\n", "handbook.md")
    assert doc.title == "handbook"
    assert _paths(doc) == [("handbook", "Purpose"), ("handbook", "Scope"), ("handbook", "Scope", "Contractors")]


def test_setext_headings() -> None:
    doc = _parse("Leave Policy\n============\n\nAnnual leave\n------------\n\n25 days.\n\nA rule.\n---\n")
    assert doc.title == "Leave Policy"
    assert [(s.heading_path, s.text) for s in doc.sections] == [(("Leave Policy", "Annual leave"), "25 days.\n\nA rule.")]


def test_arabic_markdown_is_detected() -> None:
    doc = _parse("# سياسة السفر\n\n## الفنادق\n\nالحد الأقصى لليلة الواحدة ٢٥٠ دولارًا؟ نعم.\n", "travel-ar.md")
    assert doc.lang == "ar"
    assert doc.title == "سياسة السفر"
    assert _paths(doc) == [("سياسة السفر", "الفنادق")]


def test_front_matter_lang_wins_over_detection() -> None:
    assert _parse("---\nlang: MIXED\n---\nEnglish only text.\n").lang == "mixed"


def test_utf8_bom_and_crlf_are_accepted() -> None:
    doc = parse_bytes("\ufeff# Title\r\n\r\n## Part\r\n\r\nline one\r\nline two\r\n".encode(), filename="a.md")
    assert [(s.heading_path, s.text) for s in doc.sections] == [(("Title", "Part"), "line one line two")]


@pytest.mark.parametrize("front_matter", ["groups: [hr\n", "title: [unclosed\nowner: x", "a: b: c"])
def test_malformed_front_matter(front_matter: str) -> None:
    message = _error(f"---\n{front_matter}\n---\n# T\n\nBody.\n".encode(), "p.md")
    assert "front matter is not valid YAML" in message


def test_unclosed_or_non_mapping_front_matter_is_refused() -> None:
    # Silently treating these as body text would drop `groups` and publish a restricted policy.
    assert "closing '---'" in _error(b"---\ngroups: [hr]\n# T\n\nBody.\n", "p.md")
    assert "key: value" in _error(b"---\n- just\n- a list\n---\nBody.\n", "p.md")


def test_unreadable_groups_are_refused() -> None:
    assert "groups" in _error(b"---\ngroups: {hr: true}\n---\nBody.\n", "p.md")


def test_unknown_lang_is_refused() -> None:
    assert "'lang'" in _error(b"---\nlang: arabic\n---\nBody.\n", "p.md")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["# H1", "## H2", "### H3", "text line", "- item", "", "```", "| a | b |",
                                 "|---|---|", "   ", "<!-- c -->", "**bold**", "---", "<table>", "<tr><td>x</td>",
                                 "</table>", '<details markdown="1">', "<summary>S</summary>", "<summary></summary>",
                                 "</details>", "<br>", "<iframe></iframe>"]), max_size=25))
def test_markdown_never_yields_empty_sections(lines: list[str]) -> None:
    try:
        doc = _parse("\n".join(lines), "fuzz.md")
    except ParseError as exc:
        assert "empty" in str(exc) or "front matter" in str(exc)
        return
    assert doc.sections
    for section in doc.sections:
        assert section.text.strip() and section.text == section.text.strip()
        assert section.heading_path and all(part.strip() for part in section.heading_path)


def _sections(text: str) -> list[tuple[tuple[str, ...], str]]:
    return [(s.heading_path, s.text) for s in _parse(text, "page.md").sections]


# ------------------------------------------------------------------------------- HTML inside markdown


def test_markdown_html_table_is_one_line_per_row_even_across_blank_lines() -> None:
    text = """# Channels

Prefixes we use:
<table>
  <tr>
   <td><strong>Prefix</strong>
   </td>
   <td><strong>Purpose</strong></td>
  </tr>

  <tr>
   <td><a href="https://example.slack.com/archives/general">#announce-</a>
   </td>
   <td>Announcements.<br>Limited posting.<br/></td>
  </tr>
  <tr><td><p>#team-</p>

   </td><td><ul><li>Team work</li><li>Members only</li></ul></td></tr>
</table>
After the table.
"""
    assert _sections(text) == [(("Channels",), "Prefixes we use:\n\nPrefix | Purpose\n"
                                               "#announce- | Announcements.; Limited posting.\n"
                                               "#team- | Team work Members only\n\nAfter the table.")]


def test_markdown_html_block_ends_at_a_blank_line_outside_a_table() -> None:
    text = ("# Page\n\n<div class=\"note\">\n<p>Read <em>this</em> first.</p>\n</div>\n\n"
            "- **Markdown** again\n\n<ul>\n<li>one</li>\n<li>two<ul><li>nested</li></ul></li>\n</ul>\n")
    assert _sections(text) == [(("Page",), "Read this first.\n\n- Markdown again\n\n- one\n- two\n  - nested")]


def test_markdown_embedded_media_contribute_no_text() -> None:
    text = """# Videos

<iframe src="https://player.example/1" width="640"
  allowfullscreen></iframe>
<video width="1280" controls>
  <source src="why.mp4">
  <track kind="captions" src="why.vtt" default>
  Your browser cannot play this video.
</video>
<div style="text-align:center;">
  <img src="/a.png" alt="Vault selector"/>
</div>
<br>

Watch them all.
"""
    assert _sections(text) == [(("Videos",), "Watch them all.")]


def test_markdown_details_summary_is_a_heading_over_markdown() -> None:
    text = """# Benefits

## How to get started

<details markdown="1">
<summary>Registration <strong>process</strong></summary>

1. Download the [app](https://app.example/)
- Sign in with **SSO**

</details>

Questions go to #benefits.

<details markdown="1"\\><summary>Family access</summary>

- Adults get their own account

</details>

### Costs

<details markdown="1">
<summary>Reset</summary>

Benefits reset in March.

</details>
"""
    assert _sections(text) == [
        (("Benefits", "How to get started", "Registration process"), "1. Download the app\n- Sign in with SSO"),
        (("Benefits", "How to get started"), "Questions go to #benefits."),  # after </details>: back
        (("Benefits", "How to get started", "Family access"), "- Adults get their own account"),
        (("Benefits", "How to get started", "Costs", "Reset"), "Benefits reset in March."),
    ]


def test_markdown_summary_level_is_capped_and_never_names_the_page() -> None:
    assert _sections("<details>\n<summary>Intro</summary>\n\nHello.\n\n</details>\n") == [
        (("page", "Intro"), "Hello.")]
    deep = "# A\n\n## B\n\n### C\n\n#### D\n\n##### E\n\n###### F\n\n<details>\n<summary>G</summary>\n\nx\n"
    assert _sections(deep) == [(("A", "B", "C", "D", "E", "G"), "x")]


def test_markdown_inline_html_is_dropped_keeping_its_text() -> None:
    text = """# Leave

Read the <a href="https://hr.example/">HR page</a> <b>before</b> you<br>book, <span style="color:red">now</span>.<img src="x.png">
<sub>**Note:** *ask* first</sub>

| Leave | Notice |
|---|---|
| Family Leave<BR>(FMLA) | Written or <br/> verbal<br> |
| <strong>Military</strong> | `<br>` stays |
"""
    assert _sections(text) == [(("Leave",), "Read the HR page before you book, now. Note: ask first\n\n"
                                            "Leave | Notice\nFamily Leave; (FMLA) | Written or; verbal\n"
                                            "Military | <br> stays")]


def test_markdown_text_that_only_looks_like_html_is_kept() -> None:
    text = ("# Naming\n\nName it <your-name>-notes when x < y and a<b, see <URL to new location> or "
            "<https://docs.example/>.\n\nExample: `<a href=\"https://evil.example\">Login</a>`\n")
    assert _sections(text) == [(("Naming",), "Name it <your-name>-notes when x < y and a<b, see "
                                             "<URL to new location> or https://docs.example/.\n\n"
                                             "Example: <a href=\"https://evil.example\">Login</a>")]


def test_markdown_html_entities_are_decoded_once() -> None:
    text = "## &nbsp;&nbsp; Roles &amp; Duties\n\nR&amp;D pays; write &lt;b&gt; as &amp;lt;b&amp;gt;.\n"
    assert _sections(text) == [(("page", "Roles & Duties"), "R&D pays; write <b> as &lt;b&gt;.")]


def test_markdown_long_runs_of_spaces_parse_in_linear_time() -> None:
    spaces = " " * 20_000
    started = time.monotonic()
    text = f"# T\n\n{spaces}x{spaces}<br> <br>{spaces}y\n\n| a{spaces}<br>{spaces}b |\n"
    assert _sections(text) == [(("T",), "x y\n\na; b")]
    assert time.monotonic() - started < 2  # a regex backtracking over the spaces takes minutes


def test_markdown_html_inside_a_fence_is_code() -> None:
    text = ("# Snippet\n\n```html\n<table>\n  <tr><td>cell &amp; more</td></tr>\n</table>\n"
            "<details><summary>Not a heading</summary>\n```\n")
    assert _sections(text) == [(("Snippet",), "<table>\n  <tr><td>cell &amp; more</td></tr>\n</table>\n"
                                              "<details><summary>Not a heading</summary>")]


# ----------------------------------------------------------------------------------------- plain text


def test_plain_text_title_and_numbered_headings() -> None:
    text = ("Remote Work Policy\n\nThis policy covers remote work.\n\n1. ELIGIBILITY\n\nStaff may work "
            "remotely.\n\n1.1 Equipment\n\nLaptops are provided.\n\nSECURITY\n\nUse the VPN.\n")
    doc = _parse(text, "remote.txt")
    assert doc.title == "Remote Work Policy"
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        (("Remote Work Policy",), "This policy covers remote work."),
        (("Remote Work Policy", "1. ELIGIBILITY"), "Staff may work remotely."),
        (("Remote Work Policy", "1. ELIGIBILITY", "1.1 Equipment"), "Laptops are provided."),
        (("Remote Work Policy", "SECURITY"), "Use the VPN."),
    ]


def test_plain_text_numbered_list_is_not_mistaken_for_headings() -> None:
    doc = _parse("Steps\n\n1. Ask your manager\n\n2. Book in the portal\n", "steps.txt")
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        (("Steps",), "1. Ask your manager\n\n2. Book in the portal")]


def test_plain_text_long_first_line_falls_back_to_stem() -> None:
    doc = _parse("x " * 60 + "\n\nMore text.\n", "notes.txt")
    assert doc.title == "notes"
    assert doc.sections[0].heading_path == ("notes",)


# ----------------------------------------------------------------------------------------------- html

LEAVE_HTML = """<!doctype html>
<html><head><title>Leave Policy | Intranet</title>
<meta name="policy-id" content="HR-012"><meta name="groups" content="hr, all-staff">
<meta name="effective" content="2024-03-01"><meta name="viewport" content="width=device-width">
<style>p { color: red }</style><script>track()</script></head>
<body><header>Site header</header><nav><a href="/">Home</a></nav>
<h1>Leave Policy</h1><p>Applies to <b>all</b> employees.</p>
<h2>Annual leave</h2><p>25 days per year.<br>Carry over up to 5.</p>
<ul><li>Book in <a href="/hr">HR portal</a><ul><li>at least 2 weeks ahead</li></ul></li><li>Manager approves</li></ul>
<h3>Exceptions</h3><table><tr><th>Case</th><th>Days</th></tr><tr><td>Bereavement</td><td>5</td></tr></table>
<h2>Sick leave</h2><div>Call in before 9am.<!-- hidden --></div>
<footer>Copyright</footer></body></html>"""


def test_html_article_header_is_kept() -> None:
    doc = _parse("<body><header>Intranet</header><article><header><h1>Expenses</h1></header>"
                 "<p>Claim within 30 days.</p></article></body>", "expenses.htm")
    assert doc.title == "Expenses"  # no <title>: the first H1
    assert [(s.heading_path, s.text) for s in doc.sections] == [(("Expenses",), "Claim within 30 days.")]


def test_html_headings_metadata_and_blocks() -> None:
    doc = _parse(LEAVE_HTML, "leave.html")
    assert doc.title == "Leave Policy | Intranet"
    assert doc.metadata == {"title": "Leave Policy | Intranet", "policy_id": "HR-012",
                            "effective": "2024-03-01", "groups": ["hr", "all-staff"]}
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        (("Leave Policy",), "Applies to all employees."),
        (("Leave Policy", "Annual leave"),
         "25 days per year. Carry over up to 5.\n\n- Book in HR portal\n  - at least 2 weeks ahead\n"
         "- Manager approves"),
        (("Leave Policy", "Annual leave", "Exceptions"), "Case | Days\nBereavement | 5"),
        (("Leave Policy", "Sick leave"), "Call in before 9am."),
    ]
    body = " ".join(s.text for s in doc.sections)
    assert not any(word in body for word in ("track", "color", "Site header", "Home", "Copyright", "hidden"))


def _nested(depth: int, tag: str = "div") -> str:
    return f"<html><body>{f'<{tag}>' * depth}<p>Deep text.</p>{f'</{tag}>' * depth}</body></html>"


@pytest.mark.parametrize("depth", [16_000, 1_000_000])
def test_html_nested_beyond_any_policy_page_is_refused_with_the_reason(depth: int) -> None:
    message = _error(_nested(depth).encode(), "deep.html")
    assert "nests elements more than 400 deep" in message and "upload it again" in message


@pytest.mark.parametrize(("data", "name"), [
    (b"<html><body>" + b"<div " * 16_000 + b"</body></html>", "open.html"),
    (b"# Policy\n\n<div " + b"<div " * 16_000 + b"\n", "open.md"),  # an HTML block of a Markdown page
])
def test_html_with_tags_that_never_close_is_refused_at_once_with_the_reason(data: bytes, name: str) -> None:
    message = _error(data, name)
    assert "more '<' than '>'" in message and "upload it again" in message


def test_html_nested_as_deep_as_allowed_still_parses() -> None:
    doc = _parse(_nested(397), "deep.html")  # <html>, <body>, 397 <div>s and the <p>: 400 deep
    assert doc.sections[0].text == "Deep text."


def test_html_depth_counts_what_stays_open_not_every_tag() -> None:
    # Void elements and closed siblings never deepen the tree, however many there are.
    body = "<p>Line one.<br><img src=x></p>" * 2_000 + "<div><span>Last.</span></div>"
    doc = _parse(f"<html><body>{body}</body></html>", "wide.html")
    assert "Last." in doc.sections[-1].text


# ------------------------------------------------------------------------------------------------ pdf


def _pdf(pages: list[list[str]], *, title: str | None = None) -> bytes:
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("Helvetica", size=11)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


TRAVEL_PAGES = [
    ["Travel and Expenses Policy",
     "This policy explains how employees book travel and claim expenses. " * 3,
     "2. Hotels",
     "The nightly hotel cap is 250 dollars in Boston. Exceptions need approval from finance.",
     "- Book through the travel portal"],
    ["Meals and Incidentals",
     "The daily meal allowance is 75 dollars. Alcohol is not reimbursed."],
]


def test_pdf_pages_and_headings(tmp_path: Path) -> None:
    path = tmp_path / "travel.pdf"
    path.write_bytes(_pdf(TRAVEL_PAGES))
    doc = parse_file(path, max_bytes=10_000_000)
    assert doc.title == "Travel and Expenses Policy"
    assert [(s.heading_path, s.page) for s in doc.sections] == [
        (("Travel and Expenses Policy",), 1),
        (("Travel and Expenses Policy", "2. Hotels"), 1),
        (("Travel and Expenses Policy", "Meals and Incidentals"), 2),
    ]
    hotels = doc.sections[1].text
    assert "cap is 250 dollars in Boston. Exceptions need approval" in hotels
    assert "- Book through the travel portal" in hotels
    assert doc.sections[0].text.count("This policy explains") == 3  # wrapped lines re-joined
    assert doc.lang == "en"


def test_pdf_metadata_title_wins() -> None:
    doc = parse_bytes(_pdf(TRAVEL_PAGES, title="Travel Policy v3"), filename="t.pdf")
    assert doc.title == "Travel Policy v3"
    assert doc.sections[1].heading_path == ("Travel and Expenses Policy", "2. Hotels")


def test_pdf_section_continuing_on_next_page_gets_that_page() -> None:
    doc = parse_bytes(_pdf([["Policy", "Scope", "First page text."], ["Second page text."]]), filename="p.pdf")
    assert [(s.heading_path, s.text, s.page) for s in doc.sections] == [
        (("Policy", "Scope"), "First page text.", 1), (("Policy", "Scope"), "Second page text.", 2)]


def test_pdf_heading_heuristics() -> None:
    doc = parse_bytes(_pdf([["Remote Work Policy", "ELIGIBILITY", "Staff may work remotely.",
                             "1. Submit the request to your manager", "2. Wait for approval",
                             "Equipment and Security", "Use the VPN at all times.", "Page 1 of 1"]]),
                      filename="remote.pdf")
    assert [(s.heading_path, s.text) for s in doc.sections] == [
        (("Remote Work Policy", "ELIGIBILITY"),
         "Staff may work remotely.\n\n1. Submit the request to your manager\n2. Wait for approval"),
        (("Remote Work Policy", "Equipment and Security"), "Use the VPN at all times."),
    ]


def test_pdf_sentence_across_a_page_break_stays_whole() -> None:
    doc = parse_bytes(_pdf([["Policy", "Gifts", "Never accept cash, gift cards or loans, whatever the"],
                            ["amount.", "Declare every gift over USD 100."]]), filename="p.pdf")
    assert [(s.heading_path, s.text, s.page) for s in doc.sections] == [
        (("Policy", "Gifts"), "Never accept cash, gift cards or loans, whatever the amount.", 1),
        (("Policy", "Gifts"), "Declare every gift over USD 100.", 2)]


def test_pdf_with_blank_pages_needs_ocr() -> None:
    message = _error(_pdf([["Policy", "Text."], [], ["More text."], ["Page 4"]]), "scan.pdf")
    assert "page(s) 2, 4 have no extractable text (scanned image?)" in message
    assert "needs OCR before it can be ingested" in message


def test_broken_pdf() -> None:
    data = _pdf(TRAVEL_PAGES)
    assert "PDF could not be read" in _error(data[: len(data) // 3], "broken.pdf")
    assert "PDF could not be read" in _error(b"just some text pretending", "fake.pdf")


# --------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("data", [b"", b"   \n\t\n"])
@pytest.mark.parametrize("filename", ["a.md", "a.txt", "a.html", "a.pdf"])
def test_empty_file(data: bytes, filename: str) -> None:
    assert "file is empty" in _error(data, filename)


@pytest.mark.parametrize("text", ["---\ntitle: Only metadata\n---\n", "# Heading only\n\n## Another\n",
                                  "<html><body><nav>menu</nav></body></html>"])
def test_empty_after_parsing(text: str) -> None:
    filename = "a.html" if text.startswith("<") else "a.md"
    assert "file is empty" in _error(text.encode(), filename)


def test_unsupported_suffix() -> None:
    message = _error(b"PK\x03\x04", "Travel Policy.odt")
    assert "unsupported file type '.odt'; supported: .md, .markdown, .txt, .html, .htm, .pdf, .docx" in message
    assert "no file extension" in _error(b"text", "README")
    assert SUPPORTED_SUFFIXES == {".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx"}


def test_suffix_is_case_insensitive() -> None:
    assert parse_bytes(b"# T\n\nBody.\n", filename="POLICY.MD").title == "T"


@pytest.mark.parametrize("filename", ["a.md", "a.txt", "a.html"])
def test_nul_bytes_mean_binary(filename: str) -> None:
    assert "looks like a binary file, not text" in _error(b"PK\x03\x04\x00\x00 policy", filename)


def test_many_control_characters_mean_binary() -> None:
    assert "looks like a binary file, not text" in _error(b"\x01\x02\x03\x1b" * 20 + b"text", "a.txt")


def test_invalid_utf8_is_reported_not_replaced() -> None:
    message = _error("Caf\u00e9 policy".encode("latin-1"), "menu.md")
    assert "is not valid UTF-8 text (byte 0xe9 at offset 3); save it as UTF-8" in message


def test_utf16_is_reported_as_not_utf8() -> None:
    assert "not valid UTF-8" in _error("Policy".encode("utf-16"), "a.txt")


def test_oversize_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.pdf"
    with path.open("wb") as handle:
        handle.truncate(12_300_000)  # sparse: nothing is written, and nothing may be read
    with pytest.raises(ParseError) as info:
        parse_file(path, max_bytes=10_000_000)
    assert "file is 12.3 MB, over the 10.0 MB limit" in str(info.value)


def test_parse_file_reads_markdown(tmp_path: Path) -> None:
    path = tmp_path / "travel.md"
    path.write_text(TRAVEL_MD, encoding="utf-8")
    assert parse_file(path, max_bytes=1_000_000) == _parse(TRAVEL_MD)


def test_missing_file_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="could not be opened"):
        parse_file(tmp_path / "gone.md", max_bytes=1000)


def test_markdown_headings_inside_details_are_below_its_summary() -> None:
    text = """# Leave

## Parental leave

<details>
<summary>Parental leave FAQ</summary>

### Who is eligible?

Everyone, from the first day.

### How long is it?

Sixteen weeks.

</details>

Ask People Ops for the form.
"""
    assert _sections(text) == [
        (("Leave", "Parental leave", "Parental leave FAQ", "Who is eligible?"), "Everyone, from the first day."),
        (("Leave", "Parental leave", "Parental leave FAQ", "How long is it?"), "Sixteen weeks."),
        (("Leave", "Parental leave"), "Ask People Ops for the form."),
    ]


def test_a_heading_of_markup_only_names_no_section() -> None:
    # "<br>" lines underlined by "---" are a setext heading whose text is blank once the markup goes.
    assert _sections("<br>\n<br>\n---\ntext line") == [(("page",), "text line")]
