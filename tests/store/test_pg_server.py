"""The PostgreSQL test server itself: reachable, and each test's database is its own."""

from __future__ import annotations

import psycopg

from tests.pg import PgServer


def test_the_server_is_postgresql_15_with_bytewise_text_order(pg_database_url: str) -> None:
    with psycopg.connect(pg_database_url) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()
        collate = conn.execute("SELECT datcollate FROM pg_database WHERE datname=current_database()").fetchone()
    assert version is not None and version[0].startswith("15")
    assert collate == ("C",)


def test_each_test_database_is_empty_and_private(pg_server: PgServer) -> None:
    first, second = pg_server.new_database_url(), pg_server.new_database_url()
    try:
        with psycopg.connect(first, autocommit=True) as conn:
            conn.execute("CREATE TABLE marker (x INTEGER)")
        with psycopg.connect(second) as conn:
            tables = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename='marker'"
                                  " AND schemaname=current_schema()").fetchone()
        assert tables == (0,)
    finally:
        pg_server.drop_database(first)
        pg_server.drop_database(second)
