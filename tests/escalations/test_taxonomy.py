from __future__ import annotations

from pathlib import Path

import pytest

from escalations.taxonomy import (
    AVOIDABLE,
    DEFAULT_TAXONOMY,
    GENUINE,
    SYSTEM,
    UNCLASSIFIED,
    TaxonomyError,
    kind_for_reason,
    load_taxonomy,
)
from graph.messages import REASONS


@pytest.mark.parametrize(("reason", "kind"), [
    ("retrieval_unavailable", GENUINE),
    ("user_requested_human", GENUINE),
    ("below_score_floor", AVOIDABLE),
    ("answer_validation_failed", AVOIDABLE),
    ("conflicting_sources", AVOIDABLE),
    ("internal_error", SYSTEM),
    ("a_reason_added_later", UNCLASSIFIED),
    (None, UNCLASSIFIED),
])
def test_kind_for_each_reason(reason: str | None, kind: str) -> None:
    assert kind_for_reason(reason) == kind


def test_every_reason_the_graph_can_stamp_has_a_kind() -> None:
    assert all(kind_for_reason(r) != UNCLASSIFIED for r in REASONS)


def test_default_taxonomy() -> None:
    assert DEFAULT_TAXONOMY.names == ("travel", "expenses", "leave", "returns", "security", "remote work",
                                      "it & equipment", "facilities", "conduct", "other")
    assert all(t.description for t in DEFAULT_TAXONOMY.topics)
    assert load_taxonomy(None) is DEFAULT_TAXONOMY


@pytest.mark.parametrize(("label", "name"), [
    ("Travel", "travel"), ("  leave. ", "leave"), ('"remote work"', "remote work"),
    ("IT and Equipment", "it & equipment"), ("**security**", "security"), ("bananas", None), ("", None),
])
def test_lookup_is_forgiving_but_exact(label: str, name: str | None) -> None:
    assert DEFAULT_TAXONOMY.lookup(label) == name


def test_topics_file_as_mapping_or_list(tmp_path: Path) -> None:
    mapping = tmp_path / "topics.yml"
    mapping.write_text("payroll: salaries, payslips and pay dates\nbenefits: health cover and pensions\n")
    assert load_taxonomy(mapping).names == ("payroll", "benefits")
    listed = tmp_path / "list.yml"
    listed.write_text("topics:\n  - name: payroll\n    description: pay\n  - {name: other, description: the rest}\n")
    taxonomy = load_taxonomy(listed)
    assert taxonomy.names == ("payroll", "other")
    assert taxonomy.topics[0].text == "payroll: pay"


@pytest.mark.parametrize(("text", "problem"), [
    ("a: one\nA: two\n", "duplicate"),
    ("unclassified: rows we could not label\n", "reserved"),
    ("payroll:\n", "without a description"),
    ("- just a string\n", "needs a name"),
    ("42\n", "expected a mapping"),
    ("a: [unclosed\n", "cannot read"),
])
def test_bad_topics_file_says_what_to_fix(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "topics.yml"
    path.write_text(text)
    with pytest.raises(TaxonomyError, match=problem):
        load_taxonomy(path)


def test_missing_topics_file(tmp_path: Path) -> None:
    with pytest.raises(TaxonomyError, match="cannot read"):
        load_taxonomy(tmp_path / "nope.yml")
