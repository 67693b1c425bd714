"""The layers the README states hold in the code: `lint-imports` (import-linter, contracts in pyproject.toml)
keeps lower layers from importing higher ones and sibling packages/modules free of import cycles."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

from tests.conftest import ROOT

LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))")


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def test_layer_and_cycle_contracts_are_kept():
    # A fresh interpreter with this checkout first on the path, so the graph is of these sources.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", LINT], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


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
