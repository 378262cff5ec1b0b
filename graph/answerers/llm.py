"""The LLM answerer: any OpenAI-compatible chat-completions endpoint, with tool calling.

Design choices (documented in the README's answering section):

- The first search of a turn is issued by graph logic, not by the model: the agent node answers a new
  user message with its own `search_policies` call, and the model first sees the conversation with
  that call and its evidence already in place. So retrieval always runs, whatever the model would do.
- The model may then answer, search again (`search_policies`), or hand off (`escalate_to_human`).
  After `max_tool_rounds` searches the model is called with tool_choice "none".
- Any failure — timeout, HTTP error, no choices, no content, malformed tool arguments, an unknown
  tool — yields an empty draft (with the error in the trace). The empty draft fails validation and
  the turn escalates with `answer_validation_failed`. There is no silent fallback to the extractive
  answerer: a person sees every question the configured model could not answer.
- Prior turns reach the model as plain user/assistant text (their tool traffic is dropped); the
  current turn keeps its tool calls and results, so ids pair up as the API requires.
- With the answer judge (models/judge), the model is sent only the passages the judge reads as
  evidence for the question (`screened`, used by the tools node), and each factual sentence of its
  draft must be supported by a sentence of a chunk it cites (`support_check`, used by the validate
  node); graph/answerers/judging.py reads both.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from openai import AsyncOpenAI

from graph.answerers import Answerer, AnswerRequest, Draft, draft_message
from graph.answerers.judging import ClaimSupport, EvidenceScreen, screen_evidence
from graph.prompts import PROMPT_VERSION, TOOLS, system_prompt
from models.judge import Judge
from retrieval.search import Passage

log = logging.getLogger(__name__)

TOOL_NAMES = {"search_policies": "query", "escalate_to_human": "reason"}
MAX_PRIOR_MESSAGES = 8


# A draft longer than this is not one to read in Slack; a model that does not stop is cut here.
MAX_TOKENS = 700


class LLMError(Exception):
    pass


class LLMAnswerer:
    name = "llm"

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None, timeout_s: float,
                 client: AsyncOpenAI | None = None, fallback: Answerer | None = None,
                 judge: Judge | None = None, embedder: Any = None) -> None:
        self.model: str | None = model
        self.fallback = fallback
        self.judge = judge
        self.embedder = embedder  # for the judge's multilingual pairs
        self.prompt_version: str | None = PROMPT_VERSION
        self.timeout_s = timeout_s
        self.client = client or AsyncOpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout_s,
                                            max_retries=1)

    async def respond(self, request: AnswerRequest) -> Draft:
        messages = to_openai(request.messages, system_prompt(request.language))
        try:
            # One deadline for the call, its retry included (the retry is for a quick failure: a
            # refused connection, a 5xx), and a cap on what the model may write.
            response = await asyncio.wait_for(self.client.chat.completions.create(  # type: ignore[call-overload]
                model=str(self.model), messages=messages, tools=TOOLS,
                tool_choice="auto" if request.allow_tools else "none", temperature=0, max_tokens=MAX_TOKENS),
                timeout=self.timeout_s)
            message = _parse(response, allow_tools=request.allow_tools)
        except Exception as exc:  # any failure of the model is a failed draft, never a crash
            error = f"{type(exc).__name__}: {exc}"[:300]
            log.warning("LLM answerer failed: %s", error)
            return Draft(draft_message("", answerer=self.name, error=error),
                         {"error": error, "model": self.model})
        usage = getattr(response, "usage", None)
        info: dict[str, Any] = {"model": self.model, "finish_reason": response.choices[0].finish_reason}
        if usage is not None:
            info["tokens"] = {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}
        if message.tool_calls:
            info["tool_calls"] = [c["name"] for c in message.tool_calls]
        return Draft(message, info)

    async def screened(self, question: str, passages: Sequence[Passage],
                       known: Mapping[str, float] | None = None) -> EvidenceScreen | None:
        """The passages the judge reads as evidence for the question (and those it leaves out), or
        None without a judge. `known`: chunk id → a probability the gate already read for it."""
        if self.judge is None or not passages:
            return None
        return await screen_evidence(self.judge, self.embedder, question, passages, known=known)

    def support_check(self, passages: Sequence[Passage]) -> ClaimSupport | None:
        """The validator's support check over the passages sent this turn, or None without a judge."""
        return ClaimSupport(self.judge, self.embedder, passages) if self.judge is not None else None


def _parse(response: Any, *, allow_tools: bool) -> AIMessage:
    if not getattr(response, "choices", None):
        raise LLMError("no choices in the response")
    msg = response.choices[0].message
    calls = []
    for call in msg.tool_calls or []:
        name = getattr(getattr(call, "function", None), "name", None)
        if not allow_tools:
            raise LLMError("tool call after tools were switched off")
        if name not in TOOL_NAMES:
            raise LLMError(f"unknown tool {name!r}")
        try:
            args = json.loads(call.function.arguments or "")
        except (json.JSONDecodeError, TypeError) as exc:
            raise LLMError(f"malformed arguments for {name}") from exc
        key = TOOL_NAMES[name]
        if not isinstance(args, dict) or not isinstance(args.get(key), str) or not args[key].strip():
            raise LLMError(f"malformed arguments for {name}: {key} missing")
        calls.append({"name": name, "args": {key: args[key].strip()}, "id": call.id, "type": "tool_call"})
    if calls:
        return draft_message(msg.content or "", answerer="llm", tool_calls=calls)
    if not isinstance(msg.content, str) or not msg.content.strip():
        raise LLMError("no content in the response")
    return draft_message(msg.content.strip(), answerer="llm")


def to_openai(messages: Sequence[BaseMessage], system: str) -> list[dict[str, Any]]:
    """Earlier turns as text only; the current turn (from the last user message) in full."""
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
    prior: list[dict[str, Any]] = []
    current: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        text = m.content if isinstance(m.content, str) else str(m.text)
        if i < last_user:
            if isinstance(m, HumanMessage):
                prior.append({"role": "user", "content": text})
            elif isinstance(m, AIMessage) and not m.tool_calls and text:
                prior.append({"role": "assistant", "content": text})
            continue
        if isinstance(m, HumanMessage):
            current.append({"role": "user", "content": text})
        elif isinstance(m, AIMessage) and m.tool_calls:
            current.append({"role": "assistant", "content": text or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)}}
                for c in m.tool_calls]})
        elif isinstance(m, AIMessage) and text:
            current.append({"role": "assistant", "content": text})
        elif isinstance(m, ToolMessage):
            current.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": text})
    return [{"role": "system", "content": system}, *prior[-MAX_PRIOR_MESSAGES:], *current]
