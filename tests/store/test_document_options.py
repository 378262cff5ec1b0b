"""Document options are checked in one place: the CLI's flags and the Slack upload modal use the same rules."""

from __future__ import annotations

from store.document_options import SENSITIVITIES, option_problems, policy_id_problem, sensitivity_problem


def test_known_values_and_unset_values_pass() -> None:
    assert all(sensitivity_problem(s) is None for s in (*SENSITIVITIES, None))
    assert policy_id_problem(None) is None and policy_id_problem("FIN-TRV/2026.1_a") is None
    assert option_problems(sensitivity="internal", policy_id="HR-LV") == {}


def test_unknown_sensitivity_and_odd_policy_ids_say_what_to_do() -> None:
    assert "one of public, internal, confidential" in str(sensitivity_problem("secret"))
    assert "letters, digits" in str(policy_id_problem("FIN TRV"))
    assert "at most 64" in str(policy_id_problem("X" * 65))
    assert set(option_problems(sensitivity="top", policy_id="<b>")) == {"sensitivity", "policy_id"}
