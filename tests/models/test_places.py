"""The gazetteer is what its recipe builds from its sources, and it loads offline."""

from __future__ import annotations

import pytest

from bench.datasets import DATA
from models.places import PLACES_FILE, gazetteer
from models.places.build import main as build_main


def test_the_committed_gazetteer_is_what_its_recipe_builds() -> None:
    if not (DATA / "squad2").exists():
        pytest.skip(f"the reference text is not here ({DATA}); the build counts case in it")
    assert build_main(["--data", str(DATA), "--check"]) == 0, "run: python -m models.places.build"


def test_every_name_stands_for_one_place_in_a_known_country() -> None:
    rows = [line.split("\t") for line in PLACES_FILE.read_text(encoding="utf-8").splitlines()
            if not line.startswith("#")]
    assert all(len(row) == 5 for row in rows)
    names = [row[0].casefold() for row in rows]
    assert len(names) == len(set(names))
    countries = {row[3] for row in rows if row[1] == "country"}
    assert {row[3] for row in rows} <= countries
    assert {row[4] for row in rows} == {"any", "cased"}
    loaded = gazetteer()
    assert sum(len(v) for v in loaded.by_first_word.values()) == len(rows)
