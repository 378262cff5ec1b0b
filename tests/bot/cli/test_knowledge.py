"""`cairn ingest`, `cairn docs`, `cairn withdraw` and `cairn search --json` through `bot.cli.main`.

The CLI builds its Settings from the environment, so each test points CAIRN_HOME at a private
directory. The commands open the real index and database in-process (no server is running).
Tests are plain functions: `main()` runs its own event loop.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fpdf import FPDF

from tests.bot.cli.conftest import run
from tests.conftest import state_rows

GOOD = b"---\ntitle: Bike Storage\n---\n# Bike Storage\n\nBicycles are stored in the cage by door 3. The cage code changes monthly.\n"


def pdf_with_blank_page() -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(text="Scanned Policy. Page one has real text about parking.")
    pdf.add_page()  # an image-only scan would look like this: no text layer
    return bytes(pdf.output())


def make_batch(root: Path) -> Path:
    batch = root / "batch"
    (batch / "facilities").mkdir(parents=True)
    (batch / "facilities" / "bikes.md").write_bytes(GOOD)
    (batch / "empty.md").write_bytes(b"")
    (batch / "blob.txt").write_bytes(b"\x00\x01\x02\x03binary\x00" * 50)
    (batch / "slides.pptx").write_bytes(b"PK\x03\x04 not really a deck")
    (batch / "huge.md").write_bytes(b"# Huge\n\n" + b"word " * 4000)
    (batch / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> trailer garbage")
    (batch / "latin1.md").write_bytes("# Café\n\nLe café coûte 2 francs.\n".encode("latin-1"))
    (batch / "scan.pdf").write_bytes(pdf_with_blank_page())
    (batch / "travel.md").write_bytes(b"# Travel\n\nBook trains early.\n")
    (batch / "travel.txt").write_bytes(b"Travel\n\nBook planes early.\n")
    (batch / ".hidden.md").write_bytes(b"# Hidden\n\nNot part of the batch.\n")
    return batch


EXPECTED_PROBLEMS = {
    "empty.md": ("rejected", "empty"),
    "blob.txt": ("failed", "binary file"),
    "slides.pptx": ("rejected", "unsupported file type '.pptx'"),
    "huge.md": ("rejected", "over the"),
    "broken.pdf": ("failed", "The PDF could not be read"),
    "latin1.md": ("failed", "not valid UTF-8"),
    "scan.pdf": ("failed", "needs OCR"),
    "travel.md": ("rejected", "duplicate document id 'travel'"),
    "travel.txt": ("rejected", "duplicate document id 'travel'"),
}


def by_name(lines: list[dict]) -> dict[str, dict]:
    return {Path(line["path"]).name: line for line in lines}


def test_ingest_batch_reports_each_bad_file_and_publishes_the_good_one(
        cairn_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_MAX_FILE_MB", "0.01")  # ~10 KB: huge.md (20 KB) is over, bikes.md is not
    batch = make_batch(tmp_path)
    code, lines, _ = run(capsys, "ingest", str(batch), "--json")
    assert code == 1  # some files failed
    results = by_name(lines)
    assert len(lines) == 10 and ".hidden.md" not in results
    good = results.pop("bikes.md")
    assert (good["status"], good["doc_id"], good["version"], good["chunks"]) == (
        "published", "facilities/bikes", "v1", 1)
    for name, (status, needle) in EXPECTED_PROBLEMS.items():
        line = results[name]
        assert line["status"] == status, line
        assert needle in line["message"], line
        assert line["version"] is None and line["chunks"] == 0
    assert "0.0 MB, over the 0.0 MB" not in results["huge.md"]["message"]  # the size must be legible
    # Worded for the command line: nobody uploads anything here.
    assert [line["message"] for line in lines if "upload" in (line["message"] or "")] == []
    assert "and ingest it again" in results["latin1.md"]["message"]
    assert "ingest them separately" in results["huge.md"]["message"]

    # Nothing of the bad files is visible: the catalog holds the good document only.
    code, [catalog], _ = run(capsys, "docs", "--json")
    assert code == 0
    assert [(d["doc_id"], d["version"], d["status"], d["chunks"]) for d in catalog] == [
        ("facilities/bikes", "v1", "active", 1)]

    # The same batch again: the good file is unchanged, the bad ones fail again with their reasons.
    code, again, _ = run(capsys, "ingest", str(batch), "--json")
    again_by_name = by_name(again)
    assert again_by_name["bikes.md"]["status"] == "unchanged"
    for name, (status, needle) in EXPECTED_PROBLEMS.items():
        assert again_by_name[name]["status"] == status and needle in again_by_name[name]["message"], name


def test_ingested_passages_cite_the_path_relative_to_the_directory(
        cairn_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "policies"
    (root / "facilities").mkdir(parents=True)
    (root / "facilities" / "bikes.md").write_bytes(GOOD)
    code, [line], _ = run(capsys, "ingest", str(root), "--json")
    assert code == 0 and line["status"] == "published"
    code, [result], _ = run(capsys, "search", "Where are bicycles stored?", "--json")
    assert code == 0
    bikes = [p for p in result["passages"] if p["doc_id"] == "facilities/bikes"]
    assert bikes and bikes[0]["source"]["path"] == "facilities/bikes.md"


def test_ingest_on_a_nearly_full_disk_is_a_clear_error_and_the_file_waits_queued(
        cairn_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "policies"
    root.mkdir()
    (root / "bikes.md").write_bytes(GOOD)
    monkeypatch.setenv("CAIRN_MIN_FREE_DISK_MB", str(10**12))
    code, lines, err = run(capsys, "ingest", str(root), "--json")
    assert code == 2 and lines == []
    assert "not enough disk space" in err and "CAIRN_MIN_FREE_DISK_MB" in err and "stay queued" in err
    code, [catalog], _ = run(capsys, "docs", "--json")
    assert code == 0 and not [d for d in catalog if d["status"] == "active"]  # nothing half-published

    monkeypatch.setenv("CAIRN_MIN_FREE_DISK_MB", "1")
    code, [line], _ = run(capsys, "ingest", str(root), "--json")
    assert code == 0 and line["status"] == "published"  # the queued job runs once space is free


def test_ingest_options_and_new_version_then_withdraw(cairn_home: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "bikes.md"
    doc.write_bytes(GOOD)
    code, [first], _ = run(capsys, "ingest", str(doc), "--doc-id", "facilities/bikes", "--groups", "finance",
                           "--owner", "#facilities", "--json")
    assert code == 0 and (first["status"], first["version"]) == ("published", "v1")
    doc.write_bytes(GOOD.replace(b"door 3", b"door 4"))
    code, [second], _ = run(capsys, "ingest", str(doc), "--doc-id", "facilities/bikes", "--groups", "finance",
                            "--owner", "#facilities", "--json")
    assert (second["status"], second["version"]) == ("published", "v2")
    code, [catalog], _ = run(capsys, "docs", "--json")
    assert [(d["doc_id"], d["version"], d["groups"], d["owner"]) for d in catalog] == [
        ("facilities/bikes", "v2", ["finance"], "#facilities")]

    code, [hit], _ = run(capsys, "search", "Where are bicycles stored?", "--as", "alice", "--json")
    assert [p["version"] for p in hit["passages"] if p["doc_id"] == "facilities/bikes"] == ["v2"]
    code, [miss], _ = run(capsys, "search", "Where are bicycles stored?", "--as", "bob", "--json")
    assert all(p["doc_id"] != "facilities/bikes" for p in miss["passages"])

    code, [withdrawn], _ = run(capsys, "withdraw", "facilities/bikes", "--json")
    assert code == 0
    assert withdrawn == {"doc_id": "facilities/bikes", "tenant": "larkspur", "withdrawn": True, "was_active": True}
    code, [catalog], _ = run(capsys, "docs", "--json")
    assert [(d["doc_id"], d["status"], d["version"], d["chunks"]) for d in catalog] == [
        ("facilities/bikes", "withdrawn", None, 0)]
    code, [gone], _ = run(capsys, "search", "Where are bicycles stored?", "--as", "alice", "--json")
    assert gone["passages"] == [] and gone["reason"] == "no_eligible_source"


def test_withdraw_removes_vectors_and_text_from_disk(handbook_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from retrieval.index import EdgeIndex

    points = [r[0] for r in state_rows(handbook_home, "SELECT point_id FROM manifest_points WHERE doc_id='finance/travel'")]
    assert points
    code, [out], _ = run(capsys, "withdraw", "finance/travel", "--json")
    assert code == 0 and out["withdrawn"]
    assert state_rows(handbook_home, "SELECT COUNT(*) FROM chunks WHERE doc_id='finance/travel'") == [(0,)]
    assert state_rows(handbook_home, "SELECT COUNT(*) FROM manifest_points WHERE doc_id='finance/travel'"
                                     " AND state!='deleted'") == [(0,)]
    index = EdgeIndex(handbook_home / "index")  # the CLI closed it: we may open it
    try:
        assert index.existing(points) == set()
    finally:
        index.close()
    code, [result], _ = run(capsys, "search", "What is the nightly hotel limit in Boston?", "--as", "bob", "--json")
    assert "finance/travel" not in {p["doc_id"] for p in result["passages"]}


def test_withdraw_of_an_unknown_document_is_a_clear_error(cairn_home: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = run(capsys, "withdraw", "no/such-doc")
    assert code == 2 and lines == []
    assert "no document 'no/such-doc' in tenant larkspur" in err


def test_search_json_has_the_documented_shape(handbook_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, _ = run(capsys, "search", "What is the nightly hotel limit in Boston?", "--as", "bob", "--json")
    assert code == 0 and len(lines) == 1
    result = lines[0]
    assert {"id", "route", "reason", "top_score", "passages", "answer", "turn_id"} <= set(result)
    assert result["route"] in ("answer", "escalate")
    assert (result["route"] == "answer") == (result["reason"] is None)
    assert 1 <= len(result["passages"]) <= 4
    for p in result["passages"]:
        assert {"chunk_id", "doc_id", "version", "source", "heading", "score", "text"} <= set(p)
        assert set(p["source"]) >= {"path", "page"}
        assert p["chunk_id"].startswith(f"larkspur:{p['doc_id']}:{p['version']}:")
        assert isinstance(p["score"], float) and p["text"]
    travel = [p for p in result["passages"] if p["doc_id"] == "finance/travel"]
    assert travel and travel[0]["source"] == {"path": "finance/travel.md", "page": None}
    assert result["top_score"] == result["passages"][0]["score"]
    pdf = [p for p in run(capsys, "search", "What is the gift limit in the code of conduct?", "--json")[1][0]
           ["passages"] if p["doc_id"] == "hr/code-of-conduct"]
    assert pdf and isinstance(pdf[0]["source"]["page"], int) and pdf[0]["source"]["path"] == "hr/code-of-conduct.pdf"


@pytest.mark.parametrize(("user", "allowed"), [("carla", {"retail/customer-faq"}), ("hank", set())])
def test_search_as_resolves_through_the_access_file(handbook_home: Path, capsys: pytest.CaptureFixture[str],
                                                    user: str, allowed: set[str]) -> None:
    code, [result], _ = run(capsys, "search", "What is the car allowance and the refund policy?", "--as", user,
                            "--json")
    assert code == 0
    assert {p["doc_id"] for p in result["passages"]} <= allowed


def test_search_as_unknown_user_and_empty_question_are_refused(cairn_home: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = run(capsys, "search", "hotel", "--as", "mallory", "--json")
    assert code == 2 and lines == [] and "unknown user 'mallory'" in err
    code, lines, err = run(capsys, "search", "   ", "--json")
    assert code == 2 and lines == [] and "the question is empty" in err
