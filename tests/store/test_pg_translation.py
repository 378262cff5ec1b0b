"""The stores' SQL as PostgreSQL reads it (store/pg.py): the few explicit rules, and nothing else
changed (no server needed)."""

from __future__ import annotations

import pytest

from store.db import MIGRATIONS
from store.pg import script_to_postgres, to_postgres


@pytest.mark.parametrize(("sqlite", "postgresql"), [
    ("SELECT * FROM t WHERE a=? AND b IN (?,?)", "SELECT * FROM t WHERE a=%s AND b IN (%s,%s)"),
    ("INSERT INTO t (a, b) VALUES (:a, :b_2)", "INSERT INTO t (a, b) VALUES (%(a)s, %(b_2)s)"),
    ("SELECT '50%', 'a?b', ':x' FROM t WHERE c LIKE '%?'", "SELECT '50%%', 'a?b', ':x' FROM t WHERE c LIKE '%%?'"),
    ("SELECT x % 2 FROM t", "SELECT x %% 2 FROM t"),
    ("SELECT group_concat(g, ',') FROM t", "SELECT string_agg(g, ',') FROM t"),
    ("UPDATE r SET d=? WHERE k=? AND json_extract(detail,'$.token')=?",
     "UPDATE r SET d=%s WHERE k=%s AND (detail::jsonb->>'token')=%s"),
    ("SELECT 1 FROM c WHERE c.p IN (?) AND +c.tenant_id=?", "SELECT 1 FROM c WHERE c.p IN (%s) AND c.tenant_id=%s"),
    ("UPDATE t SET n=n+1 WHERE a=?", "UPDATE t SET n=n+1 WHERE a=%s"),
    ("ALTER TABLE a ADD COLUMN n INTEGER NOT NULL DEFAULT 0", "ALTER TABLE a ADD COLUMN n BIGINT NOT NULL DEFAULT 0"),
    ("CREATE TABLE IF NOT EXISTS v (x REAL, y BLOB, integer_count INTEGER)",
     "CREATE TABLE IF NOT EXISTS v (x DOUBLE PRECISION, y BYTEA, integer_count BIGINT)"),
    ("SELECT * FROM turns WHERE top_score > ?", "SELECT * FROM turns WHERE top_score > %s"),  # types only in DDL
])
def test_each_rule(sqlite: str, postgresql: str) -> None:
    assert to_postgres(sqlite) == postgresql


def test_the_migrations_keep_their_statements_and_give_chunks_an_insertion_order() -> None:
    statements = [s for script in MIGRATIONS for s in script_to_postgres(script)]
    assert not any("?" in s or "--" in s or "%%" in s for s in statements)
    assert not any(word in s for s in statements for word in (" BLOB", " REAL", " INTEGER"))
    chunks = next(s for s in statements if "CREATE TABLE IF NOT EXISTS chunks (" in s)
    assert "rowid BIGINT GENERATED ALWAYS AS IDENTITY" in chunks
    assert sum("rowid" in s for s in statements) == 1
