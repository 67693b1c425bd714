"""The node-facts policies on whole plans: every shipped stack checked against the nodes it plans finds
nothing wrong (no correct config raises a new error), and without node facts nothing is checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.capacity import stack_capacity
from gpufleet.config.loading import load_stack
from gpufleet.planning.engine import STACK_TYPE, run_program
from policies import node_platform, node_platform_advisories, preinstalled_driver, stack_matches_nodes
from policies.tests.conftest import run_policy

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))
POLICIES = [stack_matches_nodes.POLICY, preinstalled_driver.POLICY, node_platform.POLICY,
            node_platform_advisories.POLICY]


def _resources(stack: str) -> list[dict]:
    plan = run_program(load_stack(stack, ROOT))
    return [{"type": r.type, "name": r.name, "props": r.inputs} for r in plan.resources if r.type != STACK_TYPE]


@pytest.mark.parametrize("stack", SHIPPED)
def test_shipped_stack_against_its_own_planned_nodes_reports_nothing(stack, tmp_path):
    capacity = stack_capacity(load_stack(stack, ROOT).config)
    if not capacity.nodes:
        pytest.skip(f"{stack} plans no nodes")
    nodes = tmp_path / "capacity.json"
    nodes.write_text(json.dumps(capacity.to_json()))
    resources = _resources(stack)
    config = {"stack": stack, "projectDir": str(ROOT), "nodesFile": str(nodes)}
    for policy in POLICIES:
        assert run_policy(policy, resources, config) == [], policy.name
    without = {"stack": stack, "projectDir": str(ROOT)}
    assert all(run_policy(p, resources, without) == [] for p in POLICIES)


def test_a_planned_nodes_file_with_a_wrong_product_is_caught_on_a_shipped_stack(tmp_path):
    capacity = stack_capacity(load_stack("k3s", ROOT).config)
    for node in capacity.nodes:
        node.labels["nvidia.com/gpu.product"] = "Tesla-T4"
    nodes = tmp_path / "capacity.json"
    nodes.write_text(json.dumps(capacity.to_json()))
    found = run_policy(stack_matches_nodes.POLICY, _resources("k3s"),
                       {"stack": "k3s", "projectDir": str(ROOT), "nodesFile": str(nodes)})
    assert [m for m, _ in found] and "declares gpu.product NVIDIA-A10, but its node(s) k3s-gpu-0 carry" in found[0][0]
