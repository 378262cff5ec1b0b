"""Slack listeners, one module per surface, each with `register(app, services)`."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.slack.context import SlackServices
from bot.slack.listeners import actions, commands, documents, home, mentions, messages, proposals, shortcuts

SURFACES = (messages, mentions, actions, commands, home, documents, shortcuts, proposals)


def register_listeners(app: AsyncApp, services: SlackServices) -> None:
    for surface in SURFACES:
        surface.register(app, services)
