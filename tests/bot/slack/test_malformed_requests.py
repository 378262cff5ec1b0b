"""A correctly signed Slack request whose body is not the JSON it claims to be: 400, logged, and the
app goes on serving. Signed, because an unsigned one is refused (401) before its body is read."""

from __future__ import annotations

import json
import logging
from urllib.parse import urlencode

import pytest

from bot.slack.http_events import unreadable
from tests.bot.conftest import Cairn

MALFORMED = [
    ("{not json", "application/json"),
    (urlencode({"payload": "{not json"}), "application/x-www-form-urlencoded"),  # an interactive payload
    (urlencode({"payload": json.dumps(["a", "list"])}), "application/x-www-form-urlencoded"),
]


@pytest.mark.parametrize(("body", "content_type"), MALFORMED, ids=["event-json", "payload-json", "payload-list"])
async def test_a_signed_request_with_malformed_json_gets_400_and_the_app_serves_on(
        cairn: Cairn, caplog: pytest.LogCaptureFixture, body: str, content_type: str) -> None:
    with caplog.at_level(logging.WARNING):
        response = await cairn.post(body, content_type=content_type)
    assert response.status_code == 400, response.text
    [logged] = [r for r in caplog.records if r.getMessage().startswith("slack.malformed_request")]
    assert logged.content_type == content_type and logged.bytes == len(body)
    assert logged.content == body  # kept for an operator who logs content, dropped otherwise

    answered = await cairn.event(cairn.message("What is the per diem for meals?"))
    assert answered.status_code == 200
    await cairn.fake.wait_for("chat.update", lambda c: c.channel == "D0BOB" and "[1]" in c.text, within=60)


async def test_an_unsigned_malformed_request_is_still_refused_as_unsigned(cairn: Cairn) -> None:
    assert (await cairn.post("{not json", content_type="application/json", signed=False)).status_code == 401


def test_what_bolt_cannot_read() -> None:
    json_headers = {"content-type": "application/json"}
    assert unreadable(b'{"type": "url_verification"}', json_headers) is None
    assert unreadable("{\"text\": \"caf\u00e9\"}".encode(), json_headers) is None
    assert unreadable(b"\xff\xfe{}", json_headers) == "not UTF-8"
    assert (unreadable(b"[1, 2]", json_headers) or "").startswith("JSON, but not an object")
    assert unreadable(b"command=%2Fcairn&text=hi", {"content-type": "application/x-www-form-urlencoded"}) is None
