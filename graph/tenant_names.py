"""The names a tenant's documents use, and which documents use each (for `named_passages`).

"min password length at 37signals?" retrieves another company's password standard in a tenant
that holds several handbooks; "can I expense Airbase fees" lands on a page that never mentions
Airbase. The passages a search returns cannot tell that such a word is a name: only the whole
collection can. A word is a *name* of the tenant when its documents write it capitalised at least
NAME_MIN_COUNT times and in lower case at most LOWER_SHARE of as often (Sourcegraph, Maven; the
lower-case ones in addresses and handles, "sourcegraph.com", "@sourcegraph", are not counted), or
in a brand spelling (GitLab, HubSpot, 37signals). For each name we keep the documents whose text,
title or id contains it: a GitLab page that never says "GitLab" in the passage quoted still
belongs to GitLab's handbook when its id or another of its passages does. A name that more than half
of a folder's documents use (a company's own name, over its handbook's folder) is every one of them's,
and *wide*: `named_passages` reads it wherever a question writes it ("I work at GitLab. …"), where a
tool's or a vendor's name counts only in the sentences that ask.

*Organisations*: in a tenant that holds several companies' handbooks, one folder each and named after
it, the folder's name is its organisation when the documents write it as a name and few other
folders' documents use it (GitLab, Sourcegraph, Basecamp). A question that names none of them may be
asked of any: graph/nodes/tools.py checks conflicts within each organisation's documents only, and
the answer gives each organisation's rule under its name. A tenant with one organisation, or whose
folders are named after what they hold (`finance/`, `hr/`), has no organisations.

Built from the published chunks in one read, off the event loop, once per tenant; a turn after
REFRESH_S checks in the background whether anything was published, retired or withdrawn since
(one aggregate query) and rebuilds only then, using the last names meanwhile (a new name is known
a minute after its document is published, at most).
"""

from __future__ import annotations

import asyncio
import calendar
import logging
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graph.answerers import features
from retrieval.search import Passage

log = logging.getLogger(__name__)

NAME_MIN_COUNT = 2
LOWER_SHARE = 0.1
# A folder's organisation: its name, written as a name, used by at most this share of the other
# folders' documents.
ORGANISATION_SHARE_OUTSIDE = 0.2
# Folders named after a team or a function: one organisation's parts, whatever their capitals.
_DEPARTMENTS = frozenset("finance hr people legal security it ops operations engineering sales marketing support "
                         "retail product design data admin facilities compliance procurement accounting payroll "
                         "policies handbook docs general".split())
REFRESH_S = 60.0

WORD = re.compile(r"[\w'’-]+")
BRAND = re.compile(r"[A-Z]?[a-z]+[A-Z]\w*|\d+[A-Za-z]{2,}\w*")  # GitLab, HubSpot, 37signals
# Addresses, paths and handles: their lower case says nothing about how the word is written in prose.
_NOT_PROSE = re.compile(r"[@#/]|\w[.:]\w")
_POSSESSIVE = re.compile(r"['’]s$|(?<=s)['’]$")  # "GitLab's", "37signals'"
# Regions are where, not who: "Northern European cities" is answered by a list of Danish and
# Swedish ones.
_REGIONS = frozenset("north south east west northern southern eastern western central europe european asia asian "
                     "africa african nordic scandinavian mediterranean latin arab middle".split())

# Days and months are written with a capital but are when, not who: "my last day is Friday" is the
# asker's situation, and a page that never names the day still answers.
_CALENDAR = frozenset(name.lower() for name in (*calendar.day_name, *calendar.month_name[1:]))

Names = Mapping[str, frozenset[str]]  # name → ids of the documents that use it


def word_key(word: str) -> str:
    """How a word of a question or a document is looked up: lower case, without a possessive."""
    low = word.lower()
    return _POSSESSIVE.sub("", low) if low.endswith(("'s", "’s", "s'", "s’")) else low


@dataclass(frozen=True)
class Lexicon:
    names: Names
    words: frozenset[str]  # every word (as `word_key` reads it) the tenant's documents use
    # doc id → the organisation it belongs to, as written ("GitLab"); empty unless there are two or more
    organisations: Mapping[str, str] = field(default_factory=dict)
    # names most documents of a folder use (a company's own: "GitLab", "37signals"), not a tool's ("Okta")
    wide: frozenset[str] = frozenset()


EMPTY = Lexicon(names={}, words=frozenset())


