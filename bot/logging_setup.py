"""Structured logs: one JSON object per line, without message text or personal data by default.

    log.info("api.retrieve", extra={"request_id": rid, "service": name, "status": 200, "user": uid})
→   {"ts": "…", "level": "INFO", "logger": "bot.http.retrieve", "event": "api.retrieve", "request_id": "…",
     "service": "helpdesk", "status": 200, "user": "u:3f9a0c1d2e4b"}

Content fields (`text`, `question`, `query`, `answer`, …) are dropped and identity fields (`user`,
`user_id`, `email`, …) are replaced by a salted hash (stable within the process, so one user's
lines can still be followed) unless CAIRN_LOG_CONTENT=true.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import sys
from datetime import UTC, datetime
from typing import IO

CONTENT_FIELDS = frozenset({"text", "question", "query", "answer", "transcript", "prompt", "reply",
                            "passages", "content", "messages"})
IDENTITY_FIELDS = frozenset({"user", "user_id", "display_name", "email", "slack_user", "admin_id", "sub"})
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


def record_fields(record: logging.LogRecord) -> dict[str, object]:
    """The `extra={…}` fields a record carries."""
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class RedactFilter(logging.Filter):
    """Drops content fields and hashes identity fields, unless `log_content`."""

    def __init__(self, *, log_content: bool = False, salt: bytes | None = None) -> None:
        super().__init__()
        self.log_content = log_content
        self._salt = salt or secrets.token_bytes(16)

    def pseudonym(self, value: object) -> str:
        digest = hashlib.sha256(self._salt + str(value).encode("utf-8", "replace")).hexdigest()
        return "u:" + digest[:12]

    def filter(self, record: logging.LogRecord) -> bool:
        if self.log_content:
            return True
        for key in record_fields(record):
            if key in CONTENT_FIELDS:
                delattr(record, key)
            elif key in IDENTITY_FIELDS and getattr(record, key) is not None:
                setattr(record, key, self.pseudonym(getattr(record, key)))
        return True


class JsonFormatter(logging.Formatter):
    """ts, level, logger, event (the message), the record's extra fields, and the exception type."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name, "event": record.getMessage(),
        }
        for key, value in record_fields(record).items():
            out.setdefault(key, value)
        if record.exc_info and record.exc_info[0] is not None:
            out["error"] = record.exc_info[0].__name__
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure_logging(*, log_content: bool = False, level: int = logging.INFO,
                      stream: IO[str] | None = None) -> logging.Handler:
    """Replace the root handlers with one JSON-lines handler on `stream` (stderr by default).

    Called once by the long-running entry point (`cairn serve`, at its start); other CLI commands keep
    plain text on stderr.
    """
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    # The filter sits on the handler, so records from every logger pass through it.
    handler.addFilter(RedactFilter(log_content=log_content))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
