"""The consistency rules between the AKS cluster and the GPU stack: each fails with its YAML path and a
message naming the bad value and what is allowed, and passes when the choices agree."""

from __future__ import annotations

import copy

import pytest

from tests.aks.conftest import a100_mig_sections, base_sections, issues_of

POOL0 = "gpufleet:cluster.aks.gpuPools[0]"


def _t4(**changes):
    s = base_sections()
    s["cluster"]["aks"]["gpuPools"][0].update(changes)
    return s


def _a100(**changes):
    s = a100_mig_sections()
    s["cluster"]["aks"]["gpuPools"][0].update(changes)
    return s


def _with(s, **top):
    s.update(top)
    return s


FAILING = [
    pytest.param(_t4(driver="aks"), f"{POOL0}.driver",
                 ["'aks' while operator.driver.enabled is true", "both AKS and the GPU operator", "driver: operator"],
                 id="aks and the operator both install the driver"),
    pytest.param(_with(_t4(driver="operator"), operator={"driver": {"enabled": False}}), f"{POOL0}.driver",
                 ["'operator' while operator.driver.enabled is false", "nothing would install", "allowed: driver: aks"],
                 id="nobody installs the driver"),
    pytest.param(_with(_t4(driver="operator"), mode="standalone"), f"{POOL0}.driver",
                 ["mode is 'standalone'"], id="operator driver without the operator"),
    pytest.param(_with(_a100(migGeometry="all-1g"), mig={"geometries": {"all-1g": [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]}}),
                 f"{POOL0}.gpuInstanceProfile",
                 ["'MIG1g' and migGeometry 'all-1g'", "mutually exclusive", "remove gpuInstanceProfile or migGeometry"],
                 id="aks and mig-manager both own MIG"),
    pytest.param(_with(_t4(gpuInstanceProfile="MIG1g"), devicePlugin={"migStrategy": "single"}),
                 f"{POOL0}.gpuInstanceProfile",
                 ["'MIG1g' on Standard_NC4as_T4_v3", "Tesla-T4 GPUs are not MIG-capable", "Standard_NC24ads_A100_v4"],
                 id="mig profile on a gpu without mig"),
    pytest.param(_with(a100_mig_sections(), devicePlugin={"migStrategy": "none"},
                       workloads=[{**base_sections()["workloads"][0], "nodePool": "a100", "gpu": {"count": 1}}]),
                 f"{POOL0}.gpuInstanceProfile", ["migStrategy is 'none'", "allowed: migStrategy single or mixed"],
                 id="aks mig without a mig strategy"),
    pytest.param(_with(base_sections(), workloads=[{**base_sections()["workloads"][0], "nodePool": None,
                                                   "nodeSelector": {"kubernetes.azure.com/agentpool": "t4"}}]),
                 "gpufleet:workloads[0].tolerations",
                 ["do not tolerate sku=gpu:NoSchedule of AKS pool 't4'", "allowed: nodePool: t4"],
                 id="explicit selector misses the pool taint"),
    pytest.param(_with(base_sections(), workloads=[{**base_sections()["workloads"][0], "nodePool": None}]),
                 "gpufleet:workloads[0].nodePool", ["every AKS GPU pool has a taint", "allowed: t4"],
                 id="gpu workload without a pool fits no tainted pool"),
    pytest.param(_with(base_sections(), cluster={**base_sections()["cluster"], "context": "other"}),
                 "gpufleet:cluster.context", ["'other' cannot be used with cluster.aks"],
                 id="kubeconfig context next to aks"),
    pytest.param(_with(base_sections(), nodePools=[{"name": "t4", "nodes": ["n1"], "gpu": {"product": "Tesla-T4"}}]),
                 "gpufleet:nodePools[0].name", ["'t4' is also an AKS GPU pool", "remove this entry"],
                 id="node pool named like an aks pool"),
    pytest.param(_t4(sharing="nope"), f"{POOL0}.sharing", ["'nope' is not a sharing profile"],
                 id="node pool checks report the aks pool path"),
]


