"""The access file: tenants, groups, users, admins, owners. Identity → Scope happens here only.

Product defaults (each overridable in the file): an unlisted member of the installing workspace
gets the default tenant and its `everyone` group; guests and users of other workspaces get the
customer audience only; documents ingested without groups are visible to `everyone`.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

import yaml

from store.records import Scope

EVERYONE = "everyone"
RELOAD_CHECK_S = 1.0  # how often a running process compares the access file's content with what it loaded

log = logging.getLogger(__name__)


class AccessFileError(ValueError):
    pass


@dataclass(frozen=True)
class UserEntry:
    name: str
    slack_id: str | None
    tenant: str
    groups: frozenset[str]
    role: str | None = None


@dataclass(frozen=True)
class OwnerEntry:
    user: str
    tenant: str
    groups: frozenset[str]
    channel: str | None


@dataclass(frozen=True)
class AccessPolicy:
    default_tenant: str = "default"
    customer_group: str = "customer"
    workspaces: dict[str, str] = field(default_factory=dict)
    tenants: dict[str, frozenset[str]] = field(default_factory=dict)
    users: dict[str, UserEntry] = field(default_factory=dict)
    admins: frozenset[str] = frozenset()
    owners: tuple[OwnerEntry, ...] = ()
    slack_usergroups: dict[str, str] = field(default_factory=dict)
    digest_channels: dict[str, str] = field(default_factory=dict)  # tenant → its leads' weekly digest channel
    # Where it was read from, so a running process follows edits (refresh); bumped on every reload.
    source: Path | None = field(default=None, compare=False, repr=False)
    generation: int = field(default=0, compare=False)
    _stamp: str | None = field(default=None, compare=False, repr=False)  # the content's digest
    _checked_at: float = field(default=0.0, compare=False, repr=False)

    @classmethod
    def load(cls, path: Path | None) -> AccessPolicy:
        if path is None:
            return cls(tenants={"default": frozenset({EVERYONE, "customer"})})
        try:
            data = path.read_bytes()
            stamp = _digest(data)
            raw = yaml.safe_load(data.decode("utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise AccessFileError(f"cannot read access file {path}: {exc}") from exc
        policy = cls.from_mapping(raw)
        object.__setattr__(policy, "source", path)
        object.__setattr__(policy, "_stamp", stamp)
        return policy

    def refresh(self, *, now: float | None = None) -> bool:
        """Re-read the file when it changed (looked at once per RELOAD_CHECK_S); True when the policy did.

        Everyone holding this object sees the new policy at once: revoking a group in the file takes
        effect on the next question, without a restart. A file that no longer parses keeps the last good
        policy, and the log says why.
        """
        if self.source is None:
            return False
        now = time.monotonic() if now is None else now
        if now - self._checked_at < RELOAD_CHECK_S:
            return False
        object.__setattr__(self, "_checked_at", now)
        stamp = _stamp_of(self.source)
        if stamp is None or stamp == self._stamp:
            return False
        try:
            fresh = AccessPolicy.load(self.source)
        except AccessFileError as exc:
            log.error("access file not reloaded, the previous one stays in force: %s", exc)
            object.__setattr__(self, "_stamp", stamp)
            return False
        for f in fields(self):
            if f.compare:  # the policy itself, not where it came from
                object.__setattr__(self, f.name, getattr(fresh, f.name))
        object.__setattr__(self, "_stamp", fresh._stamp)
        object.__setattr__(self, "generation", self.generation + 1)
        log.info("access file reloaded: %s", self.source)
        return True

    @classmethod
    def from_mapping(cls, raw: dict) -> AccessPolicy:
        if not isinstance(raw, dict):
            raise AccessFileError("access file must be a mapping")
        default_tenant = str(raw.get("default_tenant", "default"))
        customer_group = str(raw.get("customer_group", "customer"))
        tenants = {str(t): frozenset({EVERYONE, customer_group, *map(str, (spec or {}).get("groups", []))})
                   for t, spec in (raw.get("tenants") or {}).items()}
        tenants.setdefault(default_tenant, frozenset({EVERYONE, customer_group}))
        users: dict[str, UserEntry] = {}
        for name, spec in (raw.get("users") or {}).items():
            spec = spec or {}
            tenant = str(spec.get("tenant", default_tenant))
            if tenant not in tenants:
                raise AccessFileError(f"user {name}: unknown tenant {tenant!r}")
            groups = frozenset(map(str, spec.get("groups") or [EVERYONE]))
            unknown = groups - tenants[tenant]
            if unknown:
                raise AccessFileError(f"user {name}: groups {sorted(unknown)} are not defined for tenant {tenant}")
            users[str(name)] = UserEntry(name=str(name), slack_id=spec.get("slack_id"), tenant=tenant,
                                         groups=groups, role=spec.get("role"))
        owners = tuple(
            OwnerEntry(user=str(o["user"]), tenant=str(o.get("tenant", default_tenant)),
                       groups=frozenset(map(str, o.get("groups") or [])), channel=o.get("channel"))
            for o in raw.get("owners") or []
        )
        return cls(
            default_tenant=default_tenant,
            customer_group=customer_group,
            workspaces={str(k): str(v) for k, v in (raw.get("workspaces") or {}).items()},
            tenants=tenants,
            users=users,
            admins=frozenset(map(str, raw.get("admins") or [])),
            owners=owners,
            slack_usergroups={str(k): str(v) for k, v in (raw.get("slack_usergroups") or {}).items()},
            digest_channels={str(t): str(spec["digest_channel"]) for t, spec in (raw.get("tenants") or {}).items()
                             if isinstance(spec, dict) and spec.get("digest_channel")},
        )

    # -- lookups ------------------------------------------------------------------------------

    def groups_of(self, tenant: str) -> frozenset[str]:
        """A tenant's groups; one the file does not list has just `everyone` and the customer group."""
        return self.tenants.get(tenant, frozenset({EVERYONE, self.customer_group}))

    def find_user(self, key: str) -> UserEntry | None:
        """By name (`--as alice`) or by Slack user id."""
        if key in self.users:
            return self.users[key]
        return next((u for u in self.users.values() if u.slack_id == key), None)

    def is_admin(self, user_key: str) -> bool:
        entry = self.find_user(user_key)
        ids = {user_key} | ({entry.name, entry.slack_id} if entry else set())
        return bool(ids & self.admins) or bool(entry and entry.role == "admin")

    def digest_channel_for(self, tenant: str, *, fallback: str | None = None) -> str | None:
        """Where a tenant's weekly digest goes: its own `digest_channel`; `fallback` (CAIRN_DIGEST_CHANNEL)
        for the default tenant only, so one tenant's questions never reach another's leads."""
        return self.digest_channels.get(tenant) or (fallback if tenant == self.default_tenant else None)

    def admin_slack_ids(self) -> tuple[str, ...]:
        """The Slack ids of the named admins, in file order: who is told directly when no channel takes an
        escalation."""
        ids = [a for a in self.admins if a[:1] in ("U", "W") and a.isupper()]
        for entry in self.users.values():
            if entry.slack_id and (entry.role == "admin" or entry.name in self.admins or entry.slack_id in self.admins):
                ids.append(entry.slack_id)
        return tuple(dict.fromkeys(sorted(ids)))

    @property
    def admins_listed(self) -> bool:
        return bool(self.admins) or any(u.role == "admin" for u in self.users.values())

    def can_handle_escalations(self, scope: Scope, *, tenant_id: str | None = None,
                               in_owner_channel: bool = False) -> bool:
        """The one rule for who may list, answer, claim and resolve escalations, on every surface.

        Never a guest or a user of another workspace (the customer audience). With admins named in the
        file: those admins, and, for a thread in an owner's channel, the owners of that tenant's
        documents. With no admins named: any staff member of the escalation's tenant.
        """
        if scope.audience != "staff":
            return False
        if scope.is_admin or self.is_admin(scope.user_id):
            return True
        same_tenant = tenant_id is None or tenant_id == scope.tenant_id
        if not self.admins_listed:
            return same_tenant
        return same_tenant and in_owner_channel and bool(self.owned_groups(scope.user_id, scope.tenant_id))

    def owned_groups(self, user_key: str, tenant: str) -> frozenset[str]:
        entry = self.find_user(user_key)
        ids = {user_key} | ({entry.name, entry.slack_id} if entry else set())
        groups: set[str] = set()
        for owner in self.owners:
            if owner.user in ids and owner.tenant == tenant:
                groups |= owner.groups
        return frozenset(groups)

    def channels_of_owner(self, user_key: str, tenant: str) -> tuple[str, ...]:
        """The channels the access file gives this owner in this tenant, in file order."""
        entry = self.find_user(user_key)
        ids = {user_key} | ({entry.name, entry.slack_id} if entry else set())
        found = [o.channel for o in self.owners if o.user in ids and o.tenant == tenant and o.channel]
        return tuple(dict.fromkeys(found))

    def owner_channels(self, tenant: str) -> frozenset[str]:
        """Every channel some owner of this tenant is reached at."""
        return frozenset(o.channel for o in self.owners if o.tenant == tenant and o.channel)

    def owner_channel_for(self, tenant: str, groups: Iterable[str]) -> str | None:
        wanted = set(groups)
        for owner in self.owners:
            if owner.tenant == tenant and owner.channel and owner.groups & wanted:
                return owner.channel
        return None

    # -- identity → scope -----------------------------------------------------------------------

    def resolve_cli(self, as_user: str | None) -> Scope:
        """The CLI acts as a local member of the default tenant unless `--as` names a user."""
        if as_user is None:
            return Scope(user_id="local", tenant_id=self.default_tenant, groups=frozenset({EVERYONE}),
                         is_admin=True, display_name="local")
        entry = self.find_user(as_user)
        if entry is None:
            raise AccessFileError(f"unknown user {as_user!r}: not in the access file")
        return self._scope_for(entry, entry.slack_id or entry.name, extra_groups=())

    def resolve_slack(self, *, user_id: str, team_id: str | None, is_guest: bool = False,
                      slack_groups: Iterable[str] = ()) -> Scope:
        """Slack user id (+ their workspace and Slack user groups) → scope. Never from message text."""
        home_tenant = self.workspaces.get(team_id or "", None)
        external = team_id is not None and bool(self.workspaces) and home_tenant is None
        if external or is_guest:
            tenant = self.default_tenant if external or home_tenant is None else home_tenant
            return Scope(user_id=user_id, tenant_id=tenant, groups=frozenset({self.customer_group}),
                         audience="customer")
        entry = self.find_user(user_id)
        if entry is not None and home_tenant is not None and entry.tenant != home_tenant:
            # A listing applies in its own tenant's workspace only; elsewhere the id is unknown.
            entry = None
        mapped = tuple(self.slack_usergroups[g] for g in slack_groups if g in self.slack_usergroups)
        if entry is None:
            tenant = home_tenant or self.default_tenant
            allowed = self.tenants.get(tenant, frozenset({EVERYONE}))
            return Scope(user_id=user_id, tenant_id=tenant,
                         groups=frozenset({EVERYONE, *(g for g in mapped if g in allowed)}),
                         is_admin=self.is_admin(user_id))
        return self._scope_for(entry, user_id, extra_groups=mapped)

    def _scope_for(self, entry: UserEntry, user_id: str, *, extra_groups: Iterable[str]) -> Scope:
        allowed = self.tenants.get(entry.tenant, frozenset())
        groups = set(entry.groups) | {g for g in extra_groups if g in allowed}
        customer = groups == {self.customer_group}
        if not customer:
            groups.add(EVERYONE)
        return Scope(user_id=user_id, tenant_id=entry.tenant, groups=frozenset(groups),
                     audience="customer" if customer else "staff", is_admin=self.is_admin(entry.name),
                     display_name=entry.name)


def _stamp_of(path: Path) -> str | None:
    """The file's content digest: an edit is seen even when it keeps the size and the modification time
    (a same-length edit restored with `touch -d`, a copy that preserves times)."""
    try:
        return _digest(path.read_bytes())
    except OSError:
        return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
