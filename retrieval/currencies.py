"""Currencies, one list for every reader of amounts: the conflict check (retrieval/conflicts.py) and the
figure check of answers (graph/facts.py).

An amount is a number with a currency before it (a code, a symbol: "USD 250", "$250", "US$250") or
after it (a code or a word: "250 USD", "250 dollars", "250 درهم"); `AMOUNT` finds both shapes and
`currency_of` names the currency as a lower-case code, "$" for a bare dollar sign (any dollar).
"""

from __future__ import annotations

import re

CODES = ("usd", "gbp", "eur", "aud", "cad", "sgd", "nzd", "hkd", "chf", "jpy", "inr", "sar", "aed", "qar", "kwd",
         "bhd", "omr", "egp", "cny", "sek", "nok", "dkk", "pln", "brl", "mxn", "zar")
DOLLARS = frozenset({"usd", "aud", "cad", "sgd", "nzd", "hkd", "$"})
SYMBOLS = {"us$": "usd", "a$": "aud", "c$": "cad", "s$": "sgd", "$": "$", "£": "gbp", "€": "eur", "¥": "jpy",
           "₹": "inr", "﷼": "sar"}
WORDS = {"us dollars": "usd", "us dollar": "usd", "dollars": "$", "dollar": "$", "pounds": "gbp", "pound": "gbp",
         "euros": "eur", "euro": "eur", "riyals": "sar", "riyal": "sar", "dirhams": "aed", "dirham": "aed",
         "دولارات": "$", "دولار": "$", "جنيهات": "gbp", "جنيه": "gbp", "يورو": "eur", "ريالات": "sar", "ريال": "sar",
         "دراهم": "aed", "درهم": "aed", "دنانير": "dinar", "دينار": "dinar"}
CODE = "|".join(CODES)
NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
PRE = r"(?P<pre>us\$|a\$|c\$|s\$|\$|£|€|¥|₹|﷼|\b(?:" + CODE + r")\b)"
POST_WORDS = "|".join(sorted(WORDS, key=len, reverse=True))
AMOUNT = re.compile(
    rf"{PRE}\s?(?P<num>{NUM})(?:\s?(?P<post>(?:{CODE})\b))?|"
    rf"(?P<num2>{NUM})\s?(?P<post2>(?:{CODE}|{POST_WORDS})(?![^\W\d_]))", re.IGNORECASE)
CURRENCY = re.compile(rf"us\$|a\$|c\$|s\$|[$£€¥₹﷼]|\b(?:{CODE})\b|(?<![^\W\d_])(?:{POST_WORDS})(?![^\W\d_])",
                      re.IGNORECASE)


def currency_of(match: re.Match[str]) -> str:
    """The currency of an `AMOUNT` match: a code ("usd", "cad"), or "$" for a dollar of no named country."""
    post, pre = match.group("post") or match.group("post2"), match.group("pre")
    unit = WORDS.get(post.lower(), post.lower()) if post else None
    if unit in (None, "$") and pre:
        unit = SYMBOLS.get(pre.lower(), pre.lower())
    return unit or "$"


def amount_value(match: re.Match[str]) -> str:
    """The number of an `AMOUNT` match, as written."""
    return match.group("num") or match.group("num2")
