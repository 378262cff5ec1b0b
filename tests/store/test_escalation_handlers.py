"""`AccessPolicy.can_handle_escalations`: the one rule every surface asks who may list, answer, claim and
resolve escalations."""

from __future__ import annotations

from store.access import AccessPolicy
from store.records import Scope
from tests.conftest import SAMPLE_ACCESS

TENANTS = {"tenants": {"larkspur": {"groups": ["finance"]}, "harbor": {}},
           "workspaces": {"T0LARK": "larkspur", "T0HARBOR": "harbor"}, "default_tenant": "larkspur"}


def slack(policy: AccessPolicy, user: str, *, team: str = "T0LARK", guest: bool = False) -> Scope:
    return policy.resolve_slack(user_id=user, team_id=team, is_guest=guest)


def test_with_admins_named_only_they_and_owners_in_their_own_channel_may() -> None:
    policy = AccessPolicy.load(SAMPLE_ACCESS)
    admin, bob, olivia = (policy.resolve_slack(user_id=u, team_id="T0LARKSPUR") for u in ("U0ADMIN", "U0BOB", "U0OLIVIA"))
    assert policy.can_handle_escalations(admin) and policy.can_handle_escalations(admin, tenant_id="harbor")
    assert not policy.can_handle_escalations(bob, tenant_id="larkspur")
    assert not policy.can_handle_escalations(bob, tenant_id="larkspur", in_owner_channel=True)
    assert policy.can_handle_escalations(olivia, tenant_id="larkspur", in_owner_channel=True)
    assert not policy.can_handle_escalations(olivia, tenant_id="larkspur")  # the main escalation channel
    assert not policy.can_handle_escalations(olivia, tenant_id="harbor", in_owner_channel=True)


def test_with_no_admins_named_any_staff_member_of_the_tenant_may() -> None:
    policy = AccessPolicy.from_mapping(TENANTS)
    member = slack(policy, "U0ANYONE")
    assert policy.can_handle_escalations(member) and policy.can_handle_escalations(member, tenant_id="larkspur")
    assert not policy.can_handle_escalations(member, tenant_id="harbor")


def test_guests_and_other_workspaces_never_may_even_with_no_admins_named() -> None:
    policy = AccessPolicy.from_mapping(TENANTS)
    guest = slack(policy, "U0GUEST", guest=True)
    stranger = slack(policy, "U0OTHER", team="T0ELSEWHERE")
    for scope in (guest, stranger):
        assert scope.audience == "customer"
        assert not policy.can_handle_escalations(scope)
        assert not policy.can_handle_escalations(scope, tenant_id=scope.tenant_id, in_owner_channel=True)


def test_the_cli_local_operator_may() -> None:
    for policy in (AccessPolicy.load(SAMPLE_ACCESS), AccessPolicy.from_mapping(TENANTS)):
        assert policy.can_handle_escalations(policy.resolve_cli(None), tenant_id="harbor")