SCHEMA_FAILING = [
    pytest.param(_t4(vmSize="Standard_D4s_v5"), f"{POOL0}.vmSize",
                 ["'Standard_D4s_v5' is not a GPU VM size", "Standard_NC4as_T4_v3"], id="unknown vm size"),
    pytest.param(_t4(taints=["sku=gpu"]), f"{POOL0}.taints", ["'sku=gpu' is not a taint", "key=value:Effect"],
                 id="taint without effect"),
    pytest.param(_t4(autoscale={"minCount": 1, "maxCount": 2}), POOL0, ["count and autoscale are mutually exclusive"],
                 id="count and autoscale"),
    pytest.param(_t4(gpuInstanceProfile="MIG5g"), f"{POOL0}.gpuInstanceProfile", ["MIG1g", "MIG7g"],
                 id="unknown gpu instance profile"),
    pytest.param(_t4(autoscaling={"min": 1, "max": 2}), POOL0, ["count and autoscaling are mutually exclusive"],
                 id="count and autoscaling"),
    pytest.param(_a100(autoscaling={"min": 0, "max": 2}), f"{POOL0}.autoscaling",
                 ["set together with this pool's autoscale", "{minCount, maxCount}", "{min, max}", "allowed: one"],
                 id="autoscale and autoscaling both set"),
    pytest.param(_a100(autoscale=None, autoscaling={"min": 0, "max": 1001}), f"{POOL0}.autoscaling",
                 ["max 1001 is above 1000", "allowed: 1 to 1000"], id="autoscaling above an agent pool's size"),
    pytest.param(_a100(autoscale=None, autoscaling={"min": 3, "max": 2}), f"{POOL0}.autoscaling",
                 ["min 3 is above max 2", "allowed: min <= max"], id="autoscaling min above max"),
]


@pytest.mark.parametrize(("sections", "path", "fragments"), FAILING + SCHEMA_FAILING)
def test_rule_fails_with_its_path_and_message(sections, path, fragments):
    issues = issues_of(sections)
    matching = [i for i in issues if i.path == path]
    assert matching, f"no issue at {path}; got {issues}"
    for fragment in fragments:
        assert any(fragment in i.message for i in matching), (fragment, matching)


PASSING = [
    pytest.param(base_sections(), id="operator installs the driver on an untainted-for-it pool"),
    pytest.param(_with(_t4(driver="aks"), operator={"driver": {"enabled": False}}), id="aks installs the driver"),
    pytest.param(_with(_t4(driver="aks"), mode="standalone"), id="aks driver with the standalone plugin"),
    pytest.param(a100_mig_sections(), id="aks owns mig on an a100"),
    pytest.param(_with(_a100(gpuInstanceProfile=None, migGeometry="all-1g", driver="aks"),
                       mig={"geometries": {"all-1g": [
                           {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]}}),
                 id="mig-manager owns mig on an a100"),
    pytest.param(_with(base_sections(), workloads=[{**base_sections()["workloads"][0], "nodePool": None,
                                                   "nodeSelector": {"kubernetes.azure.com/agentpool": "t4"},
                                                   "tolerations": [{"key": "sku", "value": "gpu",
                                                                    "effect": "NoSchedule"}]}]),
                 id="explicit selector with the toleration"),
    pytest.param(_with(base_sections(), workloads=[{**base_sections()["workloads"][0], "nodePool": None,
                                                   "tolerations": [{"operator": "Exists"}]}]),
                 id="gpu workload tolerating everything"),
    pytest.param(_with(_t4(taints=["nvidia.com/gpu=present:NoSchedule"]),
                       cluster={**_t4(taints=["nvidia.com/gpu=present:NoSchedule"])["cluster"],
                                "extendedResourceToleration": True},
                       workloads=[{**base_sections()["workloads"][0], "nodePool": None}]),
                 id="nvidia.com/gpu taint tolerated by the admission plugin"),
]


@pytest.mark.parametrize("sections", PASSING)
def test_rule_passes_when_the_choices_agree(sections):
    assert issues_of(copy.deepcopy(sections)) == []

