"""Every policy against its good and bad fixtures (fixtures/<module>.yaml): good_* cases report nothing,
bad_* cases report at least one violation containing each `expect` string."""

from __future__ import annotations

import importlib

import pytest

from policies.tests.conftest import fixture_cases, run_policy

CASES = fixture_cases()


@pytest.mark.parametrize("module,name,case", [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in CASES])
def test_policy_fixture_outcome_matches_its_name(module, name, case):
    policy = importlib.import_module(f"policies.{module}").POLICY
    violations = run_policy(policy, case["resources"], case.get("config"))
    messages = "\n".join(m for m, _ in violations)
    if name.startswith("good_"):
        assert violations == [], messages
    else:
        assert violations, f"{module}:{name} reported nothing"
        for expected in case.get("expect") or []:
            assert expected in messages, f"{expected!r} not in:\n{messages}"