def build_lexicon(documents: Iterable[tuple[str, str, Iterable[str]]]) -> Lexicon:
    """(doc_id, title, chunk texts) of each published document → its tenant's names and words."""
    forms: Counter[str] = Counter()  # each spelling, as written in prose
    openings: Counter[str] = Counter()  # capitalised words that open a sentence, line, item or cell
    used: dict[str, set[str]] = {}
    for doc_id, title, texts in documents:
        words: set[str] = set()
        for text in texts:
            words.update(WORD.findall(text))
            inside, opening = _prose_forms(text)
            forms.update(inside)
            openings.update(opening)
        words.update(WORD.findall(f"{title} {re.sub(r'[/_.:-]', ' ', doc_id)}"))
        used[doc_id] = {word_key(w) for w in words}
    capital: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    brands: set[str] = set()
    for form, n in forms.items():
        key = word_key(form)
        if BRAND.fullmatch(form):
            brands.add(key)
        elif form[:1].isupper():
            capital[key] += n
        elif form[:1].isalpha():
            lower[key] += n
    for form, n in openings.items():  # a capital where every word has one counts for a name written so elsewhere
        if capital[word_key(form)]:
            capital[word_key(form)] += n
    names = {w for w, n in capital.items() if n >= NAME_MIN_COUNT and lower[w] <= LOWER_SHARE * n} | brands
    # A place or a region is read as a place; a word with no content (a stopword, a number, a date's
    # day: "the 10th") names nothing.
    names = {w for w in names if features.tokens(w) and not features.places(w) and not _NUMBER.fullmatch(w)
             and w not in _REGIONS and w not in _CALENDAR}
    docs: dict[str, set[str]] = defaultdict(set)
    for doc_id, words in used.items():
        for w in words & names:
            docs[w].add(doc_id)
    # A name most documents of a folder use is theirs all: a company's own name is not repeated on
    # every page ("How long do the 37signals meetups last?" over a meetup page that never says it).
    folders: dict[str, set[str]] = defaultdict(set)
    for doc_id in used:
        folders[doc_id.split("/", 1)[0] if "/" in doc_id else ""].add(doc_id)
    organisations = _organisations(folders, docs, len(used))
    wide = set()
    for name, ids in docs.items():
        most = [members for members in folders.values() if len(ids & members) * 2 > len(members)]
        if most:
            ids.update(*most)
            wide.add(name)
    spelling: dict[str, tuple[int, str]] = {}
    for form, n in forms.items():
        key = word_key(form)
        if key in organisations.values() and form[:1].isalnum() and not form.islower() \
                and n > spelling.get(key, (0, ""))[0]:
            spelling[key] = (n, _POSSESSIVE.sub("", form))
    return Lexicon(names={w: frozenset(ids) for w, ids in docs.items()},
                   words=frozenset().union(*used.values()),
                   organisations={doc_id: spelling.get(key, (0, key))[1] for folder, key in organisations.items()
                                  for doc_id in folders[folder]},
                   wide=frozenset(wide))


_NUMBER = re.compile(r"\d+(?:st|nd|rd|th)?")
# Where every word is written with a capital: the start of a sentence, a line, a list item or a table cell.
_OPENINGS = re.compile(r"(?<=[.!?:;])\s+|\n|\s\|\s")
_MARKER = re.compile(r"^[\s\-*•#>|\d.)]*")


def _prose_forms(text: str) -> tuple[list[str], list[str]]:
    """The words of a text as written in prose, and apart from them the capitalised ones that open a
    sentence, line, list item or cell: "Hitting sales target or quota" says nothing of how "hitting"
    is written, though "Navan sends …" counts for a word written "Navan" inside sentences too. (A
    brand spelling, GitLab or 37signals, is one wherever it stands.)"""
    inside: list[str] = []
    opening: list[str] = []
    for part in _OPENINGS.split(text):
        words = WORD.findall(" ".join(p for p in _MARKER.sub("", part).split() if not _NOT_PROSE.search(p)))
        if words and words[0][:1].isupper() and not BRAND.fullmatch(words[0]):
            opening.append(words.pop(0))
        inside += words
    return inside, opening


def _organisations(folders: Mapping[str, set[str]], docs: Mapping[str, set[str]], total: int) -> dict[str, str]:
    """folder → its organisation's name (as `word_key` reads it), when every folder is named after
    one: its name is a name of the tenant (written as one in prose), not a team's or a function's,
    and at most ORGANISATION_SHARE_OUTSIDE of the other folders' documents use it ("gitlab/",
    "sourcegraph/"). Otherwise, or with fewer than two organisations, {}."""
    out: dict[str, str] = {}
    for folder, members in folders.items():
        if not folder:
            continue  # documents at the top belong to no folder's organisation
        key, outside = word_key(folder), total - len(members)
        ids = docs.get(key)
        if not ids or key in _DEPARTMENTS or len(ids - members) > ORGANISATION_SHARE_OUTSIDE * outside:
            return {}
        out[folder] = key
    return out if len(set(out.values())) >= 2 else {}


