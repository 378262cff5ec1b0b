"""The escalation classifier: kind from the reason, topic from the whole conversation.

The escalating turn is often only "yes, connect me", so the topic is read from the user's side of
the conversation that led there: the session's questions up to the escalating turn, the follow-ups
kept on the escalation's transcript, and the escalation's question. Requests for a person and bare
confirmations are dropped when anything else is left.

The topics are the tenant's own documents (`document_taxonomy`: each published document's title, with
its section headings as the description; "other" for what none of them covers) unless `CAIRN_TOPICS`
names a fixed list; a tenant with fewer than two documents gets the default list. A question a
document the asker may not read would have answered (graph/restricted.py) takes that document's title.
With a chat model configured (and the LLM not paused) the model picks one topic name from the
taxonomy; offline, the nearest topic description by cosine similarity of the bundled sentence
embeddings (MiniLM for English, multilingual USE when the conversation is Arabic or mixed).
A failure or an unparseable label stores `unclassified` instead of dropping the row; such a row is
tried again until `label_attempts` reaches the maximum, then keeps `unclassified`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from openai import AsyncOpenAI

from escalations.taxonomy import (
    DEFAULT_TAXONOMY,
    UNCLASSIFIED,
    Taxonomy,
    Topic,
    kind_of,
    restricted_passages,
)
from graph.intent import wants_human
from retrieval.embed import Embedder
from retrieval.language import detect_language
from store.catalog import Catalog
from store.conversations import ConversationStore
from store.records import EscalationRecord
from store.reports import EscalationReports

log = logging.getLogger(__name__)

CONTEXT_TURNS = 6  # user questions before (and including) the escalating turn
LINE_CHARS = 500
CLASSIFY_TIMEOUT_S = 60.0
# Below this cosine the conversation resembles no topic ("can I talk to someone?"): it is "other"
# when the taxonomy has one. Related questions score 0.2–0.8 with either encoder; unrelated ~0.1.
MIN_SIMILARITY = 0.15
FALLBACK_TOPIC = "other"


class UnparseableLabel(ValueError):
    """The model answered with something that is not a topic of the taxonomy."""


HEADINGS_PER_TOPIC = 12
# Document titles are nearer to everything than topic descriptions: on the sample handbook's escalations,
# the questions no document covers ("How do stock options vest?" 0.23, "I want to talk to a person"
# 0.20) score under 0.25, the ones a document covers 0.27–0.44.
DOCUMENT_MIN_SIMILARITY = 0.25
# (tenant id) → the topics of that tenant's escalations
TopicsFor = Callable[[str], Awaitable[Taxonomy]]


class TopicClassifier(Protocol):
    name: str

    async def topic(self, lines: list[str], *, language: str | None, taxonomy: Taxonomy | None = None) -> str:
        """A topic name of `taxonomy` (default: the classifier's own). Raises on any failure (the caller
        stores `unclassified`)."""
        ...


async def document_taxonomy(catalog: Catalog, tenant_id: str) -> Taxonomy:
    """The tenant's published documents as topics: the title names it, its section headings describe it.
    Fewer than two documents make no useful list: the default taxonomy then."""
    topics: dict[str, list[str]] = {}
    for title, heading in await catalog.published_headings(tenant_id=tenant_id):
        name = " ".join(title.split()) or "untitled"
        section = heading.split(">")[-1].strip()
        sections = topics.setdefault(name, [])
        if section and section != name and section not in sections and len(sections) < HEADINGS_PER_TOPIC:
            sections.append(section)
    if len(topics) < 2:
        return DEFAULT_TAXONOMY
    listed = [Topic(name, "; ".join(sections) or name) for name, sections in sorted(topics.items())]
    if FALLBACK_TOPIC not in topics:
        listed.append(Topic(FALLBACK_TOPIC, "anything none of these documents covers"))
    return Taxonomy(tuple(listed), min_similarity=DOCUMENT_MIN_SIMILARITY)


# -- the conversation a topic is read from ---------------------------------------------------------


def _substantive(line: str) -> bool:
    words = line.split()
    if wants_human(line):
        return len(words) > 6  # "I want to talk to a person about my Boston hotel refund" still says what
    return len(words) > 2  # "yes", "ok please" say nothing about the topic


def conversation_lines(esc: EscalationRecord, session_questions: list[str]) -> list[str]:
    """The user's side of the conversation, oldest first, without requests for a person."""
    lines = list(session_questions)
    for raw in esc.transcript.splitlines():
        if raw.startswith("user: "):
            lines.append(raw.removeprefix("user: "))
    lines.append(esc.question)
    unique = list(dict.fromkeys(line.strip()[:LINE_CHARS] for line in lines if line.strip()))
    kept = [line for line in unique if _substantive(line)]
    return kept or unique[-1:]


