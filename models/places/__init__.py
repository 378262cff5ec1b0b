"""The gazetteer: names of countries, first-level regions and cities, and the place each stands for.

Built from public geographic data (GeoNames, the Unicode CLDR, ISO 3166) by `build.py`, not written
by hand; `places.tsv` and its card (README.md) travel with the package. One row a name:

    name  kind (country | region | city)  place  country code  case (any | cased)

A name of case `any` is found in lower case too ("riyadh"); a `cased` one only as written ("UAE",
"Turkey"). Loaded once, on first use, offline.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

PLACES_FILE = Path(__file__).resolve().parent / "places.tsv"


@dataclass(frozen=True, slots=True)
class Place:
    name: str      # as written: "UK", "Bangalore", "الرياض"
    kind: str      # country, region or city
    place: str     # what it stands for: "United Kingdom", "Bengaluru", "Riyadh"
    country: str   # the country's name: "United Kingdom", "India", "Saudi Arabia"
    any_case: bool


@dataclass(frozen=True, slots=True)
class Gazetteer:
    by_first_word: dict[str, tuple[Place, ...]]  # lower-cased first word → the names it opens

    def candidates(self, words: set[str]) -> list[Place]:
        """The names whose (lower-cased) first word is one of `words`, longest first."""
        found = [p for w in words & self.by_first_word.keys() for p in self.by_first_word[w]]
        return sorted(found, key=lambda p: (-len(p.name), p.name))


@functools.cache
def gazetteer() -> Gazetteer:
    rows = [line.split("\t") for line in PLACES_FILE.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    countries = {code: place for _, kind, place, code, _ in rows if kind == "country"}
    by_first: dict[str, list[Place]] = {}
    for name, kind, place, code, case in rows:
        entry = Place(name, kind, place, countries.get(code, place), case == "any")
        by_first.setdefault(name.lower().split(" ")[0], []).append(entry)
    return Gazetteer({word: tuple(names) for word, names in by_first.items()})
