"""Graph logic, not model judgement: does a new message ask for a person?

Deliberately narrow, because a false positive skips the documents: "agent" alone in "Can a travel
agent book my hotel?" is not a request; "talk to an agent", "connect me", "human please" are.
"""

from __future__ import annotations

import re

_EN = re.compile(
    r"\b(?:talk|speak|chat)\s+(?:to|with)\s+(?:a|an|the|some|someone|somebody|real|live|human|person|agent|"
    r"representative|staff|manager|people)\b|"
    r"\b(?:connect|transfer|put|escalate|forward|hand)\s+(?:me|this|it|my question)\b|"
    r"\b(?:real|live|actual)\s+(?:person|human|agent|people)\b|"
    r"\b(?:human|person|agent|representative)\s+please\b|"
    r"\b(?:want|need|get|like)\s+(?:to\s+\w+\s+)?(?:a|an)\s+(?:human|person|agent|representative)\b",
    re.IGNORECASE)
_EN_SHORT = re.compile(r"^\W*(?:a\s+)?(?:human|person|agent|representative|operator)\W*$", re.IGNORECASE)
_AR_VERBS = r"(?:التحدث|أتحدث|اتحدث|التكلم|أتكلم|اتكلم|التواصل|أتواصل|اتواصل|كلمني|حولني|حوّلني|وصلني|وصّلني|تحويلي)"
_AR_WANT = r"(?:أريد|اريد|أبغى|ابغى|أبي|ابي|أحتاج|احتاج)"
_AR_PEOPLE = r"(?:شخص|موظف|إنسان|انسان|بشري|مسؤول|مندوب|أحد الموظفين|خدمة العملاء)"
_AR = re.compile(_AR_VERBS + r".{0,20}?" + _AR_PEOPLE + "|" + _AR_WANT + r"\s+(?:ال)?" + _AR_PEOPLE)
_AR_SHORT = re.compile(r"^\W*" + _AR_PEOPLE + r"\W*(?:من فضلك|لو سمحت)?\W*$")


def wants_human(text: str) -> bool:
    text = text.strip()
    return bool(_EN.search(text) or _EN_SHORT.match(text) or _AR.search(text) or _AR_SHORT.match(text))
