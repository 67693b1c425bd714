"""Work done once per class of things that are the same gives what doing it every time gives.

- DRA: the filter's answer kept per look of a node's devices, counted where counting is exact and refuted
  where no allocation exists (dynamicresources.structured: likeness, counting, refuting), against asking
  `DraState.filter` on every node for every pod, on the generated DRA clusters the real scheduler's answers
  were recorded for and on random small ones;
- CEL: a selector's result shared by devices equal in the fields it reads, against evaluating it on each.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from gpufleet.scheduler.plugins.dynamicresources import claims
from gpufleet.scheduler.plugins.dynamicresources.cel import (
    compile_selector,
    device_activation,
    evaluate,
    projection,
    reads,
)
from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import FilterError
from gpufleet.scheduling import check_workloads
from tests.scheduling.dra_scenarios import scenario
from tests.scheduling.test_dra_properties import clusters


class _EveryNode:
    """The DynamicResources filter asked on every node it visits, for every pod: the plain loop."""

    REASONS = claims.NodeOutcomes.REASONS

    def __init__(self, state, needs):
        self.state, self.needs, self._found = state, needs, {}

    def codes(self, positions):
        import numpy as np

        out = np.zeros(len(positions), dtype=np.int8)
        for j, pos in enumerate(positions.tolist()):
            try:
                result = self.state.filter(self.state.nodes[pos], self.needs)
            except FilterError:
                out[j] = -1
                continue
            if isinstance(result, str):
                out[j] = 1 + self.REASONS.index(result)
            else:
                self._found[pos] = result
        return out

    def reason(self, code):
        return self.REASONS[code - 1]

    def fail(self, pos):
        self.state.filter(self.state.nodes[pos], self.needs)

    def found(self, pos):
        return self._found[pos]


def _everything(result) -> tuple:
    return result.to_json(), result.placements, result.devices, result.device_uses


@pytest.mark.parametrize("seed", range(0, 400, 3))
def test_dra_answers_kept_per_device_look_match_asking_every_node(seed, monkeypatch):
    s = scenario(seed)
    shared = _everything(check_workloads(s["nodes"], s["pods"], s["manifests"]))
    monkeypatch.setattr(claims.DraState, "tried", lambda state, needs: _EveryNode(state, needs))
    plain = _everything(check_workloads(s["nodes"], s["pods"], s["manifests"]))
    assert shared == plain


def _device(attributes: dict, capacity: dict | None = None) -> dict:
    return device_activation("gpu.nvidia.com", attributes, capacity or {})


EXPRESSIONS = [
    'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100"',
    "device.attributes['gpu.nvidia.com'].index < 2",
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    'has(device.attributes["gpu.nvidia.com"].profile)',
    'device.attributes["gpu.nvidia.com"].exists(k, k == "uuid")',  # the whole map: nothing shared
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
]
DEVICES = [
    {"productName": {"string": "NVIDIA H100"}, "index": {"int": 0}, "type": {"string": "gpu"}, "uuid": {"string": "a"}},
    {"productName": {"string": "NVIDIA H100"}, "index": {"int": 3}, "type": {"string": "gpu"}, "uuid": {"string": "b"}},
    {"productName": {"string": "NVIDIA A100"}, "index": {"int": 0}, "type": {"string": "mig"},
     "profile": {"string": "1g"}},
    {"gpu.nvidia.com/productName": {"string": "NVIDIA H100"}, "index": {"int": 1}},
]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_devices_equal_in_what_a_selector_reads_get_its_answer(expression):
    paths = reads(expression)
    program = compile_selector(expression)
    answers = {}
    for attributes in DEVICES:
        for memory in ("40Gi", "80Gi"):
            activation = _device(attributes, {"memory": {"value": memory}})
            try:
                answer = evaluate(program, activation)
            except Exception as e:  # noqa: BLE001 - the error text is the answer too
                answer = str(e)
            if paths is None:
                continue
            seen = projection(activation, paths)
            assert answers.setdefault(seen, answer) == answer


def test_a_selector_that_reads_a_map_as_a_whole_shares_nothing():
    assert reads('device.attributes["gpu.nvidia.com"].exists(k, k == "uuid")') is None
    assert reads('size(device.attributes["gpu.nvidia.com"])') is None
    assert reads('device.attributes["gpu.nvidia.com"][name]') is None
    assert reads('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("1Gi"))') == (
        ("capacity", "gpu.nvidia.com", "memory"),)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters())
def test_random_dra_clusters_get_the_same_answers_shared_as_asked_on_every_node(cluster):
    nodes, manifests, _ = cluster
    shared = _everything(check_workloads(nodes, [], manifests))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(claims.DraState, "tried", lambda state, needs: _EveryNode(state, needs))
        plain = _everything(check_workloads(nodes, [], manifests))
    assert shared == plain


def test_nodes_alike_in_all_constrained_values_together_but_not_in_each_are_told_apart():
    """Two constraints on different requests compare one attribute each: node a's first two devices share a
    PCIe root, node b's do not, though on both every device's (root, product) pair differs from the others."""
    v1 = "resource.k8s.io/v1"
    klass = {"apiVersion": v1, "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}

    def slice_(node: str, devices: list[tuple[str, str]]) -> dict:
        return {"apiVersion": v1, "kind": "ResourceSlice", "metadata": {"name": node}, "spec": {
            "driver": "gpu.nvidia.com", "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": {"resource.kubernetes.io/pcieRoot": {"string": root},
                                                            "productName": {"string": product}}}
                        for i, (root, product) in enumerate(devices)]}}

    def template(name: str, count: int, attribute: str) -> dict:
        return {"apiVersion": v1, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": "ml"},
                "spec": {"spec": {"devices": {
                    "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}],
                    "constraints": [{"matchAttribute": attribute}]}}}}

    nodes = [{"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
              "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"}}} for name in ("a", "b")]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {
        "resourceClaims": [{"name": "pair", "resourceClaimTemplateName": "pair"},
                           {"name": "one", "resourceClaimTemplateName": "one"}],
        "containers": [{"name": "c", "image": "x"}]}}
    manifests = [klass, slice_("b", [("p1", "X"), ("p2", "Y"), ("p3", "Z")]),
                 slice_("a", [("p1", "X"), ("p1", "Y"), ("p3", "Z")]),
                 template("pair", 2, "resource.kubernetes.io/pcieRoot"),
                 template("one", 1, "gpu.nvidia.com/productName"),
                 pod]
    for _ in range(5):  # ties between the two nodes are broken at random: each run may ask b first
        result = check_workloads(nodes, [], manifests)
        assert result.placements == [("Pod/ml/p", "a", 1)]
