"""Hypothesis profiles for the fuzz suite: `make test` runs a short pass (a couple of minutes on two
cores, derandomized so a failure reproduces); `make fuzz` (CAIRN_FUZZ=long) runs many more examples
with fresh randomness and prints Hypothesis's statistics: how many inputs each property was tried on."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", max_examples=int(os.environ.get("CAIRN_FUZZ_EXAMPLES", "2000")), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("long" if os.environ.get("CAIRN_FUZZ") == "long" else "ci")
