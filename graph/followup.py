"""Is a message, sent while a person looks at an earlier question, about that question?

A follow-up joins the open escalation's thread: a request for a person (one is already on it), a
chase ("any update?", "still waiting"), a message that asks nothing and so adds to the open question
("It is a very small dog."), a question that leans on it ("and for contractors?", "what about
Boston?"), or one close in meaning to the open question or to what the user added to it ("I really
need to know about the gym thing by Friday"). Anything else is a question of its own: it is answered,
or escalated on its own, and never swallowed by the open one.

Closeness is the cosine of the bundled sentence vectors (MiniLM for English, the multilingual model
when either side is Arabic). The thresholds sit between a follow-up and a different question of the
same conversation, measured on pairs like these (MiniLM): "Can I expense a gym membership?" against
"is the gym membership reimbursed if I'm part time?" 0.80, "… the gym thing by friday" 0.45, "what
about a yoga class?" 0.34, "How many vacation days do I get?" 0.18, "any update?" 0.00; with the
multilingual model, an Arabic "any news about the gym membership?" 0.56 and "does unused leave carry
over?" after "how many days of annual leave?" 0.50, against 0.29–0.31 for unrelated questions.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from graph.intent import CHASE, conversation_intent, wants_human
from retrieval.embed import Embedder
from retrieval.language import detect_language
from store.records import EscalationRecord

# (message, what the open escalation is about) → is the message about it?
FollowUpCheck = Callable[[str, Sequence[str]], Awaitable[bool]]

TRANSCRIPT_CHARS = 400  # graph/nodes/escalate.py: each transcript line is cut there
RELATED_MINILM = 0.42
RELATED_MULTILINGUAL = 0.5
TRANSCRIPT_LINES = 4


# How a message asks: a question mark, or an interrogative or a request to know at its start.
_ASKS = re.compile(
    r"[?؟]|^\W*(?:what|whats|how|hows|when|where|which|who|whom|whose|why|can|could|may|might|must|shall|should|"
    r"will|would|do|does|did|is|are|was|were|am|have|has|had|any|tell me|explain|please tell|please explain|"
    r"i (?:need|want|would like|'d like) to know|i(?:'m| am) wondering|wondering|"
    r"هل|ما|ماذا|كم|كيف|متى|أين|اين|لماذا|لم|من|أي|اي|ايش|إيش|وش|شو|أريد أن أعرف|اريد ان اعرف)\b",
    re.IGNORECASE)
# A question that leans on the one before it: "and for contractors?", "what about Boston?".
# (Short: "and how many sick days do I get this year?" is a question of its own.)
_LEANS = re.compile(r"^\W*(?:and|what about|how about|same (?:for|in|with)|"
                    r"و(?:هل|ماذا|كم|ما|كيف|متى|لو)|ماذا عن|وماذا عن|طيب و|وبالنسبة|بالنسبة)\b", re.IGNORECASE)
LEANING_WORDS = 6


def asks_anything(message: str) -> bool:
    """Whether a message asks something (a question, or a request to know), rather than telling."""
    return bool(_ASKS.search(message.strip()))


def open_question_texts(esc: EscalationRecord) -> list[str]:
    """The open escalation's question and the user's latest follow-ups added to it (the transcript's
    user lines after the question; those before it are earlier questions of the conversation)."""
    lines = esc.transcript.splitlines()
    question = f"user: {esc.question}"[:TRANSCRIPT_CHARS]  # as graph/nodes/escalate.py writes it
    asked = [i for i, line in enumerate(lines) if line == question]
    added = [line[6:] for line in lines[asked[-1] + 1:] if line.startswith("user: ")] if asked else []
    return list(dict.fromkeys([esc.question, *added[-TRANSCRIPT_LINES:]]))


async def follows_up(message: str, esc: EscalationRecord, related: FollowUpCheck | None) -> bool:
    """True when `message` belongs in the open escalation `esc` rather than being a turn of its own."""
    if wants_human(message) or conversation_intent(message) == CHASE:
        return True
    if conversation_intent(message) is not None:
        return False  # "thanks", "hi": answered as conversation, the escalation stays as it is
    if (_LEANS.search(message) and len(message.split()) <= LEANING_WORDS) or not asks_anything(message):
        return True
    return related is not None and await related(message, open_question_texts(esc))


def embedding_follow_up(embedder: Embedder) -> FollowUpCheck:
    """Closeness in meaning, by the bundled sentence encoders (see the module note)."""

    def close(message: str, texts: Sequence[str]) -> bool:
        if not texts:
            return False
        multilingual = embedder.multilingual and any(
            detect_language(t) in ("ar", "mixed") for t in (message, *texts))
        encode = embedder.encode_multilingual if multilingual else embedder.encode_sentences
        vectors = np.asarray(encode([message, *texts]), dtype=np.float32)
        best = float(np.max(vectors[1:] @ vectors[0]))
        return best >= (RELATED_MULTILINGUAL if multilingual else RELATED_MINILM)

    async def related(message: str, texts: Sequence[str]) -> bool:
        return await asyncio.to_thread(close, message, texts)

    return related