def by_organisation(passages: Iterable[Passage]) -> list[list[Passage]]:
    """The passages of each organisation, in their order, the organisation of the first one first (one
    group where the tenant has no organisations)."""
    groups: dict[str | None, list[Passage]] = {}
    for p in passages:
        groups.setdefault(p.organisation, []).append(p)
    return list(groups.values())


def named_passages(question: str, passages: Sequence[Passage], lexicon: Lexicon = EMPTY) -> list[Passage]:
    """The passages whose documents use every tenant name the question asks with ("… at Sourcegraph"):
    what an answer may quote. Another company's page is not evidence for a question about this one,
    however close its wording. The names are those of the tenant's `lexicon`: in the sentences that
    ask, or anywhere for a company's (its `wide`); "got a quote from an apple authorized shop. what's
    the repair cutoff?" keeps the laptop-repair page that never says Apple. Without such a name, or
    when no passage's document uses them all, the passages as they are."""
    names, wide = lexicon.names, lexicon.wide
    asking = {word_key(w) for w in WORD.findall(_asking(question))}
    asked = {word_key(w) for w in WORD.findall(question) if word_key(w) in names
             and (word_key(w) in wide or word_key(w) in asking)}
    if not asked:
        return list(passages)
    kept = [p for p in passages if all(p.doc_id in names[w] or features.tokens(w) <= features.tokens(_passage_text(p))
                                       for w in asked)]
    return kept or list(passages)


def _asking(question: str) -> str:
    """The sentences of a message that ask ("how much G&D money can I get reimbursed per year?"), without
    those that only tell the asker's plans ("want to do an AWS cert + a course"); the whole message
    when none ends with a question mark. A tool or a vendor named in passing does not count as asked."""
    parts = [p for p in re.split(r"(?<=[.?!؟])\s+", question.strip()) if p]
    asking = [p for p in parts if p.rstrip().endswith(("?", "؟"))]
    return " ".join(asking) if asking and len(asking) < len(parts) else question


def _passage_text(p: Passage) -> str:
    """What of a passage can hold a name: its title, heading path and text."""
    return f"{p.title}\n{p.heading}\n{p.text}"


class TenantNames:
    """Per tenant, the names its published documents use (see the module docstring)."""

    def __init__(self, catalog: Any, *, refresh_s: float = REFRESH_S) -> None:
        self.catalog = catalog
        self.refresh_s = refresh_s
        self._built: dict[str, tuple[float, Lexicon]] = {}
        self._rebuilding: dict[str, asyncio.Task[None]] = {}
        self._signature: dict[str, tuple[int, str | None]] = {}

    async def lexicon(self, tenant_id: str) -> Lexicon:
        built = self._built.get(tenant_id)
        if built is None:  # the first turn of a tenant waits for them (questions asked meanwhile share the build)
            await asyncio.shield(self._start_rebuild(tenant_id))
            return self._built[tenant_id][1]
        if time.monotonic() - built[0] > self.refresh_s:
            self._start_rebuild(tenant_id)
        return built[1]

    def _start_rebuild(self, tenant_id: str) -> asyncio.Task[None]:
        task = self._rebuilding.get(tenant_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._rebuild(tenant_id))
            self._rebuilding[tenant_id] = task
            task.add_done_callback(lambda _t: self._rebuilding.pop(tenant_id, None))
        return task

    async def _rebuild(self, tenant_id: str) -> None:
        started = time.perf_counter()
        try:
            signature = await self.catalog.documents_signature(tenant_id=tenant_id)
            built = self._built.get(tenant_id)
            if built is not None and self._signature.get(tenant_id) == signature:
                self._built[tenant_id] = (time.monotonic(), built[1])  # nothing published since
                return
            rows = await self.catalog.published_texts(tenant_id=tenant_id)
            lexicon = await asyncio.to_thread(build_lexicon, _by_document(rows))
        except Exception as exc:  # the gate then knows only the names its passages use
            log.warning("tenant names for %s not rebuilt: %s", tenant_id, type(exc).__name__)
            if tenant_id not in self._built:
                self._built[tenant_id] = (time.monotonic(), EMPTY)
            return
        self._built[tenant_id] = (time.monotonic(), lexicon)
        self._signature[tenant_id] = signature
        log.debug("tenant names for %s: %d names from %d chunks in %.0f ms", tenant_id, len(lexicon.names), len(rows),
                  (time.perf_counter() - started) * 1000)


def _by_document(rows: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, list[str]]]:
    out: dict[str, tuple[str, str, list[str]]] = {}
    for doc_id, title, text in rows:
        out.setdefault(doc_id, (doc_id, title, []))[2].append(text)
    return list(out.values())
