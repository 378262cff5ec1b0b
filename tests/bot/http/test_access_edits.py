"""An edit of the access file reaches `/v1/retrieve` even when it keeps the file's size and modification
time (a same-length edit, times restored as a copy or `touch -d` restores them): the content is compared,
not the file's stat."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from bot.services import open_services
from retrieval.embed import Embedder
from tests.bot.http.conftest import make_api
from tests.conftest import SAMPLE_ACCESS, copy_home, make_settings


async def test_a_same_size_same_mtime_edit_is_followed(tmp_path: Path, handbook_template: Path,
                                                       embedder: Embedder) -> None:
    home = tmp_path / "home"
    copy_home(handbook_template, home)
    access = tmp_path / "access.yml"
    shutil.copy(SAMPLE_ACCESS, access)
    async with open_services(make_settings(home, CAIRN_ACCESS_FILE=access), embedder=embedder) as svc:
        api = make_api(svc)()
        async with api.client:
            assert (await api.retrieve(user="bob")).status_code == 200
            before = access.stat()
            text = access.read_text(encoding="utf-8")
            edited = text.replace("  bob:    {slack_id: U0BOB,", "  bxb:    {slack_id: U0BXB,", 1)
            assert edited != text and len(edited.encode()) == len(text.encode())
            access.write_text(edited, encoding="utf-8")
            os.utime(access, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert (access.stat().st_size, access.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
            await asyncio.sleep(1.2)  # the file is looked at once a second
            refused = await api.retrieve(user="bob")
            assert refused.status_code == 403 and refused.json()["error"] == "context_unknown_user"
