"""A mistake in a stack file is reported once, at its line (file:line: path: message), with the key it was
probably meant to be; the errors that would only follow from a misspelt key (a required key "missing", a
reference to a pool the misspelt key defines) are not reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpufleet.config.loading import load_stack
from gpufleet.config.spelling import did_you_mean
from gpufleet.errors import ConfigError
from tests.conftest import ROOT

DEV = (ROOT / "Pulumi.dev.yaml").read_text()


def errors_of(tmp_path: Path, old: str, new: str, count: int = 1) -> list[str]:
    assert DEV.count(old) >= count, old
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "Pulumi.dev.yaml").write_text(DEV.replace(old, new, count))
    with pytest.raises(ConfigError) as exc:
        load_stack("dev", tmp_path)
    return str(exc.value).splitlines()


def line_of(text: str, nth: int = 1) -> int:
    """The line number of the `nth` line of the dev stack that holds `text`."""
    found = [i for i, line in enumerate(DEV.splitlines(), 1) if text in line]
    return found[nth - 1]


def test_a_misspelt_section_is_suggested_and_what_refers_to_it_still_resolves(tmp_path):
    errors = errors_of(tmp_path, "gpufleet:nodePools:", "gpufleet:nodepools:")
    assert len(errors) == 1, errors  # not also "'edge' is not a node pool" for every workload
    at = line_of("gpufleet:nodePools:")
    assert errors[0].startswith(f"Pulumi.dev.yaml:{at}: gpufleet:nodepools: unknown key (did you mean "
                                "'nodePools'?); allowed: ")


@pytest.mark.parametrize("typo, meant", [("sharng", "sharing"), ("Sharing", "sharing"),
                                         ("sahring", "sharing"), ("nmae", "name")])
def test_a_misspelt_nested_key_is_suggested_by_case_and_edit_distance(tmp_path, typo, meant):
    """After nmae, no "name: required key is missing"."""
    key = "      sharing: t4-mps" if meant == "sharing" else "    - name: edge"
    errors = errors_of(tmp_path, key, key.replace(meant, typo))
    assert errors == [f"Pulumi.dev.yaml:{line_of(key)}: gpufleet:nodePools[0].{typo}: unknown key '{typo}' "
                      f"(did you mean '{meant}'?); allowed: name, nodes, nodeSelector, count, autoscaling, "
                      "gpu, taints, sharing, migGeometry, resources, labels"]


def test_a_mistake_inside_a_misspelt_section_is_still_found_at_its_line(tmp_path):
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    text = DEV.replace("gpufleet:nodePools:", "gpufleet:nodepools:")
    text = text.replace("        count: 1", "        count: 0.5")
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_stack("dev", tmp_path)
    assert str(exc.value).splitlines()[1] == (
        f"Pulumi.dev.yaml:{line_of('        count: 1')}: gpufleet:nodePools[0].gpu.count: Input should be a "
        "valid integer, got a number with a fractional part; got 0.5")


def test_every_error_carries_the_line_it_is_on(tmp_path):
    errors = errors_of(tmp_path, "      nodePool: edge", "      nodePool: egde", 3)
    assert errors == [f"Pulumi.dev.yaml:{line_of('nodePool: edge', n)}: gpufleet:workloads[{n - 1}]"
                      ".nodePool: 'egde' is not a node pool; allowed: edge" for n in (1, 2, 3)]


def test_a_missing_key_is_placed_on_the_entry_that_lacks_it(tmp_path):
    errors = errors_of(tmp_path, "    - name: edge\n", "    -\n")
    assert errors == [f"Pulumi.dev.yaml:{line_of('nodes: [ase-node-0]')}: gpufleet:nodePools[0].name: "
                      "required key is missing"]


@pytest.mark.parametrize("key, allowed, meant", [
    ("nodepools", ["nodePools", "workloads"], "nodePools"),
    ("node_pools", ["nodePools"], "nodePools"),
    ("replica", ["replicas", "ports"], "replicas"),
    ("sharng", ["sharing", "name"], "sharing"),
    ("x", ["name", "gpu"], None),          # nothing near
    ("gpuu", ["gpu", "gpus"], None),       # two as near: no guess
])
def test_did_you_mean_is_case_insensitive_and_edit_distance_based(key, allowed, meant):
    assert did_you_mean(key, allowed) == meant
