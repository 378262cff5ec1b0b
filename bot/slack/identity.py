"""Slack user → Scope. The access file decides; Slack only says who the user is.

Inputs: the user id, the workspace the event says they belong to, `users.info` (guest flags, home
team, stranger) and the Slack user groups the access file maps (`usergroups.users.list`). Message
text never enters. Results are cached for `ttl_s` seconds (dropped at once when the access file is
reloaded); a failed lookup is not cached and fails
closed (customer audience) rather than granting staff access on a guess.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from store.access import AccessPolicy
from store.records import Scope

log = logging.getLogger(__name__)

# How long what Slack says about a user (guest flag, home team, user groups) is trusted. Access-file
# changes do not wait for it: a reload drops every cached scope (see resolve).
DEFAULT_TTL_S = 60.0


@dataclass(frozen=True)
class SlackUser:
    user_id: str
    team_id: str | None
    name: str
    is_guest: bool
    is_stranger: bool
    is_bot: bool


class IdentityResolver:
    def __init__(self, *, access: AccessPolicy, client: AsyncWebClient, home_team_id: str | None = None,
                 ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._access = access
        self._client = client
        self._home_team_id = home_team_id
        self._ttl = ttl_s
        self._clock = clock
        self._scopes: dict[tuple[str, str | None], tuple[float, Scope]] = {}
        self._users: dict[str, tuple[float, SlackUser]] = {}
        self._groups: tuple[float, dict[str, frozenset[str]]] | None = None
        self._lock = asyncio.Lock()
        self._generation = access.generation

    async def home_team_id(self) -> str | None:
        """The installing workspace (auth.test), looked up once."""
        if self._home_team_id is None:
            try:
                self._home_team_id = (await self._client.auth_test()).get("team_id")
            except SlackApiError as exc:
                log.warning("auth.test failed: %s", exc)
        return self._home_team_id

    async def resolve(self, user_id: str, *, event_team_id: str | None = None) -> Scope:
        """`event_team_id`: the user's workspace as the event reports it (`user_team`, else `team`)."""
        self._follow_access_file()
        key = (user_id, event_team_id)
        cached = self._scopes.get(key)
        if cached and cached[0] > self._clock():
            return cached[1]
        home = await self.home_team_id()
        user = await self.user(user_id)
        if user is None:  # users.info failed: we cannot tell a guest from staff, so assume the least
            return self._access.resolve_slack(user_id=user_id, team_id=home, is_guest=True)
        # The user's own home team decides their tenant (an event carries the team it happened in, which
        # for a member of another tenant's workspace is not theirs); the event's team is the fallback.
        user_team = user.team_id or event_team_id
        foreign = {t for t in (event_team_id, user.team_id) if t and home and t != home}
        external = user.is_stranger or any(t not in self._access.workspaces for t in foreign)
        if external or user.is_guest:
            # Customers of the workspace that installed Cairn: never the tenant of their own team.
            scope = self._access.resolve_slack(user_id=user_id, team_id=home, is_guest=True)
        else:
            groups = await self.slack_groups_of(user_id)
            scope = self._access.resolve_slack(user_id=user_id, team_id=user_team or home, slack_groups=groups)
        if scope.display_name is None:
            scope = replace(scope, display_name=user.name)
        self._scopes[key] = (self._clock() + self._ttl, scope)
        return scope

    async def user(self, user_id: str) -> SlackUser | None:
        cached = self._users.get(user_id)
        if cached and cached[0] > self._clock():
            return cached[1]
        try:
            info = (await self._client.users_info(user=user_id)).get("user") or {}
        except SlackApiError as exc:
            log.warning("users.info %s failed: %s", user_id, exc)
            return None
        profile = info.get("profile") or {}
        name = (profile.get("display_name") or profile.get("real_name") or info.get("real_name")
                or info.get("name") or user_id)
        user = SlackUser(user_id=user_id, team_id=info.get("team_id"), name=str(name),
                         is_guest=bool(info.get("is_restricted") or info.get("is_ultra_restricted")),
                         is_stranger=bool(info.get("is_stranger")), is_bot=bool(info.get("is_bot")))
        self._users[user_id] = (self._clock() + self._ttl, user)
        return user

    async def display_name(self, user_id: str) -> str:
        entry = self._access.find_user(user_id)
        user = await self.user(user_id)
        return user.name if user else (entry.name if entry else user_id)

    async def slack_groups_of(self, user_id: str) -> list[str]:
        """The mapped Slack user groups this user belongs to (one cached list per group)."""
        if not self._access.slack_usergroups:
            return []
        async with self._lock:
            if self._groups is None or self._groups[0] <= self._clock():
                members: dict[str, frozenset[str]] = {}
                for group_id in self._access.slack_usergroups:
                    try:
                        resp = await self._client.usergroups_users_list(usergroup=group_id)
                        members[group_id] = frozenset(resp.get("users") or [])
                    except SlackApiError as exc:
                        log.warning("usergroups.users.list %s failed: %s", group_id, exc)
                self._groups = (self._clock() + self._ttl, members)
            groups = self._groups[1]
        return sorted(g for g, users in groups.items() if user_id in users)

    def _follow_access_file(self) -> None:
        """Revocation in the access file is immediate: a reloaded file drops every cached scope."""
        self._access.refresh()
        if self._access.generation != self._generation:
            self._generation = self._access.generation
            self._scopes.clear()

    def forget(self, user_id: str | None = None) -> None:
        """Drop cached scopes (all, or one user's): after an access-file reload, for instance."""
        if user_id is None:
            self._scopes.clear()
            self._users.clear()
            self._groups = None
            return
        self._users.pop(user_id, None)
        for key in [k for k in self._scopes if k[0] == user_id]:
            del self._scopes[key]