async def session_questions(conversations: ConversationStore, esc: EscalationRecord) -> list[str]:
    turns = await conversations.list_turns(session_id=esc.session_id)
    ids = [t.turn_id for t in turns]
    upto = ids.index(esc.turn_id) + 1 if esc.turn_id in ids else len(turns)
    return [t.question for t in turns[:upto][-CONTEXT_TURNS:]]


# -- the two classifiers ----------------------------------------------------------------------------


class EmbeddingTopicClassifier:
    """Nearest topic description: mean of the lines' unit vectors, cosine against each topic;
    `other` when nothing is near (a conversation that only asks for a person)."""

    name = "embedding"

    def __init__(self, *, embedder: Embedder, taxonomy: Taxonomy) -> None:
        self.embedder = embedder
        self.taxonomy = taxonomy
        self._topic_vecs: dict[bool, np.ndarray] = {}

    def _encode(self, texts: list[str], multilingual: bool) -> np.ndarray:
        if multilingual:
            return np.asarray(self.embedder.encode_multilingual(texts), dtype=np.float32)
        return np.asarray(self.embedder.encode_sentences(texts), dtype=np.float32)

    def nearest(self, lines: list[str], *, language: str | None = None,
                taxonomy: Taxonomy | None = None) -> tuple[str, list[float]]:
        if not lines:
            raise ValueError("nothing to classify")
        multilingual = language == "ar" or detect_language(" ".join(lines)) in ("ar", "mixed")
        taxonomy = taxonomy or self.taxonomy
        if taxonomy is not self.taxonomy:  # a tenant's documents: the embedder caches their vectors
            topic_vecs = self._encode([t.text for t in taxonomy.topics], multilingual)
        else:
            if multilingual not in self._topic_vecs:
                self._topic_vecs[multilingual] = self._encode([t.text for t in taxonomy.topics], multilingual)
            topic_vecs = self._topic_vecs[multilingual]
        query = self._encode(lines, multilingual).mean(axis=0)
        query /= max(float(np.linalg.norm(query)), 1e-12)
        scores = topic_vecs @ query
        if not multilingual:  # MiniLM reads no Arabic: an Arabic title is noise to it, never the nearest
            readable = np.array([detect_language(t.text) == "en" for t in taxonomy.topics])
            scores = np.where(readable, scores, -1.0)
        best = int(np.argmax(scores))
        name = taxonomy.names[best]
        floor = MIN_SIMILARITY if taxonomy.min_similarity is None else taxonomy.min_similarity
        if float(scores[best]) < floor and FALLBACK_TOPIC in taxonomy.names:
            name = FALLBACK_TOPIC
        return name, [round(float(s), 4) for s in scores]

    async def topic(self, lines: list[str], *, language: str | None, taxonomy: Taxonomy | None = None) -> str:
        name, _ = await asyncio.to_thread(self.nearest, lines, language=language, taxonomy=taxonomy)
        return name


SYSTEM_PROMPT = (
    "You label questions that a policy help bot handed to a person. Read the user's messages and pick "
    "the one topic from the list that they are about. Reply with the topic name exactly as written in "
    "the list and nothing else.")


def topic_prompt(lines: list[str], taxonomy: Taxonomy) -> list[dict[str, str]]:
    topics = "\n".join(f"- {t.name}: {t.description}" for t in taxonomy.topics)
    said = "\n".join(f"user: {line}" for line in lines)
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Topics:\n{topics}\n\nConversation:\n{said}\n\nTopic:"}]


