"""The standard shapes' headroom (`headroom --shapes`, the report) in one pass: the manifests are placed once and
each shape's probe comes alone on a copy of what they left. It must answer exactly what one check per shape
answers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.scheduling.engine import check_workloads
from gpufleet.scheduling.headroom import _all_tainted, _dra, headroom, headroom_table, standard_shapes
from tests.scheduling import dra_scenarios
from tests.scheduling.kube import node
from tests.scheduling.oracle_fleets import generate
from tests.scheduling.test_preemption import deployment


def one_check_per_shape(nodes, pods, manifests, **options) -> list[tuple[str, bool, dict]]:
    out = []
    for shape in standard_shapes(nodes, _dra(manifests)):
        if shape.tolerates or not _all_tainted(nodes, shape):
            answer = headroom(nodes, pods, [*manifests, *shape.objects()], shape.pod(), tie_runs=1, **options)
            out.append((shape.label, shape.tolerates, answer.to_json()))
    return out


def one_pass(nodes, pods, manifests, **options) -> list[tuple[str, bool, dict]]:
    return [(shape.label, shape.tolerates, answer.to_json())
            for shape, answer in headroom_table(nodes, pods, manifests, **options)
            if not answer.probe.startswith("probe ")]  # the shapes every node's taint repels, answered alike


@pytest.mark.parametrize("shape", ["mixed", "mig", "l4-trap"])
def test_one_pass_answers_what_one_check_per_shape_answers_on_generated_fleets(shape):
    fleet = generate(7, 40, shape)
    from gpufleet.scheduling.engine import _nodes, _pods

    nodes, pods = _nodes(fleet.nodes), _pods(fleet.pods)
    expected = one_check_per_shape(nodes, pods, fleet.manifests)
    assert expected, "the fleet offers standard shapes"
    assert one_pass(nodes, pods, fleet.manifests) == expected


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000))
def test_one_pass_answers_what_one_check_per_shape_answers_on_dra_fleets(seed):
    s = dra_scenarios.scenario(seed)
    from gpufleet.scheduling.engine import _nodes, _pods

    nodes, pods = _nodes(s["nodes"]), _pods(s["pods"])
    assert one_pass(nodes, pods, s["manifests"]) == one_check_per_shape(nodes, pods, s["manifests"])


def test_a_quota_in_the_probes_namespace_is_answered_one_check_per_shape():
    # the quota would count every probe's pods together; per shape, each probe has it to itself
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpus", "namespace": "default"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "3"}}}
    from gpufleet.scheduling.engine import _nodes

    h100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    nodes = _nodes([node("gpu-1", 8, labels=h100), node("gpu-2", 8, labels=h100)])
    manifests = [quota, deployment("serve", "ml", 1, 2)]
    rows = one_pass(nodes, [], manifests)
    assert rows == one_check_per_shape(nodes, [], manifests)
    ones = [answer["instances"] for label, _, answer in rows if label.startswith("1x")]
    assert ones == [3, 3], rows  # with and without the toleration: each probe alone under the quota


def test_pods_placed_apart_each_find_the_room_the_others_left_not_each_others():
    nodes = [node("gpu-1", 8)]
    manifests = [deployment("serve", "ml", 1, 4), deployment("probe-a", "default", 8, 1),
                 deployment("probe-b", "default", 8, 1)]
    apart = frozenset({"Deployment/default/probe-a", "Deployment/default/probe-b"})
    result = check_workloads(nodes, [], manifests, tie_runs=1, preemption=False, apart=apart)
    placed = {key: n for key, _, n in result.placements}
    assert placed == {"Deployment/ml/serve": 1, "Deployment/default/probe-a": 4, "Deployment/default/probe-b": 4}
    together = check_workloads(nodes, [], manifests, tie_runs=1, preemption=False)
    assert {key: n for key, _, n in together.placements} == {"Deployment/ml/serve": 1,
                                                               "Deployment/default/probe-a": 4}


def test_pods_placed_apart_are_refused_with_preemption():
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                "value": 1000}]
    manifests = [*classes, deployment("probe", "default", 1, 1, priorityClassName="high")]
    with pytest.raises(ValueError, match="without preemption"):
        check_workloads([node("gpu-1", 8)], [{"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "old", "namespace": "ml"}, "spec": {"nodeName": "gpu-1", "priority": 0, "containers": [
                {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}, "status": {"phase": "Running"}}],
            manifests, apart=frozenset({"Deployment/default/probe"}))
