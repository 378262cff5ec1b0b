"""Budgets enforced while reading, through the real ingestion worker: a Word file of millions of tiny
paragraphs or gigabytes of padding, and Markdown of empty paragraphs, are refused within seconds with
the limit named; the upload queued behind them publishes; a refused file leaves no copy; cancelling a
job stops it within seconds."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

import pytest

from bot.services import Services
from retrieval.ingest import DocumentOptions, FileOutcome, Ingestor
from retrieval.parse import ParseBudget, ParseError, parse_bytes
from tests.bombs import docx_paragraph_bomb, docx_zip_bomb, markdown_paragraph_bomb
from tests.retrieval.test_poison import GOOD, long_markdown

TENANT = "larkspur"


async def submit(svc: Services, data: bytes, doc_id: str, filename: str) -> FileOutcome:
    outcome = await svc.ingestor.submit_bytes(data, filename=filename, doc_id=doc_id,
                                              options=DocumentOptions(tenant_id=TENANT))
    assert outcome.status == "queued", outcome
    return outcome


def raw_files(svc: Services, doc_id: str) -> list[Path]:
    folder = svc.settings.raw_path / TENANT / doc_id
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


@pytest.mark.parametrize(("bomb", "words"), [
    (docx_paragraph_bomb, "more than 100,000 paragraphs"),
    (docx_zip_bomb, "expands to more than 64 MB when unpacked"),
])
async def test_a_word_bomb_is_refused_within_seconds_and_the_next_upload_flows(
        services: Services, bomb: object, words: str) -> None:
    data = bomb()  # type: ignore[operator]
    assert len(data) < 1_000_000  # small on disk
    await submit(services, data, "ops/bomb", "bomb.docx")
    await submit(services, GOOD, "ops/dock", "dock.md")  # queued behind it
    started = time.monotonic()
    results = {r.doc_id: r for r in await services.ingestor.run_pending()}
    assert time.monotonic() - started < 30  # both jobs, the model's embedding of the good one included
    assert results["ops/bomb"].status == "failed"
    assert words in (results["ops/bomb"].message or ""), results["ops/bomb"].message
    assert results["ops/dock"].status == "published"
    assert raw_files(services, "ops/bomb") == []  # refused: no copy kept
    assert raw_files(services, "ops/dock")  # published: its original is kept


async def test_a_markdown_paragraph_bomb_is_refused_before_it_is_parsed(services: Services) -> None:
    await submit(services, markdown_paragraph_bomb(300_000), "ops/empty-paras", "paras.md")
    started = time.monotonic()
    [result] = await services.ingestor.run_pending()
    assert time.monotonic() - started < 10
    assert result.status == "failed" and "more than 100,000 paragraphs" in (result.message or "")


def test_each_budget_stops_the_parser_with_its_name() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    for page in range(4):
        pdf.add_page()
        pdf.set_font("Helvetica", size=12)
        pdf.cell(text=f"Page {page} says staff park in lot B.")
    cases = [
        (bytes(pdf.output()), "p.pdf", ParseBudget(max_pages=3), "4 pages, over the limit of 3 pages"),
        (b"# T\n\n" + b"word " * 2000, "t.md", ParseBudget(max_chars=5000), "holds more than 5,000 characters"),
        (b"<html><body>" + b"<p>x</p>" * 600 + b"</body></html>", "t.html", ParseBudget(max_elements=500),
         "more than 500 elements"),
        (b"<html><body>" + b"<p>x</p>" * 600 + b"</body></html>", "t.html", ParseBudget(max_blocks=500),
         "more than 500 paragraphs"),
        (docx_paragraph_bomb(3000), "w.docx", ParseBudget(max_blocks=2000), "more than 2,000 paragraphs"),
    ]
    for data, name, budget, words in cases:
        with pytest.raises(ParseError, match=words):
            parse_bytes(data, filename=name, budget=budget)
        parse_bytes(data, filename=name)  # the default budget reads each of them


async def test_cancelling_a_running_job_stops_it_within_seconds(services: Services) -> None:
    ingestor: Ingestor = dataclasses.replace(services.ingestor, cancel_poll_s=0.5)
    job = await submit(services, long_markdown(400), "ops/manual", "manual.md")  # minutes of embedding
    run = asyncio.create_task(ingestor.run_pending())
    for _ in range(600):
        current = await services.jobs.get(job_id=job.job_id or "")
        if current is not None and current.state == "embedding":
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the job never started embedding")
    await services.jobs.cancel(job_id=job.job_id or "")
    cancelled_at = time.monotonic()
    [result] = await asyncio.wait_for(run, timeout=30)
    assert time.monotonic() - cancelled_at < 5
    assert result.status == "cancelled"
    assert await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/manual") is None or \
        (await services.catalog.get_document(tenant_id=TENANT, doc_id="ops/manual")).current_version is None  # type: ignore[union-attr]


async def test_a_long_job_does_not_hold_up_the_small_ones_behind_it(services: Services) -> None:
    await submit(services, long_markdown(120), "ops/manual", "manual.md")  # taken first, embeds for a while
    await submit(services, GOOD, "ops/dock", "dock.md")
    published_at: dict[str, float] = {}

    def progress(job: object, state: str) -> None:
        if state == "published":
            published_at[job.doc_id] = time.monotonic()  # type: ignore[attr-defined]

    results = await services.ingestor.run_pending(on_progress=progress)
    assert [r.doc_id for r in results] == ["ops/manual", "ops/dock"]  # in the order they were taken
    assert all(r.status == "published" for r in results), results
    assert published_at["ops/dock"] < published_at["ops/manual"]  # the small one did not wait
