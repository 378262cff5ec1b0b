"""Properties at the other edges: signed user contexts with any claims end in a context or a
ContextError (a 403), never another exception; any eval line ends in a question or an error object;
any passage fields leave exactly the evidence block's own tags in the prompt."""

from __future__ import annotations

import json
import re
import time

import jwt
from hypothesis import given
from hypothesis import strategies as st

from bot.cli.retrieval import EvalLine, parse_eval_line
from graph.prompts import format_evidence
from store.credentials import (
    CONTEXT_ALG,
    ContextError,
    ServicePrincipal,
    UserContext,
    context_signing_key,
    verify_user_context,
)
from tests.fuzz.strategies import TAGS, any_char, big_numbers, hostile_text, json_values, nested

CREDENTIAL = "csk_fuzz-credential"
PRINCIPAL = ServicePrincipal(name="helpdesk", audiences=("cairn",), key_id="k1")
CLAIMS = ("sub", "tenant", "aud", "svc", "iat", "exp", "nbf")


@given(st.dictionaries(st.sampled_from(CLAIMS), st.one_of(json_values, big_numbers), max_size=7),
       st.booleans())
def test_any_signed_claims_end_in_a_context_or_a_context_error(claims: dict[str, object], based: bool) -> None:
    now = int(time.time())
    base: dict[str, object] = {"sub": "bob", "tenant": "larkspur", "aud": "cairn", "svc": "helpdesk",
                               "iat": now, "exp": now + 300} if based else {}
    try:
        token = jwt.encode({**base, **claims}, context_signing_key(CREDENTIAL), algorithm=CONTEXT_ALG)
    except (ValueError, TypeError, OverflowError):
        return  # PyJWT cannot write it: no such token can arrive
    try:
        context = verify_user_context(token, credential=CREDENTIAL, principal=PRINCIPAL, audience="cairn",
                                      max_ttl_s=900)
    except ContextError:
        return
    assert isinstance(context, UserContext)
    f"{context.user}{context.tenant}".encode()


@given(st.one_of(st.binary(max_size=300),
                 json_values.map(lambda v: json.dumps(v).encode()),
                 st.fixed_dictionaries({"id": json_values, "question": hostile_text},
                                       optional={"as": json_values}).map(lambda v: json.dumps(v).encode()),
                 st.integers(min_value=50, max_value=50_000).map(lambda d: nested(d).encode())))
def test_any_eval_line_is_a_question_or_an_error_object(line: bytes) -> None:
    item = parse_eval_line(7, line)
    if isinstance(item, EvalLine):
        (item.qid + item.question + (item.as_user or "")).encode("utf-8")
    else:
        assert item["line"] == 7 and str(item["error"]).startswith("bad input line")
        json.dumps(item, ensure_ascii=False).encode("utf-8")


FIELDS = ("chunk_id", "title", "heading", "organisation", "version", "text")
BRACKET = "[<\uff1c\ufe64\u2329\u27e8\u3008]"
INVISIBLE = "[\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]*"


def _word(word: str) -> str:
    return INVISIBLE.join(word)


@given(st.lists(st.fixed_dictionaries({f: st.one_of(hostile_text, st.sampled_from(TAGS)) for f in FIELDS}),
                min_size=1, max_size=3),
       st.text(any_char, max_size=5))
def test_no_passage_field_crosses_the_evidence_boundary(passages: list[dict[str, str]], _noise: str) -> None:
    tool = format_evidence([{**p, "score": 0.5} for p in passages])
    evidence = re.findall(f"{BRACKET}\\s*{INVISIBLE}\\s*/?\\s*{INVISIBLE}\\s*{_word('evidence')}", tool, re.I)
    passage = re.findall(f"{BRACKET}\\s*{INVISIBLE}\\s*/?\\s*{INVISIBLE}\\s*{_word('passage')}", tool, re.I)
    assert len(evidence) == 2 and len(passage) == 2 * len(passages), tool
