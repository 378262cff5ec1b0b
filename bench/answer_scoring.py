"""Is the fact asked for in the answer shown? Normalisation and containment for the `answers` section.

Both the answer and each gold answer are brought to one canonical token sequence, then the gold
must appear in the answer as a whole run of tokens (so "$250" is not found inside "$2,500"):

- case, Unicode compatibility forms, Arabic diacritics and letter variants, Arabic-Indic digits;
- amounts: "USD 250" = "$250" = "250 USD" = "250 dollars" = "US$250" (also £/GBP, €/EUR, SAR, AED, …;
  "$500 AUD" is AUD 500), thousands separators dropped ("1,500" = "1500"), "15 %" = "15 percent" = "15%";
- a number's unit is one form: "16-week" = "16 weeks" = "16 week" (days, weeks, months, years, hours,
  minutes, nights), and a number written out with its digits in brackets is the number: "three (3)
  months" = "3 months" (a number written only in words is not: the gold spells what the page spells);
- every other punctuation mark is a space, and citations ("[tenant:doc:v1:0002]") are removed first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_CITATION = re.compile(r"\[[^\[\]\n]*:[^\[\]\n]*\]")
_ARABIC_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹٫٬", "01234567890123456789.,")
_ARABIC_MARKS = re.compile(r"[\u064B-\u0652\u0670\u0640]")
_ARABIC_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه"})
_CODES = ("usd", "gbp", "eur", "aud", "cad", "sgd", "nzd", "chf", "jpy", "inr", "sar", "aed", "qar", "kwd",
          "bhd", "omr", "egp")
_SYMBOLS = {"us$": "usd", "$": "usd", "£": "gbp", "€": "eur", "¥": "jpy", "₹": "inr", "﷼": "sar"}
_WORDS = {"dollar": "usd", "dollars": "usd", "pound": "gbp", "pounds": "gbp", "euro": "eur", "euros": "eur",
          "riyal": "sar", "riyals": "sar", "dirham": "aed", "dirhams": "aed",
          "دولار": "usd", "جنيه": "gbp", "يورو": "eur", "ريال": "sar", "درهم": "aed"}
_CODE = "|".join(_CODES)
_PRE = r"(?P<pre>us\$|\$|£|€|¥|₹|﷼|\b(?:" + _CODE + r"))"
_NUM = r"(?P<num>\d+(?:,\d{3})*(?:\.\d+)?)"
_POST = r"(?P<post>(?:" + _CODE + "|" + "|".join(_WORDS) + r")\b)"
_AMOUNT = re.compile(rf"{_PRE}\s?{_NUM}(?:\s?{_POST})?|{_NUM.replace('num', 'num2')}\s?{_POST.replace('post', 'post2')}",
                     re.IGNORECASE)
_PERCENT = re.compile(r"(\d)\s*(?:%|٪|percent\b|per cent\b)", re.IGNORECASE)
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_TOKEN = re.compile(r"\w+%?|%")
_UNIT = re.compile(r"(?<=\d)[\s-]?(day|week|month|year|hour|minute|night)s?\b")
# "three (3) months", as contracts write it: the number in brackets, so its unit reads as one with it
_SPELT_OUT = re.compile(r"\b(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[ -])?(?:one|two|three|four|"
                        r"five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
                        r"eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)\s*"
                        r"\((\d+)\)", re.IGNORECASE)


def _amount(match: re.Match[str]) -> str:
    pre, num, post = match.group("pre"), match.group("num"), match.group("post")
    if num is None:  # the second alternative: number, then code or word
        num, post = match.group("num2"), match.group("post2")
    code = None
    if post:
        code = _WORDS.get(post.lower(), post.lower())
    if code is None and pre:
        code = _SYMBOLS.get(pre.lower(), pre.lower())
    return f" {code} {num.replace(',', '')} "


def normalise(text: str) -> str:
    """The canonical form both sides are compared in (tokens separated by single spaces)."""
    text = unicodedata.normalize("NFKC", text).translate(_ARABIC_DIGITS)
    text = _CITATION.sub(" ", text)
    text = _ARABIC_MARKS.sub("", text).translate(_ARABIC_LETTERS).lower()
    text = _THOUSANDS.sub("", text)
    text = _SPELT_OUT.sub(r"\1", text)
    text = _AMOUNT.sub(_amount, text)
    text = _PERCENT.sub(r"\1% ", text)
    text = _UNIT.sub(r" \1", text)
    text = _DECIMAL.sub("_", text)  # 0.62 stays one token
    return " ".join(_TOKEN.findall(text))


def contains_fact(answer: str | None, golds: Iterable[str]) -> bool:
    """True when any gold answer occurs in the answer as a whole run of normalised tokens."""
    if not answer:
        return False
    shown = f" {normalise(answer)} "
    for gold in golds:
        want = normalise(gold)
        if want and f" {want} " in shown:
            return True
    return False
