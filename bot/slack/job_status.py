"""The status message of an upload, kept in step with its ingestion job by the server's worker.

`JobStatusNotifier` is the worker's `on_progress`: at each step it renders the job row (never the
event) and updates the message named in the job's `notify` column with `chat.update`, only when what
the owner would read changes. What was last shown is stored back in `notify`, so the updates are
idempotent across retries and restarts; `catch_up` renders recent jobs again after each worker pass,
so a job that finished while Slack was unreachable, or whose process died between its last step and
the update, still brings its message to the final state. Notifications are a convenience over the
authoritative row: a Slack failure here never fails the job.
"""

from __future__ import annotations

import hashlib
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.document_views import build_job_status
from store.jobs import Jobs
from store.records import JobRecord

log = logging.getLogger(__name__)

CATCH_UP_JOBS = 50
# chat.update errors that will not go away by trying again: stop trying for that state.
GIVE_UP_ERRORS = frozenset({"message_not_found", "channel_not_found", "cant_update_message", "edit_window_closed",
                            "is_archived", "not_in_channel", "account_inactive", "invalid_auth", "msg_too_long"})


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class JobStatusNotifier:
    def __init__(self, *, client: AsyncWebClient, jobs: Jobs) -> None:
        self._client = client
        self._jobs = jobs

    async def __call__(self, job: JobRecord, state: str) -> None:
        """The ingestion worker's progress callback. Never raises: the job goes on whatever Slack does."""
        if not job.notify:
            return
        try:
            await self.refresh(job.job_id)
        except Exception:
            log.exception("job %s: status message not updated", job.job_id)

    async def refresh(self, job_id: str) -> bool:
        """Render the job's current row into its status message if that changes what it says."""
        job = await self._jobs.get(job_id=job_id)
        return await self._show(job) if job else False

    async def _show(self, job: JobRecord) -> bool:
        notify = job.notify
        if not notify or not notify.get("channel") or not notify.get("ts"):
            return False
        message = build_job_status(job, max_attempts=self._jobs.max_attempts)
        shown = _fingerprint(message["text"])
        if notify.get("shown") == shown:
            return False
        try:
            await self._client.chat_update(channel=str(notify["channel"]), ts=str(notify["ts"]), **message)
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error not in GIVE_UP_ERRORS:
                log.warning("job %s: chat.update failed (%s); trying again later", job.job_id, error)
                return False
            log.info("job %s: status message cannot be updated (%s)", job.job_id, error)
        await self._jobs.set_notify(job_id=job.job_id, notify={**notify, "shown": shown})
        return True

    async def catch_up(self, *, limit: int = CATCH_UP_JOBS) -> int:
        """Bring the recent jobs' status messages up to date with their rows; returns how many changed."""
        changed = 0
        for job in await self._jobs.list(limit=limit):
            if job.notify:
                try:
                    changed += await self._show(job)
                except Exception:
                    log.exception("job %s: status message not updated", job.job_id)
        return changed
