"""The figures a sentence states — numbers, amounts, percentages, dates — in one normal form, so a
draft's figure can be looked up in the passages it cites (graph/validate.py).

Normal form, the same for the draft and the passage:

- Arabic-Indic and Extended Arabic-Indic digits are Western digits; "١٬٥٠٠" = "1,500" = "1500";
- an amount is (value, currency): "USD 250" = "$250" = "250 USD" = "250 dollars" = "US$250";
  "£" = GBP, "€" = EUR, Arabic currency words too. A bare "$" is any dollar ("$500 AUD" is AUD 500,
  and a passage's "$500" supports a draft's "USD 500" or "AUD 500"); GBP is never USD;
- a percentage is (value, "%"): "15 %" = "15%" = "15 percent" = "15 per cent" = "15٪";
- a date is ISO-like: "1 March 2026" = "March 1, 2026" = "2026-03-01" = "١ مارس ٢٠٢٦"; "1 March" and "March 2026"
  are partial dates, supported by a full date with the same day and month (or month and year);
- times keep their shape ("09:00" = "9:00"); any other number is its value ("08" = "8"); number
  words are numbers ("thirty" = 30, "twenty-five" = 25, "nine thousand" = 9000; Arabic "عشرة" = 10,
  "خمسة عشر" = 15, "خمسة وعشرون" = 25, "ثلاثة آلاف" = 3000).

A passage supports a draft's figure when it states the same figure; a bare number is also supported
by the same value inside any of the passage's amounts, percentages or dates (the year of a date,
the value of an amount). A unit in the draft must be the passage's unit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field

from retrieval.currencies import AMOUNT, CURRENCY, DOLLARS, NUM, SYMBOLS, WORDS, amount_value, currency_of

# Arabic-Indic and Extended Arabic-Indic digits and the Arabic decimal, thousands and percent signs.
ARABIC_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹٫٬٪", "01234567890123456789.,%")
# An amount's first digit is at most 4 characters into it: a 3-character prefix ("US$", "USD") and a space.
_AMOUNT_LEAD = 4
_DIGIT = re.compile(r"\d")
_PERCENT = re.compile(rf"(?P<num>{NUM})\s?(?:%|percent\b|per cent\b|في المائة|بالمائة)", re.IGNORECASE)
_MONTHS = {m: i for i, names in enumerate([
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")], start=1) for m in names} | {m: i for i, names in enumerate([
        ("يناير",), ("فبراير",), ("مارس",), ("أبريل", "ابريل", "إبريل"), ("مايو",), ("يونيو", "يونيه"),
        ("يوليو", "يوليه"), ("أغسطس", "اغسطس"), ("سبتمبر",), ("أكتوبر", "اكتوبر"), ("نوفمبر",), ("ديسمبر",)],
        start=1) for m in names}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_ORD = r"(?:st|nd|rd|th)?"
_DATES = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4})\b"),
    re.compile(r"\b(?P<d>\d{1,2})" + _ORD + r"\s+(?:of\s+)?" + _MONTH.format("mon") + r"(?:,?\s+(?P<y>\d{4}))?\b",
               re.IGNORECASE),
    re.compile(r"\b" + _MONTH.format("mon") + r"\s+(?P<d>\d{1,2})" + _ORD + r"(?:,?\s+(?P<y>\d{4}))?\b(?!:)",
               re.IGNORECASE),
    re.compile(r"\b" + _MONTH.format("mon") + r",?\s+(?P<y>\d{4})\b", re.IGNORECASE),
]
_TIME = re.compile(r"\b(?P<h>\d{1,2}):(?P<min>\d{2})\b")
_NUMBER = re.compile(NUM)
# Number words up to nineteen.
NUMBER_UNITS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * n for n, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if n > 1}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORD = "|".join([*NUMBER_UNITS, *_TENS, *_SCALES])
_NUMBER_WORDS = re.compile(rf"\b(?:{_NUMBER_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_NUMBER_WORD}))*\b", re.IGNORECASE)


_AR_UNITS = {"واحد": 1, "واحدة": 1, "اثنان": 2, "اثنين": 2, "اثنتان": 2, "اثنتين": 2, "ثلاث": 3, "ثلاثة": 3,
             "أربع": 4, "اربع": 4, "أربعة": 4, "اربعة": 4, "خمس": 5, "خمسة": 5, "ست": 6, "ستة": 6, "سبع": 7,
             "سبعة": 7, "ثمان": 8, "ثماني": 8, "ثمانية": 8, "تسع": 9, "تسعة": 9, "عشر": 10, "عشرة": 10}
_AR_TENS = {w: 10 * n for n, stem in enumerate(["", "", "عشر", "ثلاث", "أربع", "خمس", "ست", "سبع", "ثمان", "تسع"])
            if n > 1 for w in (stem + "ون", stem + "ين")} | {"اربعون": 40, "اربعين": 40}
_AR_HUNDREDS = {"مائة": 100, "مئة": 100, "مائتان": 200, "مائتين": 200, "مئتان": 200, "مئتين": 200}
_AR_THOUSANDS = {"ألف": 1000, "الف": 1000, "آلاف": 1000, "الاف": 1000, "ألفان": 2000, "ألفين": 2000, "مليون": 10**6}
_AR_WORD = re.compile(r"[\u0621-\u064A\u0670-\u06D3]+")


def _arabic_number(word: str) -> str | None:
    """The number word itself, without a leading و / ب / ل ("وعشرون", "بخمسة"), or None."""
    for candidate in (word, word[1:] if word[:1] in "وبل" else ""):
        if candidate and (candidate in _AR_UNITS or candidate in _AR_TENS or candidate in _AR_HUNDREDS
                          or candidate in _AR_THOUSANDS):
            return candidate
    return None


def _arabic_numbers(text: str) -> list[int]:
    """Values of the runs of Arabic number words in `text` ("خمسة عشر" → 15; "واحدة" alone is not a figure)."""
    out: list[int] = []
    words = [(m.group(), _arabic_number(m.group())) for m in _AR_WORD.finditer(text)]
    i = 0
    while i < len(words):
        if words[i][1] is None:
            i += 1
            continue
        total = current = 0
        run: list[str] = []
        while i < len(words) and words[i][1] is not None:
            w = words[i][1]
            assert w is not None
            run.append(w)
            if w in ("عشر", "عشرة") and 0 < current < 10:
                current += 10  # خمسة عشر
            elif w in _AR_UNITS or w in _AR_TENS:
                current += _AR_UNITS.get(w) or _AR_TENS[w]
            elif w in _AR_HUNDREDS:
                current = max(current, 1) * _AR_HUNDREDS[w] if w in ("مائة", "مئة") else current + _AR_HUNDREDS[w]
            else:
                total += max(current, 1) * _AR_THOUSANDS[w] if w not in ("ألفان", "ألفين") else _AR_THOUSANDS[w]
                current = 0
            i += 1
        if run not in (["واحد"], ["واحدة"]):
            out.append(total + current)
    return out


@dataclass
class Facts:
    """What a text states: figures with their kind (what a draft must match) and every value that
    appears anywhere in it (what a bare number of a draft may match)."""

    figures: set[tuple[str, str]] = field(default_factory=set)  # (kind or unit, value)
    values: set[str] = field(default_factory=set)
    currencies: set[str] = field(default_factory=set)  # every currency named anywhere (a table header's too)

    def __bool__(self) -> bool:
        return bool(self.figures)

    def add(self, other: Facts) -> None:
        """Take in what `other` states too (the cited passages of one sentence, together)."""
        self.figures |= other.figures
        self.values |= other.values
        self.currencies |= other.currencies


def _value(raw: str) -> str:
    """1,500 → 1500; 08 → 8; 0.50 → 0.5; a malformed group is kept as written."""
    text = raw.replace(",", "")
    try:
        if "." in text:
            whole, _, frac = text.partition(".")
            frac = frac.rstrip("0")
            return f"{int(whole)}.{frac}" if frac else str(int(whole))
        return str(int(text))
    except ValueError:
        return raw


def _words_value(words: str) -> int | None:
    total = current = 0
    seen = False
    for w in re.split(r"[\s-]+", words.lower()):
        if w == "and" or not w:
            continue
        seen = True
        if w in NUMBER_UNITS:
            current += NUMBER_UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _SCALES[w]
            current = 0
    return total + current if seen else None


def prepare(text: str) -> str:
    return unicodedata.normalize("NFKC", text).translate(ARABIC_DIGITS)


def facts_in(text: str, *, partial_dates: bool = False) -> Facts:
    """Figures stated in `text`. `partial_dates`: also record each full date's day-month and
    month-year (a passage, so that "1 March" in a draft finds "1 March 2026")."""
    facts = Facts()
    s = prepare(text)
    for m in CURRENCY.finditer(s):
        word = m.group().lower()
        facts.currencies.add(WORDS.get(word) or SYMBOLS.get(word) or word)
    spans: list[tuple[int, int]] = []

    def taken(m: re.Match[str]) -> bool:
        return any(m.start() < b and a < m.end() for a, b in spans)

    for pattern in _DATES:
        for m in pattern.finditer(s):
            if taken(m):
                continue
            g = m.groupdict()
            if g.get("mon") == "may":  # the verb, not the month ("up to 3 may be carried over")
                continue
            month = _MONTHS[g["mon"].lower().rstrip(".")] if g.get("mon") else int(g["m"])
            if not 1 <= month <= 12:
                continue
            day = int(g["d"]) if g.get("d") else None
            year = int(g["y"]) if g.get("y") else None
            if day is not None and not 1 <= day <= 31:
                continue
            spans.append(m.span())
            parts = {"y": year, "m": month, "d": day}
            facts.figures.add(("date", _date(parts)))
            if partial_dates and year and day:
                facts.figures.update({("date", _date({**parts, "y": None})), ("date", _date({**parts, "d": None}))})
            facts.values.update(str(v) for v in (year, day) if v)
    for m in _TIME.finditer(s):
        if taken(m):
            continue
        spans.append(m.span())
        facts.figures.add(("time", f"{int(m['h'])}:{m['min']}"))
        facts.values.update({str(int(m["h"])), str(int(m["min"]))})
    for m in _near_digits(AMOUNT, s, _AMOUNT_LEAD):
        if taken(m):
            continue
        spans.append(m.span())
        num = amount_value(m)
        facts.figures.add((currency_of(m), _value(num)))
        facts.values.add(_value(num))
    for m in _PERCENT.finditer(s):
        if taken(m):
            continue
        spans.append(m.span())
        facts.figures.add(("%", _value(m["num"])))
        facts.values.add(_value(m["num"]))
    for m in _NUMBER.finditer(s):
        if taken(m) or _glued(s, m):
            continue
        spans.append(m.span())
        facts.figures.add(("number", _value(m.group())))
        facts.values.add(_value(m.group()))
    for m in _NUMBER_WORDS.finditer(s):
        if taken(m) or m.group().lower() == "one":  # "one" alone is mostly a pronoun ("no one", "the one")
            continue
        n = _words_value(m.group())
        if n is not None:
            facts.figures.add(("number", str(n)))
            facts.values.add(str(n))
    for n in _arabic_numbers(s):
        facts.figures.add(("number", str(n)))
        facts.values.add(str(n))
    return facts


def _near_digits(pattern: re.Pattern[str], s: str, lead: int) -> Iterator[re.Match[str]]:
    """`pattern.finditer(s)`, for a pattern whose every match has a digit at most `lead` characters
    after its start: it is tried only at those positions. The same matches (each is the leftmost one
    from where the last ended, and no other position can start one), without trying the pattern at
    every position of a passage with few figures. `match(s, p)` sees s before p, as finditer does."""
    pos = 0
    while (digit := _DIGIT.search(s, pos)) is not None:
        first = digit.start()
        for start in range(max(pos, first - lead), first + 1):
            if (m := pattern.match(s, start)) is not None:
                yield m
                pos = m.end()  # never empty: it holds a digit
                break
        else:
            pos = first + 1


def _glued(s: str, m: re.Match[str]) -> bool:
    """Digits that end an identifier ("v3", "ISO27001", "H1") are not a figure; "9am", "8km" are."""
    before = s[m.start() - 1] if m.start() else " "
    return before.isalpha() or before == "_"


def _date(parts: dict[str, int | None]) -> str:
    y, m, d = parts["y"], parts["m"], parts["d"]
    return "-".join(f"{v:02d}" if i else str(v) for i, v in ((0, y), (1, m), (2, d)) if v is not None) \
        if y else "--" + "-".join(f"{v:02d}" for v in (m, d) if v is not None)


def supported(figure: tuple[str, str], evidence: Facts) -> bool:
    kind, value = figure
    if figure in evidence.figures:
        return True
    if kind == "number":
        return value in evidence.values
    if kind in ("date", "time", "%"):
        return False
    dollar = kind in DOLLARS
    if dollar and any(k in DOLLARS and (k == "$" or kind == "$") and v == value for k, v in evidence.figures):
        return True  # a bare "$" on either side is any dollar
    # a plain number in a passage that names the currency elsewhere (a table's "Nightly limit (USD)")
    named = kind in evidence.currencies or (dollar and bool(evidence.currencies & DOLLARS))
    return named and ("number", value) in evidence.figures


def unsupported(sentence: str, evidence: Facts) -> list[tuple[str, str]]:
    """The figures of `sentence` that `evidence` (the cited passages' facts) does not state."""
    return unsupported_figures(facts_in(sentence).figures, evidence)


def unsupported_figures(figures: set[tuple[str, str]], evidence: Facts) -> list[tuple[str, str]]:
    """Those of a sentence's `figures` (facts_in(sentence).figures) that `evidence` does not state."""
    return sorted(f for f in figures if not supported(f, evidence))
