"""Answerers draft the reply from the passages sent this turn; the validator decides if it ships.

Offline (no CAIRN_CHAT_MODEL) the extractive answerer quotes sentences; with a model configured the
LLM answerer calls any OpenAI-compatible endpoint. Either returns a `Draft`: an AIMessage (text, or
tool calls for the LLM) plus trace details. An answerer never raises for a bad model reply: it returns
an empty draft with the error in `info`, which fails validation and escalates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage

from retrieval.search import Passage


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    language: str
    passages: Sequence[Passage]  # every passage sent this turn, best first
    min_score: float | None
    messages: Sequence[BaseMessage]  # the conversation so far, for answerers that read it
    allow_tools: bool = True


@dataclass(frozen=True)
class Draft:
    message: AIMessage
    info: dict[str, Any] = field(default_factory=dict)


class Answerer(Protocol):
    name: str
    model: str | None
    prompt_version: str | None
    fallback: Answerer | None  # used while an operator pauses the LLM (`cairn pause llm`)

    async def respond(self, request: AnswerRequest) -> Draft: ...


def draft_message(content: str, *, answerer: str, tool_calls: list[dict[str, Any]] | None = None,
                  error: str | None = None) -> AIMessage:
    meta: dict[str, Any] = {"author": "answerer", "answerer": answerer}
    if error:
        meta["error"] = error
    return AIMessage(content=content, tool_calls=tool_calls or [], additional_kwargs={"cairn": meta})


def build_answerer(*, embedder: Any, stored_vectors: Any = None, prepared_vectors: Any = None,
                   chat_model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                   timeout_s: float = 30.0, judge: Any = None) -> Answerer:
    """The LLM answerer when a chat model is configured, the extractive one otherwise. `judge` (the
    answer judge, models/judge): the extractive answerer's gate, and the LLM answerer's evidence
    screen and support check."""
    from graph.answerers.extractive import ExtractiveAnswerer

    extractive = ExtractiveAnswerer(embedder=embedder, stored_vectors=stored_vectors,
                                    prepared_vectors=prepared_vectors, judge=judge)
    if chat_model:
        from graph.answerers.llm import LLMAnswerer

        return LLMAnswerer(model=chat_model, base_url=base_url, api_key=api_key, timeout_s=timeout_s,
                           fallback=extractive, judge=judge, embedder=embedder)
    return extractive
