"""Topics from the tenant's own documents, and a question a document the asker may not read would have
answered: recorded on the escalation (never shown to the asker), labelled `restricted` with that
document as its topic, and kept out of the knowledge-base backlog. Real graph, index and classifier."""

from __future__ import annotations

import functools
from datetime import UTC

from bot.services import Services
from escalations.classifier import EmbeddingTopicClassifier, classify_pending, document_taxonomy
from escalations.digest import build_digest
from escalations.taxonomy import AVOIDABLE, DEFAULT_TAXONOMY, RESTRICTED, kind_of
from escalations.weeks import week_label
from store.db import utcnow

CAR = "What relocation support do executives get?"


async def test_the_tenants_documents_are_its_topics(handbook: Services) -> None:
    taxonomy = await document_taxonomy(handbook.catalog, "larkspur")
    assert {"Travel and Expenses Policy", "Retail Returns Policy", "Store Operations Standards",
            "Executive Allowances", "other"} <= set(taxonomy.names)
    travel = next(t for t in taxonomy.topics if t.name == "Travel and Expenses Policy")
    assert "Hotels" in travel.description  # its section headings describe it
    assert await document_taxonomy(handbook.catalog, "harbor") == DEFAULT_TAXONOMY  # no documents there

    classifier = EmbeddingTopicClassifier(embedder=handbook.embedder, taxonomy=DEFAULT_TAXONOMY)
    by_documents = {q: classifier.nearest([q], taxonomy=taxonomy)[0] for q in (
        "Can I return a tent I bought online?", "Is there a staff discount in the store?",
        "What is the nightly hotel limit in Tokyo?", "Can I bring my dog to the office?",
        "How do stock options vest at Larkspur?", "I want to talk to a person, please.")}
    assert by_documents == {
        "Can I return a tent I bought online?": "Returns and Refunds FAQ for Customers",
        "Is there a staff discount in the store?": "Store Operations Standards",
        "What is the nightly hotel limit in Tokyo?": "Travel and Expenses Policy",
        "Can I bring my dog to the office?": "Offices and Facilities Guide",
        # no document covers them (and MiniLM never lands on an Arabic title it cannot read)
        "How do stock options vest at Larkspur?": "other", "I want to talk to a person, please.": "other"}
    # the fixed list calls a staff discount a return: what the documents' own titles put right
    assert classifier.nearest(["Is there a staff discount in the store?"])[0] == "returns"


async def test_a_document_the_asker_may_not_read_makes_the_escalation_restricted(handbook: Services) -> None:
    bob = handbook.access.resolve_cli("bob")
    asked = await handbook.runner.ask(session_id="s-car", scope=bob, question=CAR)
    assert asked.route == "escalate" and asked.escalation is not None
    assert "finance/executive-allowances" not in {p.doc_id for p in asked.passages}  # never shown to bob
    assert "relocation" not in asked.answer.lower() and "25,000" not in asked.answer
    hidden = [p for p in asked.escalation.passages if p.get("restricted")]
    assert hidden and {p["doc_id"] for p in hidden} == {"finance/executive-allowances"}
    assert asked.interrupt is not None and asked.interrupt.get("restricted")
    assert kind_of(asked.escalation) == RESTRICTED

    # Erin (an executive) reads that document: her unanswerable question is a plain knowledge-base gap.
    erin = handbook.access.resolve_cli("erin")
    gap = await handbook.runner.ask(session_id="s-dog", scope=erin,
                                    question="Can I bring my dog to the office?")
    assert gap.escalation is not None and kind_of(gap.escalation) == AVOIDABLE
    assert not [p for p in gap.escalation.passages if p.get("restricted")]

    report = await classify_pending(queries=handbook.store.reports, classifier=EmbeddingTopicClassifier(
        embedder=handbook.embedder, taxonomy=DEFAULT_TAXONOMY), max_attempts=3,
        topics_for=functools.partial(document_taxonomy, handbook.catalog))
    assert report.kinds == {RESTRICTED: 1, AVOIDABLE: 1} and report.errors == []
    car = await handbook.conversations.get_escalation(escalation_id=asked.escalation.escalation_id)
    assert car is not None and (car.kind, car.topic) == (RESTRICTED, "Executive Allowances")
    dog = await handbook.conversations.get_escalation(escalation_id=gap.escalation.escalation_id)
    assert dog is not None and dog.topic == "Offices and Facilities Guide"

    d = await build_digest(handbook.store.reports, week=week_label(utcnow(), UTC), tenant_id="larkspur")
    assert (d.counts.restricted, d.counts.avoidable) == (1, 1)
    assert [b.question for b in d.backlog] == ["Can I bring my dog to the office?"]
    assert [r.question for r in d.restricted] == [CAR]
