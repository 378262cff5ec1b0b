"""Hostile inputs built at test time (never committed binaries): Word files that inflate to millions of
paragraphs or to gigabytes, Markdown made of empty paragraphs, deep nesting, and a website on 127.0.0.1
whose pages never end, drip one byte a second, declare 150 MB, or link to ever new generated pages.

Every builder is bounded: a bomb is small on disk, and what it would expand to is never materialised
here (the zip is written by streaming the same compressed block again and again).
"""

from __future__ import annotations

import asyncio
import io
import zipfile
from dataclasses import dataclass, field

from aiohttp import web
from docx import Document

_W_BODY = "<w:body>"


def _docx_parts() -> dict[str, bytes]:
    document = Document()
    document.add_paragraph("Staff park in lot B.")
    buffer = io.BytesIO()
    document.save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as package:
        return {name: package.read(name) for name in package.namelist()}


def docx_with_body(body_xml: str, repeat: int) -> bytes:
    """A real .docx whose body is `body_xml` repeated `repeat` times (deflated: tiny on disk)."""
    parts = _docx_parts()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        for name, data in parts.items():
            if name == "word/document.xml":
                text = data.decode()
                cut = text.index(_W_BODY) + len(_W_BODY)
                with package.open(name, "w") as part:  # streamed: the expansion never sits in memory
                    part.write(text[:cut].encode())
                    block = (body_xml * 1000).encode()
                    for _ in range(repeat // 1000):
                        part.write(block)
                    part.write((body_xml * (repeat % 1000)).encode())
                    part.write(text[cut:].encode())
            else:
                package.writestr(name, data)
    return out.getvalue()


def docx_paragraph_bomb(paragraphs: int = 1_500_000) -> bytes:
    """The 185 KB Word file whose document.xml is 60 MB of one-letter paragraphs."""
    return docx_with_body("<w:p><w:r><w:t>x</w:t></w:r></w:p>", paragraphs)


def docx_zip_bomb(megabytes: int = 400) -> bytes:
    """A Word file with a part of `megabytes` of zeros beside a normal body (inflates ~1000:1)."""
    parts = _docx_parts()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as package:
        for name, data in parts.items():
            package.writestr(name, data)
        with package.open("word/media/padding.bin", "w", force_zip64=True) as part:
            zeros = bytes(1024 * 1024)
            for _ in range(megabytes):
                part.write(zeros)
    return out.getvalue()


def markdown_paragraph_bomb(paragraphs: int = 2_000_000) -> bytes:
    return b"# Bomb\n\n" + b"x\n\n" * paragraphs


def nested_html(depth: int) -> bytes:
    return ("<html><body>" + "<div>" * depth + "<p>Deep.</p>" + "</div>" * depth + "</body></html>").encode()


def nested_json(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@dataclass
class HostileSite:
    """A site on 127.0.0.1 under /site/: a start page linking to every trap, and a count of what it sent."""

    runner: web.AppRunner | None = None
    port: int = 0
    sent: dict[str, int] = field(default_factory=dict)  # bytes of body written per path
    page_delay_s: float = 0.0  # added before each generated page (to spend a run's time)

    @property
    def start_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/site/"

    async def start(self, *traps: str) -> None:
        app = web.Application()
        links = "".join(f'<li><a href="/site/{t}">{t}</a></li>' for t in traps)
        start = (f"<html><head><title>Handbook</title></head><body><main><h1>Handbook</h1><p>Staff park in lot "
                 f"B for USD 5 a day, and bicycles go in the cage by door 3.</p><ul>{links}</ul></main>"
                 "</body></html>")

        async def index(_request: web.Request) -> web.Response:
            return web.Response(text=start, content_type="text/html")

        async def endless(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/html"})  # no Content-Length
            await response.prepare(request)
            chunk = b"<p>" + b"a" * 65_530 + b"</p>"
            try:
                await response.write(b"<html><body>")
                for _ in range(20_000):  # 1.3 GB if nobody stops reading
                    await response.write(chunk)
                    self.sent["endless"] = self.sent.get("endless", 0) + len(chunk)
            except (ConnectionResetError, RuntimeError, asyncio.CancelledError):
                pass
            return response

        async def slow(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": "text/html"})
            await response.prepare(request)
            try:
                for byte in b"<html><body><p>" + b"s" * 3600:
                    await response.write(bytes([byte]))
                    self.sent["slow"] = self.sent.get("slow", 0) + 1
                    await asyncio.sleep(1.0)
            except (ConnectionResetError, RuntimeError, asyncio.CancelledError):
                pass
            return response

        async def big_pdf(request: web.Request) -> web.StreamResponse:
            size = 150 * 1024 * 1024
            response = web.StreamResponse(headers={"Content-Type": "application/pdf",
                                                   "Content-Length": str(size)})
            await response.prepare(request)
            try:
                block = b"%PDF-1.7\n" + bytes(1024 * 1024 - 9)
                for _ in range(150):
                    await response.write(block)
                    self.sent["big.pdf"] = self.sent.get("big.pdf", 0) + len(block)
            except (ConnectionResetError, RuntimeError, asyncio.CancelledError):
                pass
            return response

        async def loop_page(request: web.Request) -> web.Response:
            n = int(request.match_info["n"])
            if self.page_delay_s:
                await asyncio.sleep(self.page_delay_s)
            self.sent["loop"] = self.sent.get("loop", 0) + 1
            body = (f"<html><head><title>Page {n}</title></head><body><main><h1>Generated page {n}</h1>"
                    f"<p>Generated rule number {n} applies to every team on shift {n}.</p>"
                    f'<a href="/site/loop/{2 * n + 1}">next</a> <a href="/site/loop/{2 * n + 2}">other</a>'
                    "</main></body></html>")
            return web.Response(text=body, content_type="text/html")

        app.router.add_get("/site/", index)
        app.router.add_get("/site/endless", endless)
        app.router.add_get("/site/slow", slow)
        app.router.add_get("/site/big.pdf", big_pdf)
        app.router.add_get("/site/loop/{n}", loop_page)
        self.runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
