"""What the analytics label: the kind of an escalation (from its reason) and a topic.

Kind is graph logic, not judgement: an escalation is *genuine* when no answer existed for the bot to give
(retrieval was down, or the user asked for a person); *restricted* when a published document the asker
may not read would have answered (graph/restricted.py: access to review, not a gap); *no documents*
when the asker may read no published document at all (`no_eligible_source`); and *avoidable* when the
documents the asker may read did not give a defensible answer (nothing close enough, failed citation
validation, conflicting sources). Avoidable escalations are the knowledge-base backlog.

Topics come from the tenant's own document titles (escalations/classifier.py, `document_taxonomy`) or,
when `CAIRN_TOPICS` names a YAML file (a mapping `name: one-line description` or `topics: [{name,
description}, …]`), from that fixed list; a tenant without documents gets DEFAULT_TOPICS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from store.records import EscalationRecord
from store.reports import UNCLASSIFIED as UNCLASSIFIED  # re-exported: the label vocabulary lives here

GENUINE = "genuine"
AVOIDABLE = "avoidable"
RESTRICTED = "restricted"  # a document the asker may not read would have answered
NO_DOCUMENTS = "no_documents"  # the asker may read no published document at all
SYSTEM = "system"  # the bot itself failed (internal_error): neither a real gap nor a KB fix

KIND_BY_REASON: dict[str, str] = {
    "retrieval_unavailable": GENUINE,
    "user_requested_human": GENUINE,
    "no_eligible_source": NO_DOCUMENTS,
    "below_score_floor": AVOIDABLE,
    "answer_validation_failed": AVOIDABLE,
    "conflicting_sources": AVOIDABLE,
    "internal_error": SYSTEM,
}


def kind_for_reason(reason: str | None) -> str:
    """genuine | avoidable | no_documents | system; a reason nobody mapped yet is `unclassified`, never
    dropped."""
    return KIND_BY_REASON.get(reason or "", UNCLASSIFIED)


def restricted_passages(esc: EscalationRecord) -> list[dict[str, Any]]:
    """The passages of documents the asker may not read that would have answered (graph/restricted.py)."""
    return [p for p in esc.passages if isinstance(p, dict) and p.get("restricted")]


def kind_of(esc: EscalationRecord) -> str:
    """The escalation's kind: restricted when a document the asker may not read would have answered,
    else the kind of its reason (so a row the classifier has not reached yet is counted the same)."""
    return RESTRICTED if restricted_passages(esc) else kind_for_reason(esc.reason)


@dataclass(frozen=True)
class Topic:
    name: str
    description: str

    @property
    def text(self) -> str:
        """What the embedding side compares a transcript with."""
        return f"{self.name}: {self.description}"


DEFAULT_TOPICS: tuple[Topic, ...] = (
    Topic("travel", "business trips: flights, hotels and nightly limits, per diems, mileage, booking travel"),
    Topic("expenses", "expense claims, receipts, reimbursements, corporate cards, allowances and approvals"),
    Topic("leave", "annual leave, vacation days, sick leave, parental leave, bereavement and time off"),
    Topic("returns", "customer returns, refunds and exchanges in stores, online and for wholesale customers"),
    Topic("security", "information security: passwords, MFA, phishing, data classification, incidents"),
    Topic("remote work", "working from home or remotely, hybrid schedules, working abroad, home office setup"),
    Topic("it & equipment", "laptops, phones, software, accounts and access, the IT helpdesk, acceptable use"),
    Topic("facilities", "offices, buildings, desks, parking, the cafeteria, meeting rooms and warehouse sites"),
    Topic("conduct", "code of conduct, harassment, conflicts of interest, gifts, ethics and discipline"),
    Topic("other", "anything else: pay, benefits, stock options, careers, or questions outside these topics"),
)


class TaxonomyError(ValueError):
    """The topics file cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Taxonomy:
    topics: tuple[Topic, ...]
    # Below this cosine a conversation is near no topic: "other" when the list has it (None: the
    # classifier's own default)
    min_similarity: float | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.topics)

    def lookup(self, label: str) -> str | None:
        """The canonical topic name for a label, ignoring case, quotes and stray punctuation."""
        wanted = _normalise(label)
        for name in self.names:
            if _normalise(name) == wanted:
                return name
        return None


DEFAULT_TAXONOMY = Taxonomy(DEFAULT_TOPICS)


def load_taxonomy(path: Path | None) -> Taxonomy:
    if path is None:
        return DEFAULT_TAXONOMY
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"cannot read topics file {path}: {exc}") from exc
    items = raw.get("topics") if isinstance(raw, dict) and "topics" in raw else raw
    topics: list[Topic] = []
    if isinstance(items, dict):
        topics = [Topic(str(k).strip(), str(v or "").strip()) for k, v in items.items()]
    elif isinstance(items, list):
        for item in items:
            if not isinstance(item, dict) or not item.get("name"):
                raise TaxonomyError(f"{path}: each topic needs a name and a description, got {item!r}")
            topics.append(Topic(str(item["name"]).strip(), str(item.get("description") or "").strip()))
    else:
        raise TaxonomyError(f"{path}: expected a mapping of topic: description, or topics: [{{name, description}}]")
    names = [_normalise(t.name) for t in topics]
    if not topics:
        raise TaxonomyError(f"{path}: no topics")
    if len(set(names)) != len(names):
        raise TaxonomyError(f"{path}: duplicate topic names")
    if UNCLASSIFIED in names:
        raise TaxonomyError(f"{path}: '{UNCLASSIFIED}' is reserved for rows the classifier could not label")
    if missing := [t.name for t in topics if not t.description]:
        raise TaxonomyError(f"{path}: topics without a description: {', '.join(missing)}")
    return Taxonomy(tuple(topics))


def _normalise(label: str) -> str:
    words = label.strip().strip("\"'`.*").lower().split()
    return " ".join("&" if w == "and" else w for w in words)
