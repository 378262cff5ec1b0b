"""A real local HTTP server on 127.0.0.1 speaking the OpenAI chat-completions API, with scripted
replies, for the LLM answerer's tests (through the real `openai` client).

It runs `http.server` in a thread, so it does not care which event loop a test runs in, and a
scripted delay really blocks the reply (the client's timeout fires).

    with FakeOpenAI([cited_answer(), fabrication()]) as fake:   # each request takes the next reply
        settings = ...OPENAI_BASE_URL=fake.base_url...           # the last reply repeats
        fake.requests[-1]["messages"]                            # what the client sent
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PASSAGE_ID = re.compile(r'<passage id="([^"]+)"')


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    delay_s: float = 0.0
    raw_arguments: str | None = None  # send this string as the arguments of the first tool call


Script = Callable[[dict[str, Any]], Reply]


def sent_ids(request: dict[str, Any]) -> list[str]:
    """Passage ids the client sent in tool results, in order."""
    ids: list[str] = []
    for message in request.get("messages", []):
        if message.get("role") == "tool":
            ids.extend(_PASSAGE_ID.findall(message.get("content") or ""))
    return ids


def cited_answer(template: str = "The nightly hotel limit in London is GBP 210 [{id}].") -> Script:
    """A good answer: cites the first passage the client actually sent."""
    return lambda request: Reply(content=template.format(id=sent_ids(request)[0]))


def text(content: str) -> Script:
    return lambda request: Reply(content=content)


def fabrication() -> Script:
    return text("The nightly hotel limit in London is GBP 450. Spa visits are always reimbursed.")


def unsent_citation() -> Script:
    return text("The nightly hotel limit in London is GBP 210 [larkspur:finance/travel:v9:0001].")


def tool_call(name: str, **args: str) -> Script:
    return lambda request: Reply(tool_calls=[{"name": name, "arguments": json.dumps(args)}])


def malformed_tool_call(name: str = "search_policies") -> Script:
    return lambda request: Reply(tool_calls=[{"name": name, "arguments": "{query: not json"}])


def slow(seconds: float) -> Script:
    return lambda request: Reply(content="too late", delay_s=seconds)


def http_error(status: int = 500) -> Script:
    return lambda request: Reply(status=status)


def empty() -> Script:
    return lambda request: Reply(content="")


class FakeOpenAI:
    def __init__(self, script: list[Script] | None = None) -> None:
        self.script: list[Script] = list(script or [text("hello")])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            script = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return script(request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                reply = fake._next(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": "scripted failure", "type": "server_error"}})
                    return
                calls = [{"id": f"call_fake_{i}", "type": "function",
                          "function": {"name": c["name"],
                                       "arguments": reply.raw_arguments if reply.raw_arguments else c["arguments"]}}
                         for i, c in enumerate(reply.tool_calls)]
                message: dict[str, Any] = {"role": "assistant", "content": reply.content}
                if calls:
                    message["tool_calls"] = calls
                self._send(200, {
                    "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "fake"),
                    "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop", "message": message}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        return Handler
