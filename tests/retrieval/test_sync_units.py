"""The small rules of sync: schedules, page identities and scope (no network, no model)."""

from __future__ import annotations

import pytest

from retrieval.sync import kind_of, parse_duration
from retrieval.sync.model import doc_id_from_path
from retrieval.sync.website import WebsiteLister


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("15m", 900), ("1h30m", 5400), ("1d", 86400),
                                               ("2w", 1209600), (" 6H ", 21600)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "10", "5s", "1h 30x", "-1h"])
def test_bad_or_too_short_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(("path", "doc_id"), [
    ("/", "index"), ("/index.html", "index"), ("/handbook/finance/expenses/", "handbook/finance/expenses"),
    ("/handbook/leave.html", "handbook/leave"), ("/a/index.htm", "a"), ("/forms/claim form.pdf", "forms/claim-form.pdf"),
    ("/a/../b", "a/-/b"), ("/سياسة/السفر/", "سياسة/السفر"),
])
def test_page_identity_is_the_url_path(path: str, doc_id: str) -> None:
    assert doc_id_from_path(path) == doc_id


def test_scope_is_the_start_path_on_the_same_origin_without_queries() -> None:
    lister = WebsiteLister("http://127.0.0.1:8080/handbook/")
    assert lister.in_scope("http://127.0.0.1:8080/handbook/")
    assert lister.in_scope("http://127.0.0.1:8080/handbook/people/leave/")
    assert not lister.in_scope("http://127.0.0.1:8080/handbook-old/")
    assert not lister.in_scope("http://127.0.0.1:8080/blog/")
    assert not lister.in_scope("http://127.0.0.1:9090/handbook/x/")
    assert not lister.in_scope("https://127.0.0.1:8080/handbook/x/")
    assert not lister.in_scope("http://127.0.0.1:8080/handbook/search?q=leave")
    assert lister.key_of("http://127.0.0.1:8080/handbook/people/index.html") == "/handbook/people"
    assert lister.key_of("http://127.0.0.1:8080/handbook/people/") == "/handbook/people"
    assert kind_of("https://handbook.example/") == "website" and kind_of("/mnt/share") == "directory"
    with pytest.raises(ValueError):
        WebsiteLister("ftp://127.0.0.1/handbook/")
