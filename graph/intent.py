"""Graph logic, not model judgement: does a new message ask for a person?

Deliberately narrow, because a false positive skips the documents: "agent" alone in "Can a travel
agent book my hotel?" is not a request; "talk to an agent", "connect me", "human please" are. So is
asking for a person to call back ("I need someone from HR to call me") when the subject is a person
the asker wants, not a policy about who calls ("Will HR call me about my leave?", "Can my manager
call me on holiday?" are questions), and refusing the bot itself ("not a bot").
"""

from __future__ import annotations

import re

_EN = re.compile(
    r"\b(?:talk|speak|chat)\s+(?:to|with)\s+(?:a|an|the|some|someone|somebody|real|live|human|person|agent|"
    r"representative|staff|manager|people)\b|"
    # "need to talk to my hr business partner": the asker's own HR contact ("do I need to talk to …"
    # asks about a rule)
    r"(?<!\bdo i )(?<!\bdo we )(?<!should i )(?<!must i )\b(?:need|want|would like|'d like)\s+to\s+(?:talk|speak|chat)"
    r"\s+(?:to|with)\s+(?:my|our)\s+(?:\w+\s+){0,2}(?:partner|hrbp|rep|representative|advisor|adviser)\b|"
    r"\b(?:connect|transfer|put)\s+(?:me|this|it|my question)\b|\bescalate\s+(?:me|this|it|my question)\b|"
    # "forward it" is what one does with a phishing email; forwarding the question to a person is a request
    r"\b(?:forward|hand|pass)\s+(?:me|this|it|my question)\s+(?:on\s+|over\s+)?to\s+(?:a|an|someone|somebody|"
    r"a person|a human|hr|people ops|support|the team|your team|a manager)\b|"
    r"\b(?:real|live|actual)\s+(?:person|human|agent|people)\b|"
    r"\b(?:human|person|agent|representative)\s+please\b|"
    r"\b(?:want|need|get|like)\s+(?:to\s+\w+\s+)?(?:a|an)\s+(?:human|person|agent|representative)\b|"
    # a call back from a person: "I need someone from HR to call me", "can somebody phone me"
    r"\b(?:need|want|would like|'d like|\bcan|could|please\s+(?:have|get))\s+(?:someone|somebody|a person|a human|"
    r"a real person|an actual person)\b[\w\s,'-]{0,30}?\b(?:to\s+)?(?:call|phone|ring|contact|reach|get back to|"
    r"dm|message|ping|text|email|e-mail|slack)\s+me\b|"
    r"\b(?:need|want|would like|'d like)\s+(?:hr|my manager|a manager|people ops)\s+to\s+(?:call|phone|ring|contact)"
    r"\s+me\b|"
    r"\bnot\s+(?:a|an|the|this|some)\s+(?:bot|robot|chatbot|machine)\b|\b(?:no|stop the)\s+(?:bots?|chatbot)\b",
    re.IGNORECASE)
_EN_SHORT = re.compile(r"^\W*(?:a\s+)?(?:human|person|agent|representative|operator)\W*$", re.IGNORECASE)
_AR_VERBS = r"(?:التحدث|أتحدث|اتحدث|التكلم|أتكلم|اتكلم|التواصل|أتواصل|اتواصل|كلمني|حولني|حوّلني|وصلني|وصّلني|تحويلي)"
_AR_WANT = r"(?:أريد|اريد|أبغى|ابغى|أبي|ابي|أحتاج|احتاج|ممكن|هل يمكن|أرجو|ارجو)"
_AR_PEOPLE = r"(?:شخص|موظف|إنسان|انسان|بشري|مسؤول|مندوب|أحد الموظفين|خدمة العملاء)"
_AR_SOMEONE = r"(?:أحد|احد|حد|شخص|موظف)"
_AR_BOT = r"(?:روبوت|الروبوت|بوت|البوت)\b"
_AR_CALL = r"(?:يتصل بي|يتصل علي|يتصل عليّ|يتصل فيني|يتصل فيّ|يكلمني|يتواصل معي|يرد علي|يرد عليّ|يراسلني)"
_AR = re.compile(_AR_VERBS + r".{0,20}?" + _AR_PEOPLE + "|" + _AR_WANT + r"\s+(?:ال)?" + _AR_PEOPLE + "|"
                 + _AR_WANT + r".{0,40}?" + _AR_CALL + "|" + _AR_SOMEONE + r"\s.{0,40}?" + _AR_CALL + "|"
                 + r"(?:^|\s)(?:و?ليس|مش|مو|لا\s+(?:أريد|اريد)(?:\s+\S+){0,2}?)\s+(?:مع\s+|إلى\s+)?" + _AR_BOT)
_AR_SHORT = re.compile(r"^\W*" + _AR_PEOPLE + r"\W*(?:من فضلك|لو سمحت)?\W*$")


def wants_human(text: str) -> bool:
    text = text.strip()
    return bool(_EN.search(text) or _EN_SHORT.match(text) or _AR.search(text) or _AR_SHORT.match(text))
