"""Events → sections: one function for every format, so heading-path rules are identical across them."""

from __future__ import annotations

from collections.abc import Iterable

from retrieval.language import detect_language
from retrieval.parse import budget
from retrieval.parse.model import EMPTY, Event, Heading, ParsedDocument, ParseError, Section


def finish(stem: str, events: Iterable[Event], metadata: dict[str, object], *,
           title: str | None = None) -> ParsedDocument:
    events = list(_within_budget(events))
    headings = [event for event in events if isinstance(event, Heading) and event.text.strip()]
    # A single leading H1 names the document; several H1s are its top-level sections instead.
    root_from_h1 = bool(headings) and headings[0].level == 1 and [h.level for h in headings].count(1) == 1
    title = title or (headings[0].text if root_from_h1 else None) or stem
    sections = _assemble(events, title, root_from_h1=root_from_h1)
    if not sections:
        raise ParseError(EMPTY)
    body = "\n".join(section.text for section in sections)
    lang = metadata.get("lang") or detect_language(body)
    return ParsedDocument(title=title, sections=sections, lang=str(lang), metadata=metadata)


def _within_budget(events: Iterable[Event]) -> Iterable[Event]:
    """The events, refused at the first block or character over the current budget (events may be a
    generator that reads the file as it goes: the reading stops there too)."""
    chars = 0
    for count, event in enumerate(events, 1):
        budget.check_blocks(count)
        chars += len(event.text)
        budget.check_chars(chars)
        yield event


def _assemble(events: list[Event], title: str, *, root_from_h1: bool) -> tuple[Section, ...]:
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
        if isinstance(event, Heading):
            flush()
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            # A heading with no words (markup only: "<br>" underlined by "---") closes the section
            # before it but names none.
            if event.text.strip():
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