def parse_topic(reply: str | None, taxonomy: Taxonomy) -> str | None:
    """A taxonomy name from the model's reply: the bare name, `Topic: name`, or {"topic": name}."""
    if not reply or not reply.strip():
        return None
    text = reply.strip()
    if text.startswith("{"):
        try:
            data: Any = json.loads(text)
            text = str(data.get("topic", "")) if isinstance(data, dict) else ""
        except ValueError:
            return None
    first = text.splitlines()[0] if text.splitlines() else ""
    first = re.sub(r"^\s*(?:[-*]\s*)?(?:topic\s*:\s*)?", "", first, flags=re.IGNORECASE)
    return taxonomy.lookup(first)


class LLMTopicClassifier:
    name = "llm"

    def __init__(self, *, client: AsyncOpenAI, model: str, taxonomy: Taxonomy) -> None:
        self.client = client
        self.model = model
        self.taxonomy = taxonomy

    async def topic(self, lines: list[str], *, language: str | None, taxonomy: Taxonomy | None = None) -> str:
        taxonomy = taxonomy or self.taxonomy
        response = await self.client.chat.completions.create(
            model=self.model, messages=topic_prompt(lines, taxonomy),  # type: ignore[arg-type]
            temperature=0, max_tokens=40)
        choices = getattr(response, "choices", None)
        content = choices[0].message.content if choices else None
        label = parse_topic(content, taxonomy)
        if label is None:
            raise UnparseableLabel(f"not a topic: {str(content)[:80]!r}")
        return label


# -- one pass over the unlabelled rows ---------------------------------------------------------------


@dataclass
class ClassifyReport:
    classifier: str
    labelled: int = 0
    unclassified: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    topics: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {"classifier": self.classifier, "labelled": self.labelled, "unclassified": self.unclassified,
                "kinds": dict(self.kinds), "topics": dict(self.topics), "errors": self.errors}


async def classify_pending(*, queries: EscalationReports, classifier: TopicClassifier, max_attempts: int,
                           limit: int = 50, timeout_s: float = CLASSIFY_TIMEOUT_S,
                           topics_for: TopicsFor | None = None) -> ClassifyReport:
    """Label each unlabelled escalation once. One row's failure never stops the others. `topics_for`:
    each tenant's topics (`document_taxonomy`); without it, the classifier's own taxonomy."""
    conversations = queries.conversations
    report = ClassifyReport(classifier=classifier.name)
    taxonomies: dict[str, Taxonomy] = {}
    for esc in await queries.unlabelled_escalations(max_attempts=max_attempts, limit=limit):
        kind = kind_of(esc)
        try:
            taxonomy = None
            if topics_for is not None:
                if esc.tenant_id not in taxonomies:
                    taxonomies[esc.tenant_id] = await topics_for(esc.tenant_id)
                taxonomy = taxonomies[esc.tenant_id]
            hidden = [str(p.get("title")) for p in restricted_passages(esc)]
            if taxonomy is not None and hidden and taxonomy.lookup(hidden[0]):
                topic = str(taxonomy.lookup(hidden[0]))  # the document that would have answered
            else:
                session = await conversations.get_session(session_id=esc.session_id)
                lines = conversation_lines(esc, await session_questions(conversations, esc))
                chosen = {"taxonomy": taxonomy} if taxonomy is not None else {}
                topic = await asyncio.wait_for(
                    classifier.topic(lines, language=session.lang if session else None, **chosen),
                    timeout=timeout_s)
        except Exception as exc:
            error = f"{esc.escalation_id}: {type(exc).__name__}: {exc}"[:300]
            log.warning("classifier could not label %s", error)
            report.errors.append(error)
            topic = UNCLASSIFIED
        try:
            await conversations.label(escalation_id=esc.escalation_id, kind=kind, topic=topic)
        except Exception:
            log.exception("could not store the label of %s", esc.escalation_id)
            continue
        report.labelled += 1
        report.unclassified += topic == UNCLASSIFIED
        report.kinds[kind] += 1
        report.topics[topic] += 1
    return report
