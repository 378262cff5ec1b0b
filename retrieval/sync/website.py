"""A website (an intranet or public handbook) as a source, from a start URL.

Which pages: the sitemap (robots.txt's Sitemap lines, else sitemap.xml under the start path or at the
site root) when there is one, else the links followed from the start page; in both cases only URLs under
the start URL's path, allowed by robots.txt, without a query string, and only text/html pages (plus the
PDF and Word files they link to). Pages synced before are asked for again even when nothing links to
them any more, so a removal is seen. Identity is the URL's path.

Each request is conditional when the page was synced before (If-None-Match / If-Modified-Since), so an
unchanged page costs one request and a 304. Requests run a few at a time with a pause between their
starts, so a sync never hammers an intranet server. The page's main content — not its navigation,
header or footer — is extracted with trafilatura and handed on as plain HTML with only that content,
so nothing on the page (a <meta> tag, say) can set who may read it.

Per page: timeouts, redirects and HTTP errors are results of that page, not of the run; 404 and 410
mean the page is gone (the mirror withdraws it only when the next run confirms it). The whole listing
fails — and nothing is withdrawn — when robots.txt, the sitemap or the start page cannot be reached.

Budgets, enforced while reading: every response is streamed and dropped at `max_bytes` (a declared
Content-Length over it is refused before the body is read), every request — body included — has
`fetch_s` in all (a server that sends a byte a second is cut off there), a run takes at most
`max_pages` pages and `max_run_s` seconds; pages past either limit are not fetched this run (said in
`notes`) and nothing unvisited is withdrawn.
"""

from __future__ import annotations

import asyncio
import html as html_lib
import time
from collections.abc import Iterable
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import httpx
import lxml.html
from lxml import etree

from retrieval.sync.model import (
    CONTENT,
    ERROR,
    GONE,
    NOT_MODIFIED,
    SKIPPED,
    Fetched,
    ListingError,
    doc_id_from_path,
)
from store.sources import SourceItem

