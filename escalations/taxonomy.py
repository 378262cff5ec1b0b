"""What the analytics label: the kind of an escalation (from its reason) and a topic (from a fixed list).

Kind is graph logic, not judgement: an escalation is *genuine* when no answer existed for the bot to give
(retrieval was down, or the user asked for a person) and *avoidable* when the bot had grounding material
and still could not produce a defensible answer (below the score floor, failed citation validation,
conflicting sources). Avoidable escalations are the knowledge-base backlog.

Topics come from a fixed, configurable taxonomy: `CAIRN_TOPICS` names a YAML file, either a mapping
`name: one-line description` or `topics: [{name, description}, …]`. Without it, DEFAULT_TOPICS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from store.reports import UNCLASSIFIED as UNCLASSIFIED  # re-exported: the label vocabulary lives here

GENUINE = "genuine"
AVOIDABLE = "avoidable"
SYSTEM = "system"  # the bot itself failed (internal_error): neither a real gap nor a KB fix

KIND_BY_REASON: dict[str, str] = {
    "retrieval_unavailable": GENUINE,
    "user_requested_human": GENUINE,
    "below_score_floor": AVOIDABLE,
    "answer_validation_failed": AVOIDABLE,
    "conflicting_sources": AVOIDABLE,
    "internal_error": SYSTEM,
}


def kind_for_reason(reason: str | None) -> str:
    """genuine | avoidable | system; a reason nobody mapped yet is `unclassified`, never dropped."""
    return KIND_BY_REASON.get(reason or "", UNCLASSIFIED)


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
