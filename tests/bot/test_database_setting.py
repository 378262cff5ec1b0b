"""CAIRN_DATABASE_URL: unset, the state is SQLite under CAIRN_HOME; a postgresql:// URL is used as
given and kept out of the settings' printed form (it may hold a password); anything else is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.settings import Settings


@pytest.mark.sqlite_only("the setting unset means SQLite")
def test_unset_or_blank_means_sqlite_under_the_home(tmp_path: Path) -> None:
    for extra in ({}, {"CAIRN_DATABASE_URL": " "}):
        settings = Settings(_env_file=None, CAIRN_HOME=tmp_path, **extra)  # type: ignore[call-arg]
        assert settings.database == tmp_path / "cairn.db"


def test_a_postgresql_url_is_the_database_and_is_not_printed() -> None:
    url = "postgresql://cairn:s3cret@db.internal:5432/cairn"
    settings = Settings(_env_file=None, CAIRN_DATABASE_URL=url)  # type: ignore[call-arg]
    assert settings.database == url
    assert "s3cret" not in repr(settings)


def test_another_scheme_is_refused_with_what_to_do() -> None:
    with pytest.raises(ValidationError, match="must be a postgresql:// URL"):
        Settings(_env_file=None, CAIRN_DATABASE_URL="mysql://db/cairn")  # type: ignore[call-arg]
