"""Who reads what Cairn posts in a conversation, as one scope.

An answer in a DM is read by the asker alone: their own scope. An answer in a channel thread is read by
every member of the channel, so it is computed from what all of them may read:
- a public channel of the tenant: its `everyone` documents;
- a shared channel (Slack Connect): the customer audience;
- a private channel or a group DM: the intersection of its members' scopes (`conversations.members`).
Results are cached for `ttl_s`; a lookup that fails gives the customer audience (fail closed).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.identity import IdentityResolver
from store.access import EVERYONE, AccessPolicy
from store.records import Scope

log = logging.getLogger(__name__)

DEFAULT_TTL_S = 60.0
MAX_MEMBERS = 500  # a private channel larger than this is treated like a public one: `everyone` only


class ChannelAudience:
    def __init__(self, *, client: AsyncWebClient, identity: IdentityResolver, access: AccessPolicy,
                 ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._identity = identity
        self._access = access
        self._ttl = ttl_s
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, Scope]] = {}
        self._generation = access.generation
        self._bot_user_id: str | None = None

    async def scope_for(self, *, channel: str, asker: Scope) -> Scope:
        """The scope an answer posted in `channel` may use, for a question from `asker`."""
        if channel.startswith("D"):
            return asker
        if self._access.generation != self._generation:  # the access file changed: members' scopes too
            self._generation = self._access.generation
            self._cache.clear()
        key = (channel, asker.user_id)
        cached = self._cache.get(key)
        if cached and cached[0] > self._clock():
            return cached[1]
        scope = await self._compute(channel, asker)
        self._cache[key] = (self._clock() + self._ttl, scope)
        return scope

    def forget(self) -> None:
        self._cache.clear()

    def _customer(self, asker: Scope) -> Scope:
        return replace(asker, groups=frozenset({self._access.customer_group}), audience="customer", is_admin=False)

    def _everyone(self, asker: Scope) -> Scope:
        if asker.audience != "staff":
            return self._customer(asker)
        return replace(asker, groups=frozenset({EVERYONE}) & asker.groups or frozenset({EVERYONE}), is_admin=False)

    async def _compute(self, channel: str, asker: Scope) -> Scope:
        try:
            info = (await self._client.conversations_info(channel=channel)).get("channel") or {}
        except SlackApiError as exc:
            log.warning("conversations.info %s failed (%s): answering for the customer audience", channel,
                        exc.response.get("error"))
            return self._customer(asker)
        if info.get("is_im"):
            return asker
        if info.get("is_ext_shared") or info.get("is_pending_ext_shared") or info.get("is_shared"):
            return self._customer(asker)
        if not (info.get("is_private") or info.get("is_mpim")):
            return self._everyone(asker)
        members = await self._members(channel)
        if members is None or len(members) > MAX_MEMBERS:
            return self._everyone(asker) if members is not None else self._customer(asker)
        return await self._intersection(asker, members)

    async def _members(self, channel: str) -> list[str] | None:
        members: list[str] = []
        cursor = None
        try:
            while True:
                resp = await self._client.conversations_members(channel=channel, cursor=cursor, limit=200)
                members.extend(str(m) for m in resp.get("members") or [])
                cursor = (resp.get("response_metadata") or {}).get("next_cursor")
                if not cursor or len(members) > MAX_MEMBERS:
                    return members
        except SlackApiError as exc:
            log.warning("conversations.members %s failed (%s)", channel, exc.response.get("error"))
            return None

    async def _bot(self) -> str | None:
        if self._bot_user_id is None:
            try:
                self._bot_user_id = (await self._client.auth_test()).get("user_id")
            except SlackApiError as exc:
                log.warning("auth.test failed: %s", exc)
        return self._bot_user_id

    async def _intersection(self, asker: Scope, members: list[str]) -> Scope:
        groups = set(asker.groups)
        bot = await self._bot()
        for member in members:
            if member in (asker.user_id, bot):
                continue
            user = await self._identity.user(member)
            if user is not None and user.is_bot:
                continue
            scope = await self._identity.resolve(member)
            if scope.audience != "staff" or scope.tenant_id != asker.tenant_id:
                return self._customer(asker)
            groups &= scope.groups
        if asker.audience != "staff":
            return self._customer(asker)
        return replace(asker, groups=frozenset(groups | {EVERYONE}) if groups else frozenset({EVERYONE}),
                       is_admin=False)
