"""A handbook website on 127.0.0.1, built from the public handbook pages in ../shared/data/handbooks.

Each Markdown page is rendered to HTML inside site chrome (a header with navigation to every page, a
sidebar, a footer) the way static-site generators do, under /handbook/. The site serves a robots.txt
(with a Disallow rule and the Sitemap line), a sitemap.xml, ETags with 304 answers to If-None-Match,
and records every request so tests can see what a sync asked for.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from markdown_it import MarkdownIt

FOOTER = "Copyright Example Handbook contributors. Licensed CC BY-SA 4.0. Report an issue with this page."
_SHORTCODE = re.compile(r"{{[<%].*?[%>]}}", re.DOTALL)
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
_TITLE = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$", re.MULTILINE)


def page_path(relative: str) -> str:
    """finance/travel/_index.md → /handbook/finance/travel/ ; finance/expenses.md → /handbook/finance/expenses/"""
    stem = relative[: -len(".md")]
    if stem.endswith("_index"):
        stem = stem[: -len("_index")]
    return "/handbook/" + (stem.strip("/") + "/" if stem.strip("/") else "")


def render_markdown(text: str) -> tuple[str, str]:
    """(title, HTML body) of a handbook Markdown page: front matter read for the title, shortcodes dropped."""
    title = ""
    match = _FRONT_MATTER.match(text)
    if match:
        found = _TITLE.search(match.group(1))
        title = found.group(1) if found else ""
        text = text[match.end():]
    body = MarkdownIt("commonmark").enable("table").render(_SHORTCODE.sub("", text))
    if not title:
        heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
        title = heading.group(1).strip() if heading else "Handbook"
    return title, body


@dataclass
class HandbookSite:
    """Pages keyed by URL path; `pages` may be edited between syncs (the ETag follows the content)."""

    pages: dict[str, tuple[str, str]] = field(default_factory=dict)  # path → (title, HTML body)
    disallowed: str = "/handbook/private/"
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (path, If-None-Match)
    use_sitemap: bool = True
    statuses: dict[str, int] = field(default_factory=dict)  # path → an error status to answer with
    redirects: dict[str, str] = field(default_factory=dict)  # path → where it moved
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path → (content type, bytes), e.g. a PDF
    stalls: dict[str, float] = field(default_factory=dict)  # path → seconds the server waits before answering
    _runner: web.AppRunner | None = None
    port: int = 0

    @classmethod
    def from_markdown(cls, root: Path, names: list[str] | None = None) -> HandbookSite:
        site = cls()
        files = [root / n for n in names] if names else sorted(root.rglob("*.md"))
        for file in files:
            relative = file.relative_to(root).as_posix()
            if relative in ("SOURCE.md", "README.md", "FILES.txt"):
                continue
            site.pages[page_path(relative)] = render_markdown(file.read_text(encoding="utf-8"))
        links = "".join(f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, (t, _) in sorted(site.pages.items()))
        site.pages["/handbook/"] = ("Example Handbook", "<p>This handbook describes how the company works: "
                                    f"benefits, time off and conduct. Start with one of these pages.</p><ul>{links}</ul>")
        return site

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def start_url(self) -> str:
        return f"{self.base}/handbook/"

    def html_of(self, path: str) -> str:
        title, body = self.pages[path]
        heading = "" if "<h1" in body else f"<h1>{html.escape(title)}</h1>"  # as Hugo does with a front-matter title
        nav = "".join(f'<li><a href="{p}">{html.escape(t)}</a></li>' for p, (t, _) in sorted(self.pages.items()))
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)} | Example Handbook"
                f"</title><meta name='groups' content='executives'><meta name='owner' content='#from-the-page'>"
                f"</head><body><header class='site-header'><a href='/handbook/'>Example Handbook</a><nav><ul>{nav}"
                f"</ul></nav><form action='/search'><input name='q'></form></header>"
                f"<div class='layout'><aside class='sidebar'><nav><ul>{nav}</ul></nav></aside>"
                f"<main><article>{heading}{body}</article></main></div>"
                f"<footer class='site-footer'><p>{FOOTER}</p><a href='/handbook/private/salaries/'>Salaries</a>"
                f"</footer></body></html>")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        if not self.port:
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        self.requests.append((path, request.headers.get("If-None-Match")))
        if path == "/robots.txt":
            return web.Response(text=f"User-agent: *\nDisallow: {self.disallowed}\n\n"
                                     f"Sitemap: {self.base}/handbook/sitemap.xml\n")
        if path == "/handbook/sitemap.xml":
            if not self.use_sitemap:
                raise web.HTTPNotFound()
            urls = "".join(f"<url><loc>{self.base}{p}</loc></url>"
                           for p in [*sorted(self.pages), f"{self.disallowed}salaries/"])
            return web.Response(text='<?xml version="1.0" encoding="UTF-8"?><urlset xmlns='
                                     f'"http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>',
                                content_type="application/xml")
        if path in self.stalls:
            await asyncio.sleep(self.stalls[path])
        if path in self.statuses:
            return web.Response(status=self.statuses[path], text="unavailable")
        if path in self.redirects:
            raise web.HTTPMovedPermanently(self.redirects[path])
        if path in self.files:
            content_type, data = self.files[path]
        elif path in self.pages:
            content_type, data = "text/html", self.html_of(path).encode()
        else:
            raise web.HTTPNotFound()
        etag = '"' + hashlib.sha256(data).hexdigest()[:20] + '"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(body=data, content_type=content_type, charset="utf-8" if content_type == "text/html"
                            else None, headers={"ETag": etag})

    def page_requests(self) -> list[tuple[str, str | None]]:
        return [(p, tag) for p, tag in self.requests if p.startswith("/handbook/") and not p.endswith(".xml")]
