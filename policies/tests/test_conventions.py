"""Meta-test: the pack's conventions (docs/policies.md, "Writing a policy"), enforced over every policy module
and fixture."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
import yaml
from pulumi_policy import EnforcementLevel, PolicyConfigSchema

import policies
from policies.tests.conftest import FIXTURES, fixture_cases, run_policy

PACK = Path(policies.__file__).parent
MODULES = sorted(m.name for m in pkgutil.iter_modules([str(PACK)])
                 if not m.name.startswith("_") and m.name != "tests")


def test_every_policy_module_is_in_the_pack_once():
    assert sorted(m.__name__.rsplit(".", 1)[1] for m in policies.MODULES) == MODULES
    names = [p.name for p in policies.ALL_POLICIES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("module", MODULES)
def test_policy_is_named_after_its_module_and_documented(module):
    mod = importlib.import_module(f"policies.{module}")
    policy = mod.POLICY
    assert policy.name == module.replace("_", "-")
    assert (mod.__doc__ or "").startswith(f"{policy.name}: "), "module docstring starts with '<policy-name>: '"
    desc = policy.description
    assert desc[0].isupper() and desc.endswith(".") and ". " not in desc, f"one full sentence: {desc!r}"
    assert isinstance(policy.enforcement_level, EnforcementLevel)
    assert isinstance(policy.config_schema, PolicyConfigSchema)
    for key, prop in policy.config_schema.properties.items():
        assert key != "enforcementLevel"
        assert "type" in prop and prop.get("description"), f"config property {key} needs a type and a description"


@pytest.mark.parametrize("module", MODULES)
def test_policy_has_good_and_bad_fixtures(module):
    path = FIXTURES / f"{module}.yaml"
    assert path.is_file(), f"missing {path}"
    cases = yaml.safe_load(path.read_text())
    assert all(n.startswith(("good_", "bad_")) for n in cases), "fixture names start with good_ or bad_"
    assert any(n.startswith("good_") for n in cases) and any(n.startswith("bad_") for n in cases)
    assert all(cases[n].get("expect") for n in cases if n.startswith("bad_")), "bad fixtures say what they expect"


@pytest.mark.parametrize("module,name,case", [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in fixture_cases()
                                              if c[1].startswith("bad_")])
def test_violation_messages_state_the_expected_state(module, name, case):
    policy = importlib.import_module(f"policies.{module}").POLICY
    for message, _ in run_policy(policy, case["resources"], case.get("config")):
        assert "expected" in message.lower(), message


def test_pack_entry_point_only_constructs_the_pack():
    tree = ast.parse((PACK / "__main__.py").read_text())
    calls = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))
             and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert len(calls) == 1 and isinstance(calls[0].value, ast.Call) and calls[0].value.func.id == "PolicyPack"


def test_pack_project_file_runs_python_from_the_project_venv():
    doc = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    assert doc["runtime"] == {"name": "python", "options": {"virtualenv": "../.venv"}}
    assert doc["description"] and doc["version"]