USER_AGENT = "CairnSync/1.0 (policy handbook mirror)"
HTML_TYPES = ("text/html", "application/xhtml+xml")
DOCUMENT_TYPES = {"application/pdf": ".pdf",
                  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx"}
DOCUMENT_SUFFIXES = (".pdf", ".docx")
OK_RESULTS = ("new", "changed", "unchanged", "not_modified")
MAX_SITEMAPS = 50
MAX_REDIRECTS = 5
# At most 40 requests a second to the site by default: a re-run of a 1,000-page handbook, nearly all
# 304s, takes under a minute; a public site's owner may prefer --delay 1.
DEFAULT_DELAY_S = 0.025
DEFAULT_CONCURRENCY = 4
DEFAULT_FETCH_S = 30.0  # one request, headers and body, start to end
DEFAULT_MAX_PAGES = 500  # pages and linked files per run
DEFAULT_MAX_RUN_S = 1800.0  # one run of one source
_STREAM_CHUNK = 64 * 1024


class TooLarge(Exception):
    """A response over the byte budget; str(e) says how far it got."""


class _Reply:
    """A response read under the budgets: status, headers and the (bounded) body."""

    def __init__(self, status_code: int, headers: httpx.Headers, content: bytes, encoding: str | None) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content
        self._encoding = encoding

    @property
    def text(self) -> str:
        return self.content.decode(self._encoding or "utf-8", errors="replace")


class _Pacer:
    """At most one request start every `delay_s` seconds (politeness), across all workers."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self._lock = asyncio.Lock()
        self._next = 0.0

    async def wait(self) -> None:
        if self.delay_s <= 0:
            return
        async with self._lock:
            now = time.monotonic()
            if self._next > now:
                await asyncio.sleep(self._next - now)
            self._next = max(now, self._next) + self.delay_s


class WebsiteLister:
    def __init__(self, start_url: str, *, concurrency: int = DEFAULT_CONCURRENCY, delay_s: float = DEFAULT_DELAY_S,
                 timeout_s: float = 10.0, fetch_s: float = DEFAULT_FETCH_S, max_run_s: float = DEFAULT_MAX_RUN_S,
                 max_pages: int = DEFAULT_MAX_PAGES, max_bytes: int = 20 * 1024 * 1024,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        parts = urlsplit(start_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not an http(s) URL: {start_url!r}")
        self.start_url = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", ""))
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.prefix = (parts.path or "/").rstrip("/")  # "" = the whole site
        self.concurrency = max(1, concurrency)
        self.delay_s = delay_s
        self.timeout_s = timeout_s
        self.max_pages = max_pages
        self.max_bytes = max_bytes
        self.fetch_s = fetch_s
        self.max_run_s = max_run_s
        self._transport = transport
        self._robots: RobotFileParser | None = None
        self._deadline = float("inf")
        self.requests = 0  # how many HTTP requests the last listing sent (robots and sitemaps included)
        self.notes: list[str] = []  # budgets the last listing reached (pages or time): pages left unfetched

    # -- scope ------------------------------------------------------------------------------------

    def key_of(self, url: str) -> str:
        path = unquote(urlsplit(url).path) or "/"
        name = path.rsplit("/", 1)[-1]
        if name in ("index.html", "index.htm"):
            path = path[: -len(name)]
        return path.rstrip("/") or "/"

    def in_scope(self, url: str) -> bool:
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin or parts.query:
            return False
        path = unquote(parts.path) or "/"
        return not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")

    def allowed(self, url: str) -> bool:
        return self._robots is None or self._robots.can_fetch(USER_AGENT, url)

    # -- the listing ------------------------------------------------------------------------------

    async def scan(self, known: dict[str, SourceItem]) -> list[Fetched]:
        self.requests = 0
        self.notes = []
        self._deadline = time.monotonic() + self.max_run_s
        pacer = _Pacer(self.delay_s)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        # trust_env=False: a sync goes to the configured site only, never through an ambient proxy.
        async with httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=False,
                                     headers={"User-Agent": USER_AGENT}, limits=limits, trust_env=False,
                                     transport=self._transport) as client:
            sitemaps = await self._load_robots(client, pacer)
            listed = await self._load_sitemap(client, pacer, sitemaps)
            return await self._crawl(client, pacer, known, listed)

    async def _get(self, client: httpx.AsyncClient, pacer: _Pacer, url: str,
                   headers: dict[str, str] | None = None) -> _Reply:
        """GET under the budgets: raises httpx.TimeoutException past `fetch_s` (body included) and
        TooLarge at the first byte over `max_bytes`."""
        await pacer.wait()
        self.requests += 1
        try:
            async with asyncio.timeout(self.fetch_s):
                return await self._read(client, url, headers)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no complete answer within {self.fetch_s:g} s") from None

    async def _read(self, client: httpx.AsyncClient, url: str, headers: dict[str, str] | None) -> _Reply:
        async with client.stream("GET", url, headers=headers) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise TooLarge(f"{int(declared):,} bytes declared, over the {self.max_bytes:,}-byte limit; "
                               "not downloaded")
            body = bytearray()
            async for chunk in response.aiter_bytes(_STREAM_CHUNK):  # decoded: a gzip bomb counts as inflated
                body += chunk
                if len(body) > self.max_bytes:
                    raise TooLarge(f"over the {self.max_bytes:,}-byte limit; the download was stopped there")
            return _Reply(response.status_code, response.headers, bytes(body), response.charset_encoding)

    async def _load_robots(self, client: httpx.AsyncClient, pacer: _Pacer) -> list[str]:
        url = f"{self.origin}/robots.txt"
        try:
            response = await self._get(client, pacer, url)
        except httpx.HTTPError as exc:
            raise ListingError(f"the site could not be reached ({_network_reason(exc, self.timeout_s)}); "
                               "nothing was withdrawn") from exc
        except TooLarge as exc:
            raise ListingError(f"robots.txt is too large ({exc}); nothing was withdrawn") from exc
        self._robots = None
        if response.status_code >= 500 or response.status_code in (401, 403, 429):
            raise ListingError(f"robots.txt answered HTTP {response.status_code}; nothing was withdrawn")
        if response.status_code != 200:
            return []  # no robots.txt: everything is allowed
        robots = RobotFileParser(url)
        robots.parse(response.text.splitlines())
        self._robots = robots
        return [u for u in (robots.site_maps() or []) if u.startswith(self.origin)]

    async def _load_sitemap(self, client: httpx.AsyncClient, pacer: _Pacer, declared: list[str]) -> list[str] | None:
        """In-scope page URLs from the first sitemap found, or None when the site has none."""
        candidates = [*declared, f"{self.origin}{self.prefix}/sitemap.xml", f"{self.origin}/sitemap.xml"]
        for url in dict.fromkeys(candidates):
            urls = await self._read_sitemap(client, pacer, url, depth=0)
            if urls is not None:
                return [u for u in dict.fromkeys(urls) if self.in_scope(u)]
        return None

    async def _read_sitemap(self, client: httpx.AsyncClient, pacer: _Pacer, url: str, depth: int) -> list[str] | None:
        try:
            response = await self._get(client, pacer, url)
        except httpx.HTTPError as exc:
            raise ListingError(f"the sitemap {url} could not be fetched ({_network_reason(exc, self.timeout_s)}); "
                               "nothing was withdrawn") from exc
        except TooLarge as exc:
            raise ListingError(f"the sitemap {url} is too large ({exc}); nothing was withdrawn") from exc
        if response.status_code in (404, 410):
            return None
        if response.status_code != 200:
            raise ListingError(f"the sitemap {url} answered HTTP {response.status_code}; nothing was withdrawn")
        try:
            root = etree.fromstring(response.content, parser=etree.XMLParser(resolve_entities=False, no_network=True))
        except etree.XMLSyntaxError as exc:
            raise ListingError(f"the sitemap {url} is not valid XML ({exc}); nothing was withdrawn") from exc
        locs = [(el.text or "").strip() for el in root.iter() if isinstance(el.tag, str)
                and etree.QName(el).localname == "loc"]
        if etree.QName(root).localname != "sitemapindex":
            return [loc for loc in locs if loc]
        pages: list[str] = []
        for child in locs[:MAX_SITEMAPS] if depth == 0 else []:
            pages.extend(await self._read_sitemap(client, pacer, child, depth + 1) or [])
        return pages

    async def _crawl(self, client: httpx.AsyncClient, pacer: _Pacer, known: dict[str, SourceItem],
                     listed: list[str] | None) -> list[Fetched]:
        follow_pages = listed is None  # no sitemap: the site's own links are the listing
        live = {key: item for key, item in known.items() if item.state != "withdrawn" and item.url}
        frontier: list[str] = [self.start_url, *(listed or [])]
        frontier += [item.url for item in live.values() if item.url]
        frontier += [link for item in live.values() for link in self._links_to_follow(item.links, follow_pages)]
        results: dict[str, Fetched] = {}
        queued: set[str] = set()
        queue: asyncio.Queue[str] = asyncio.Queue()
        refused: set[str] = set()  # in scope, past the page budget: counted for the note

        def offer(urls: Iterable[str]) -> None:
            for url in urls:
                key = self.key_of(url)
                if key in queued or not self.in_scope(url):
                    continue
                if len(queued) >= self.max_pages:
                    refused.add(key)
                    continue
                queued.add(key)
                queue.put_nowait(url)

        offer(frontier)
        start = await self._fetch(client, pacer, self.start_url, live.get(self.key_of(self.start_url)))
        if start.result == ERROR:
            raise ListingError(f"the start page {self.start_url} could not be fetched ({start.message}); "
                               "nothing was withdrawn")
        if start.result == GONE and not listed:
            raise ListingError(f"the start page {self.start_url} is gone (HTTP 404) and there is no sitemap; "
                               "nothing was withdrawn")
        results[start.key] = start
        queue.get_nowait()  # the start page, fetched above
        offer(self._links_to_follow(start.links, follow_pages))

        unfetched: list[str] = []

        async def worker() -> None:
            while True:
                try:
                    url = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                if time.monotonic() >= self._deadline:
                    unfetched.append(url)  # the run's time is spent: left for the next run
                    queue.task_done()
                    continue
                try:
                    asked = self.key_of(url)
                    fetched = await self._fetch(client, pacer, url, live.get(asked))
                    if fetched.key != asked:  # moved: the old identity is gone, the new one is a page
                        results[asked] = Fetched(key=asked, doc_id=self._doc_id(url), result=GONE, url=url,
                                                 message=f"moved to {fetched.url}")
                        if fetched.key in results:
                            continue  # a page this run already has
                    results[fetched.key] = fetched
                    offer(self._links_to_follow(fetched.links, follow_pages))
                finally:
                    queue.task_done()

        # Workers exit when the queue is momentarily empty; re-spawn while links keep arriving.
        while not queue.empty():
            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
        refused -= queued
        if refused:
            self.notes.append(f"the crawl stopped at {self.max_pages:,} pages (the limit per run): {len(refused):,} "
                              "more linked pages were not fetched; nothing unfetched was withdrawn")
        if unfetched:
            self.notes.append(f"the run reached its time limit of {self.max_run_s:g} s: {len(unfetched):,} pages "
                              "were not fetched this time; nothing unfetched was withdrawn")
        return list(results.values())

    def _links_to_follow(self, links: Iterable[str], follow_pages: bool) -> list[str]:
        """With a sitemap, pages come from it and only linked PDF and Word files are followed."""
        return [link for link in links if follow_pages or urlsplit(link).path.lower().endswith(DOCUMENT_SUFFIXES)]

    def _doc_id(self, url: str) -> str:
        return doc_id_from_path(self.key_of(url))

    async def _fetch(self, client: httpx.AsyncClient, pacer: _Pacer, url: str, item: SourceItem | None) -> Fetched:
        key, doc_id = self.key_of(url), self._doc_id(url)
        if not self.allowed(url):
            return Fetched(key=key, doc_id=doc_id, result=SKIPPED, url=url, message="disallowed by robots.txt")
        headers: dict[str, str] = {}
        if item is not None and item.last_result in OK_RESULTS:
            if item.etag:
                headers["If-None-Match"] = item.etag
            if item.last_modified:
                headers["If-Modified-Since"] = item.last_modified
        target = url
        try:
            # Redirects are followed by hand so that a hop outside the source is never requested.
            for _hop in range(MAX_REDIRECTS + 1):
                response = await self._get(client, pacer, target, headers if target == url else None)
                if response.status_code not in (301, 302, 303, 307, 308) or "location" not in response.headers:
                    break
                target = urljoin(target, response.headers["location"])
                if not self.in_scope(target) or not self.allowed(target):
                    return Fetched(key=key, doc_id=doc_id, result=ERROR, url=url,
                                   message=f"redirects to {target}, outside the source")
            else:
                return Fetched(key=key, doc_id=doc_id, result=ERROR, url=url, message="too many redirects")
        except httpx.HTTPError as exc:
            return Fetched(key=key, doc_id=doc_id, result=ERROR, url=url,
                           message=_network_reason(exc, self.timeout_s))
        except TooLarge as exc:
            return Fetched(key=key, doc_id=doc_id, result=ERROR, url=url, message=str(exc))
        if target != url:
            key, doc_id, url = self.key_of(target), self._doc_id(target), target
        status = response.status_code
        if status == 304 and item is not None:
            return Fetched(key=key, doc_id=doc_id, result=NOT_MODIFIED, url=url, etag=item.etag,
                           last_modified=item.last_modified, links=item.links)
        if status in (404, 410):
            return Fetched(key=key, doc_id=doc_id, result=GONE, url=url, message=f"HTTP {status}")
        if status != 200:
            return Fetched(key=key, doc_id=doc_id, result=ERROR, url=url, message=f"HTTP {status}")
        etag, modified = response.headers.get("etag"), response.headers.get("last-modified")
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype in DOCUMENT_TYPES:
            suffix = DOCUMENT_TYPES[ctype]
            filename = doc_id if doc_id.lower().endswith(suffix) else doc_id + suffix
            return Fetched(key=key, doc_id=doc_id, result=CONTENT, filename=filename, data=response.content,
                           url=url, etag=etag, last_modified=modified)
        if ctype not in HTML_TYPES:
            return Fetched(key=key, doc_id=doc_id, result=SKIPPED, url=url,
                           message=f"content type {ctype or 'unknown'} is not synced")
        page = response.text
        # Both parse the page (up to max_bytes of it): off the event loop, which answers /healthz and Slack.
        links, body = await asyncio.to_thread(lambda: (self._links(page, url), main_content(page, url)))
        if body is None:
            return Fetched(key=key, doc_id=doc_id, result=ERROR, url=url, links=links, etag=etag,
                           last_modified=modified, message="no main content found on the page")
        return Fetched(key=key, doc_id=doc_id, result=CONTENT, filename=doc_id + ".html", data=body, url=url,
                       etag=etag, last_modified=modified, links=links)

    def _links(self, page: str, base: str) -> tuple[str, ...]:
        try:
            tree = lxml.html.fromstring(page)
        except (etree.ParserError, ValueError):
            return ()
        out: dict[str, None] = {}
        for href in tree.xpath("//a/@href"):
            absolute = urljoin(base, str(href).strip())
            parts = urlsplit(absolute)
            absolute = urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))
            if self.in_scope(absolute) and self.allowed(absolute):
                out[absolute] = None
        return tuple(out)


def main_content(page: str, url: str) -> bytes | None:
    """The page's main content as a small HTML document: headings, paragraphs, lists and tables only.

    The page's <title> is kept only when the content has no <h1>, because the parser prefers a <title>
    over the heading and site titles usually carry the site's name ("Expenses | Handbook").
    """
    import trafilatura  # here, not at the top: it costs most of a second and only website syncs need it

    body = trafilatura.extract(page, url=url, output_format="html", include_tables=True, include_formatting=True,
                               include_links=False, include_images=False, include_comments=False)
    if not body:
        return None
    head = ""
    if "<h1" not in body:
        try:
            title = lxml.html.fromstring(page).findtext(".//title")
        except (etree.ParserError, ValueError):
            title = None
        if title and title.strip():
            head = f"<head><title>{html_lib.escape(' '.join(title.split()))}</title></head>"
    inner = body.strip()
    for tag in ("<html>", "</html>"):
        inner = inner.replace(tag, "")
    return f"<!DOCTYPE html>\n<html>{head}{inner.strip()}</html>\n".encode()


def _network_reason(exc: httpx.HTTPError, timeout_s: float) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return str(exc) if str(exc).startswith("no complete answer") else f"timed out after {timeout_s:g} s"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or host unreachable"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
