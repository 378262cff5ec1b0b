"""A folder (a shared drive, a git checkout) as a source: every supported regular file inside it (files.py
says what is skipped and why: symlinks out of the folder, devices, other mounts), hidden files and
folders (.git) excluded, identified by its path relative to the folder without extension — the same
identity `cairn ingest FOLDER` gives, so a folder first ingested by hand can be taken over by a sync.

A file whose size and modification time are as last seen, under the same options, is not read again.
A folder that is missing, not a folder, or suddenly empty after holding documents is a listing error:
an unmounted share looks exactly like that, and withdrawing the whole collection would be wrong.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from retrieval.ingest import IngestError, default_doc_id, validate_doc_id
from retrieval.parse import SUPPORTED_SUFFIXES
from retrieval.sync.files import list_source_files
from retrieval.sync.model import CONTENT, ERROR, GONE, NOT_MODIFIED, SKIPPED, Fetched, ListingError
from store.sources import SourceItem

OK_RESULTS = ("new", "changed", "unchanged", "not_modified")


class DirectoryLister:
    def __init__(self, root: Path, *, options_key: str) -> None:
        self.root = root
        self.options_key = options_key  # changing groups or owner must re-submit every file

    async def scan(self, known: dict[str, SourceItem]) -> list[Fetched]:
        return await asyncio.to_thread(self._list, known)

    def _list(self, known: dict[str, SourceItem]) -> list[Fetched]:
        root = self.root
        if not root.exists():
            raise ListingError(f"the folder {root} does not exist (not mounted?)")
        if not root.is_dir():
            raise ListingError(f"{root} is not a folder")
        try:
            files, skipped = list_source_files(root, SUPPORTED_SUFFIXES)
        except OSError as exc:
            raise ListingError(f"the folder {root} could not be listed ({exc.strerror or exc})") from exc
        live = {key for key, item in known.items() if item.state != "withdrawn"}
        if not files and not skipped and live:
            raise ListingError(f"the folder {root} is empty but held {len(live)} documents (not mounted?); "
                               "nothing was withdrawn")
        out: list[Fetched] = []
        seen: set[str] = set()
        for skip in skipped:  # a file that was synced and now leads outside is withdrawn, like a deleted one
            key = skip.path.relative_to(root).as_posix()
            seen.add(key)
            out.append(Fetched(key=key, doc_id="", result=SKIPPED, filename=key, message=skip.reason))
        for file in files:
            key = file.relative_to(root).as_posix()
            seen.add(key)
            try:
                doc_id = validate_doc_id(default_doc_id(file, root))
            except IngestError as exc:
                out.append(Fetched(key=key, doc_id="", result=ERROR, filename=key, message=str(exc)))
                continue
            try:
                stat = file.stat()
                validator = f"{stat.st_size}:{stat.st_mtime_ns}:{self.options_key}"
                item = known.get(key)
                if (item is not None and item.state == "present" and item.validator == validator
                        and item.last_result in OK_RESULTS and item.doc_id == doc_id):
                    out.append(Fetched(key=key, doc_id=doc_id, result=NOT_MODIFIED, filename=key,
                                       validator=validator))
                    continue
            except OSError as exc:
                out.append(Fetched(key=key, doc_id=doc_id, result=ERROR, filename=key,
                                   message=f"cannot read file: {exc.strerror or exc}"))
                continue
            out.append(Fetched(key=key, doc_id=doc_id, result=CONTENT, filename=key, path=file,
                               validator=validator))
        out.extend(Fetched(key=key, doc_id=known[key].doc_id, result=GONE, filename=key,
                           message="the file was deleted or renamed")
                   for key in sorted(live - seen))
        return out
