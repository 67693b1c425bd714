"""The node-platform rules take whatever a release record or a DaemonSet holds (values of the wrong type, a
malformed affinity, an unparsable version) without a traceback: what they cannot read they do not judge."""

from __future__ import annotations

import pytest

from gpufleet.capacity.model import Node
from gpufleet.scheduler.daemonsets import selects_node
from gpufleet.validation import node_platform as rules
from gpufleet.validation.gpu_daemonsets import daemonset_findings

TALOS = Node("talos-gpu-0", labels={"nvidia.com/gpu.present": "true"}, allocatable={"nvidia.com/gpu": 1},
             container_runtime="containerd://2.0.0", kubelet_version="v1.31.2", os_image="Talos (v1.8.3)")
ODD = ["", "garbage", 5, None, [1], {"x": 1}]


@pytest.mark.parametrize("chart", rules.GPU_CHARTS)
@pytest.mark.parametrize("odd", ODD, ids=repr)
def test_odd_values_and_versions_are_not_judged_and_never_crash(chart, odd):
    for values in ({"toolkit": {"env": odd}}, {"toolkit": odd}, {"driver": {"enabled": odd}},
                   {"toolkit": {"version": odd}}, {"runtimeClassName": odd}, {"devicePlugin": odd}):
        release = rules.release_of_record({"kind": "HelmRelease", "chart": chart, "version": odd, "values": values})
        assert isinstance(rules.release_findings(release, [TALOS]), list)


@pytest.mark.parametrize("spec", [
    {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "affinity": [1]},
    {"nodeSelector": [1]},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "x"}}}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": "true"}]}]}}}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": "nvidia.com/gpu.present"}]}}}},
], ids=["affinity a list", "nodeSelector a list", "terms a string", "values a string", "expressions a string"])
def test_a_malformed_daemonset_selector_is_left_to_the_api_server(spec):
    assert isinstance(daemonset_findings("DaemonSet/x/y", spec, [TALOS], selects_node), list)
