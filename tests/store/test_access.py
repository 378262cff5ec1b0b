"""The access file: parsing, validation, CLI identities, admins and owners.

Slack identity → scope, and what each scope may retrieve, is covered by
tests/retrieval/test_access_suite.py against the ingested sample handbook.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from store.access import EVERYONE, AccessFileError, AccessPolicy
from tests.conftest import SAMPLE_ACCESS


@pytest.fixture(scope="module")
def policy() -> AccessPolicy:
    return AccessPolicy.load(SAMPLE_ACCESS)


def test_sample_file_loads_with_its_tenants_and_users(policy: AccessPolicy) -> None:
    assert policy.default_tenant == "larkspur"
    assert policy.customer_group == "customer"
    assert policy.workspaces == {"T0LARKSPUR": "larkspur", "T0HARBOR": "harbor"}
    assert {"everyone", "finance", "executives", "customer"} <= policy.tenants["larkspur"]
    assert policy.tenants["harbor"] == frozenset({"everyone", "customer"})
    assert policy.users["hank"].tenant == "harbor"
    assert policy.slack_usergroups["S0EXEC"] == "executives"


def test_no_access_file_means_one_default_tenant() -> None:
    policy = AccessPolicy.load(None)
    assert policy.default_tenant == "default"
    assert policy.tenants == {"default": frozenset({EVERYONE, "customer"})}
    assert policy.resolve_cli(None).tenant_id == "default"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"users": {"x": {"tenant": "nowhere"}}}, "unknown tenant 'nowhere'"),
        ({"tenants": {"acme": {"groups": ["finance"]}}, "users": {"x": {"tenant": "acme", "groups": ["legal"]}}},
         "not defined for tenant acme"),
    ],
)
def test_invalid_users_are_refused_with_the_reason(raw: dict, message: str) -> None:
    with pytest.raises(AccessFileError, match=message):
        AccessPolicy.from_mapping(raw)


def test_unreadable_or_malformed_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AccessFileError, match="cannot read access file"):
        AccessPolicy.load(tmp_path / "missing.yml")
    broken = tmp_path / "broken.yml"
    broken.write_text("users: [unclosed\n")
    with pytest.raises(AccessFileError, match="cannot read access file"):
        AccessPolicy.load(broken)
    listing = tmp_path / "list.yml"
    listing.write_text("- just\n- a list\n")
    with pytest.raises(AccessFileError, match="must be a mapping"):
        AccessPolicy.load(listing)


def test_every_tenant_gets_everyone_and_customer_groups() -> None:
    policy = AccessPolicy.from_mapping({"default_tenant": "acme", "tenants": {"beta": {"groups": ["ops"]}}})
    assert policy.tenants["beta"] == frozenset({"everyone", "customer", "ops"})
    assert policy.tenants["acme"] == frozenset({"everyone", "customer"})  # the default tenant always exists


def test_cli_without_as_is_a_local_member_of_the_default_tenant(policy: AccessPolicy) -> None:
    scope = policy.resolve_cli(None)
    assert (scope.tenant_id, scope.groups, scope.audience) == ("larkspur", frozenset({"everyone"}), "staff")


@pytest.mark.parametrize(
    ("name", "user_id", "tenant", "groups", "audience"),
    [
        ("bob", "U0BOB", "larkspur", {"everyone"}, "staff"),
        ("alice", "U0ALICE", "larkspur", {"everyone", "finance"}, "staff"),
        ("erin", "U0ERIN", "larkspur", {"everyone", "executives"}, "staff"),
        ("carla", "U0CARLA", "larkspur", {"customer"}, "customer"),
        ("hank", "U0HANK", "harbor", {"everyone"}, "staff"),
        ("U0ALICE", "U0ALICE", "larkspur", {"everyone", "finance"}, "staff"),  # by Slack id too
    ],
)
def test_cli_as_resolves_through_the_access_file(policy: AccessPolicy, name: str, user_id: str, tenant: str,
                                                 groups: set[str], audience: str) -> None:
    scope = policy.resolve_cli(name)
    assert (scope.user_id, scope.tenant_id, scope.groups, scope.audience) == (
        user_id, tenant, frozenset(groups), audience)
    assert not scope.is_admin


def test_cli_as_an_unknown_user_is_refused(policy: AccessPolicy) -> None:
    with pytest.raises(AccessFileError, match="unknown user 'mallory'"):
        policy.resolve_cli("mallory")


def test_admins_by_slack_id_or_role(policy: AccessPolicy) -> None:
    assert policy.admins_listed
    assert policy.is_admin("U0ADMIN") and policy.is_admin("adam")
    assert policy.resolve_cli("adam").is_admin
    assert not policy.is_admin("U0BOB") and not policy.is_admin("U0STRANGER")
    by_role = AccessPolicy.from_mapping({"users": {"root": {"slack_id": "U1", "role": "admin"}}})
    assert by_role.is_admin("U1") and by_role.admins_listed
    assert not AccessPolicy.from_mapping({}).admins_listed


def test_owners_and_their_channels(policy: AccessPolicy) -> None:
    assert policy.owned_groups("olivia", "larkspur") == frozenset({"everyone", "finance", "executives"})
    assert policy.owned_groups("U0OLIVIA", "harbor") == frozenset()
    assert policy.owned_groups("bob", "larkspur") == frozenset()
    assert policy.owner_channel_for("larkspur", ["executives"]) == "#finance-policy"
    assert policy.owner_channel_for("larkspur", ["hr"]) == "#people-team"
    assert policy.owner_channel_for("harbor", ["finance"]) is None
