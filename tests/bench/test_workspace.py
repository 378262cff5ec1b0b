"""The bench workspace keeps each section's writes out of the corpora other sections score."""

from __future__ import annotations

from pathlib import Path


def test_the_slack_sections_users_read_a_tenant_of_their_own(tmp_path: Path) -> None:
    """What the Slack sections ingest to have something to answer (the sample handbook, a 20 MB upload)
    goes to their workspace's tenant, never to the handbooks' one the answer sets are scored on."""
    from bench.slack_ack import TEAM
    from bench.workspace import ACK_TENANT, DEFAULT_TENANT, write_access_file
    from store.access import AccessPolicy

    access = AccessPolicy.load(write_access_file(tmp_path / "access.yml"))
    assert access.resolve_slack(user_id="U00001", team_id=TEAM).tenant_id == ACK_TENANT != DEFAULT_TENANT
    assert access.resolve_cli(None).tenant_id == DEFAULT_TENANT
