"""tests/fake_slack.FakeSlack plus the three steps of files_upload_v2 (get URL, upload, complete)."""

from __future__ import annotations

import itertools
from typing import Any

from aiohttp import web

from tests.fake_slack import Call, FakeSlack


class FakeSlackWithFiles(FakeSlack):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.uploads: dict[str, bytes] = {}
        self.shared: list[dict[str, Any]] = []  # completed uploads: file id, title, channel
        self._file_ids = itertools.count(1)

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if method.startswith("upload."):  # the upload URL files.getUploadURLExternal handed out
            file_id = method.removeprefix("upload.")
            self.uploads[file_id] = await request.read()
            await self._record(Call("file.upload", {"file_id": file_id, "bytes": len(self.uploads[file_id])}))
            return web.Response(text=f"OK - {len(self.uploads[file_id])}")
        return await super()._handle(request)

    def _m_files_getUploadURLExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{next(self._file_ids):04d}"
        return {"ok": True, "file_id": file_id, "upload_url": f"{self.url}upload.{file_id}"}

    def _m_files_completeUploadExternal(self, p: dict[str, Any]) -> dict[str, Any]:
        import json

        files = p.get("files")
        files = json.loads(files) if isinstance(files, str) else files or []
        for f in files:
            self.shared.append({"id": f["id"], "title": f.get("title"), "channel": p.get("channel_id")})
        return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}

    def _m_files_info(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "file": {"id": p.get("file"), "name": "chart.png", "mimetype": "image/png"}}
