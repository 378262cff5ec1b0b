"""Text and JSON from outside — a Slack event, an API body, a signed claim, an eval file, the console —
made safe once, where it enters.

* Text: a lone surrogate (U+D800–U+DFFF, which JSON's `\\ud800` escape, copy and paste and an argv of
  invalid bytes all produce in Python) is replaced by U+FFFD, as is every invalid UTF-8 byte; such a
  string could not be written to SQLite, a log line or an HTTP body later, far from where it came in.
* JSON: nesting deeper than MAX_DEPTH is refused before it is parsed (the parser would recurse until
  RecursionError); integers beyond ±2^53 (MAX_INT) and non-finite numbers (NaN, Infinity, 1e400) are
  refused (a date or a count that big means nothing, and converting it to a float or a date raises).

`UntrustedInput` (a ValueError) says what was wrong, in words a caller can show.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable

MAX_DEPTH = 64
MAX_INT = 2**53
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class UntrustedInput(ValueError):
    """The input cannot be taken as it is; str(e) says why."""


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a valid surrogate pair becomes its character)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def decode(data: bytes) -> str:
    """UTF-8 bytes as text, each invalid byte replaced by U+FFFD."""
    return data.decode("utf-8", "replace")


def clean(value: object) -> object:
    """A parsed JSON value with clean_text applied to every string, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v) for v in value]
    return value


def nesting_depth(text: str) -> int:
    """How deep the arrays and objects of JSON text nest (strings skipped); no parse, no recursion."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub('""', text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


def depth_problem(text: str, max_depth: int = MAX_DEPTH) -> str | None:
    depth = nesting_depth(text)
    return f"JSON nested {depth} levels deep, more than {max_depth}" if depth > max_depth else None


def _int(token: str) -> int:
    if len(token.lstrip("-")) > 16 or abs(value := int(token)) > MAX_INT:
        raise UntrustedInput(f"a number too large ({token[:20]}…); numbers are at most 2^53")
    return value


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise UntrustedInput(f"a number out of range ({token[:20]}); numbers must be finite")
    return value


def _constant(token: str) -> float:
    raise UntrustedInput(f"{token} is not a number JSON allows")


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH,
          object_hook: Callable[[dict[str, object]], object] | None = None) -> object:
    """Parse untrusted JSON: invalid UTF-8 and lone surrogates replaced, depth and numbers bounded.

    Raises UntrustedInput for nesting or numbers out of bounds and json.JSONDecodeError (also a
    ValueError) for text that is not JSON."""
    if isinstance(text, bytes):
        text = decode(text)
    problem = depth_problem(text, max_depth)
    if problem:
        raise UntrustedInput(problem)
    value = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant,
                       object_hook=object_hook)
    return clean(value)


def number_in_range(value: object) -> bool:
    """A JSON number a date or a count may be: int or finite float, within ±2^53, never a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    return math.isfinite(value) and abs(value) <= MAX_INT
