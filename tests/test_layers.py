"""The layers the README states hold in the code: `lint-imports` (import-linter, contracts in pyproject.toml)
keeps lower layers from importing higher ones, sibling packages/modules free of import cycles, the middle and
upper layers in their measured order with render and report standing apart, Pulumi out of everything below
the deploying layers and the kubernetes client inside gpufleet.discovery."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import ROOT

LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


# Each contract the README's Layout section describes, by id; a contract dropped from pyproject.toml fails here.
CONTRACTS = (
    "layers", "no-cycles", "middle-order", "render-imports-no-middle-sibling", "no-middle-sibling-imports-render",
    "upper-order", "report-imports-no-upper-sibling", "no-upper-sibling-imports-report", "no-pulumi-below-deploy",
    "kubernetes-client-only-in-discovery",
)


@pytest.fixture(scope="module")
def lint_output() -> str:
    # A fresh interpreter with this checkout first on the path, so the graph is of these sources.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", LINT], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout
    return " ".join(run.stdout.split())  # long contract names are wrapped over lines


@pytest.mark.parametrize("contract_id", CONTRACTS)
def test_contract_is_configured_and_kept(lint_output, contract_id):
    contract = contracts().get(contract_id)
    assert contract is not None, f"contract {contract_id} is missing from pyproject.toml"
    assert f"{contract['name']} KEPT" in lint_output


def test_pulumi_and_kubernetes_contracts_name_the_external_packages():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert config["include_external_packages"] is True  # else import-linter rejects external forbidden modules
    assert set(contracts()["no-pulumi-below-deploy"]["forbidden_modules"]) == {
        "pulumi", "pulumi_kubernetes", "pulumi_azure_native", "pulumi_policy"}
    assert {"gpufleet.config", "gpufleet.nvidia", "gpufleet.render"} <= set(
        contracts()["no-pulumi-below-deploy"]["source_modules"])
    assert contracts()["kubernetes-client-only-in-discovery"]["forbidden_modules"] == ["kubernetes"]


def test_contracts_cover_every_gpufleet_package_in_the_stated_order():
    layers = contracts()["layers"]["layers"]
    members = [[m.strip() for m in layer.replace("|", ":").split(":")] for layer in layers]
    flat = {m for layer in members for m in layer}
    packages = {f"gpufleet.{p.name}" for p in (ROOT / "gpufleet").iterdir()
                if (p / "__init__.py").exists() or (p.suffix == ".py" and p.stem != "__init__")}
    packages = {p.removesuffix(".py") for p in packages}
    assert packages <= flat, f"not in any layer: {sorted(packages - flat)}"
    order = ["gpufleet.cli", "components", "gpufleet.render", "gpufleet.config", "gpufleet.nvidia"]
    assert [next(i for i, layer in enumerate(members) if name in layer) for name in order] == [0, 1, 2, 3, 4]


def test_no_cycle_contract_spans_every_root_package():
    assert set(contracts()["no-cycles"]["ancestors"]) == {"gpufleet", "components", "policies"}
