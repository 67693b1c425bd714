"""gpuAllocation dra against what NVIDIA's DRA driver needs: CDI in the runtime, MIG-capable GPUs for
DynamicMIG and MIG claims, Volta or newer GPUs for MPS, a driver of R580 or newer, Kubernetes 1.34.2 for
the operator's GPUCluster, and MPS memory limits a CUDA context fits in. Each refusal names the YAML path,
what happens on the cluster and the fix."""

from __future__ import annotations

import copy

import pytest

from gpufleet.config.loading import parse_sections
from gpufleet.config.rules import fact_warnings
from tests.conftest import config_errors as errors_of

H100 = {"name": "h100", "nodes": ["n0"], "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 8}}
T4 = {"name": "t4", "nodes": ["t0"], "gpu": {"product": "Tesla-T4", "count": 1}}
P100 = {"name": "p100", "nodes": ["p0"], "gpu": {"product": "Tesla-P100-PCIE-16GB", "count": 2}}


def job(name="train", pool="h100", **gpu) -> dict:
    return {"kind": "job", "name": name, "image": "nvcr.io/nvidia/pytorch:24.08-py3", "nodePool": pool,
            "gpu": gpu or {"claim": {"count": 1}}}


def dra(*pools, workloads=None, **sections) -> dict:
    s = {"mode": "operator", "gpuAllocation": "dra", "nodePools": [copy.deepcopy(p) for p in pools or [H100]],
         "workloads": workloads if workloads is not None else [job()]}
    s.update(copy.deepcopy(sections))
    return s


def mps_claim(**sharing) -> dict:
    return {"name": "shared", "sharing": {"strategy": "MPS", **sharing}}


ERRORS = [
    pytest.param(dra(operator={"cdi": False}), "gpufleet:operator.cdi",
                 ["false under gpuAllocation dra", "only through CDI", "fails at container creation",
                  "fix: operator.cdi: true"], id="CDI off"),
    pytest.param(dra(T4, workloads=[job(pool="t4")], draDriver={"featureGates": {"DynamicMIG": True}}),
                 "gpufleet:draDriver.featureGates.DynamicMIG",
                 ["no node pool has MIG-capable GPUs (Tesla-T4: Turing)", "stay Pending", "fix: false",
                  "(A100, A30, H100, H200, B200)"],
                 id="DynamicMIG without MIG GPUs"),
    pytest.param(dra(H100, T4, workloads=[job(pool="t4", claim={"deviceClass": "mig.nvidia.com"})]),
                 "gpufleet:workloads[0].gpu.claim.deviceClass",
                 ["asks for a MIG device on node pool 't4'", "Tesla-T4 has no MIG", "pods stay Pending",
                  "fix: deviceClass gpu.nvidia.com"], id="MIG claim on a pool without MIG"),
    pytest.param(dra(workloads=[job(claim={"deviceClass": "mig.nvidia.com", "profile": "1g.5gb"})]),
                 "gpufleet:workloads[0].gpu.claim.profile",
                 ["NVIDIA-H100-80GB-HBM3 has no MIG profile 1g.5gb (its profiles: 1g.10gb"],
                 id="MIG profile the pool's GPUs lack"),
    pytest.param(dra(P100, workloads=[job("a", "p100", sharedClaim="shared")], operator={"driver": {"enabled": False}},
                     draDriver={"featureGates": {"MPSSupport": True}}, claims=[mps_claim()]),
                 "gpufleet:claims[0].sharing.strategy",
                 ["'MPS' on node pool 'p100' (Tesla-P100-PCIE-16GB: Pascal), older than Volta",
                  "fix: strategy TimeSlicing"], id="MPS claim on Pascal"),
    pytest.param(dra(operator={"driver": {"version": "570.195.03"}}), "gpufleet:operator.driver.version",
                 ["'570.195.03' (R570) is older than the R580 that gpuAllocation dra needs", "claim stays Pending",
                  "fix: version 595.91.07"], id="driver older than R580"),
]


@pytest.mark.parametrize("sections, path, fragments", ERRORS)
def test_dra_prerequisite_error_names_path_cause_and_fix(sections, path, fragments):
    found = [e for e in errors_of(sections) if e.startswith(path + ": ")]
    assert found, errors_of(sections)
    assert all(f in found[0] for f in fragments), found[0]


@pytest.mark.parametrize("sections", [
    pytest.param(dra(), id="whole GPUs with CDI on"),
    pytest.param(dra(H100, T4, draDriver={"featureGates": {"DynamicMIG": True}}), id="DynamicMIG with a MIG pool"),
    pytest.param(dra(workloads=[job(claim={"deviceClass": "mig.nvidia.com", "profile": "1g.10gb"})]),
                 id="a MIG profile of the pool's GPUs"),
    pytest.param(dra(H100, T4, workloads=[job(pool="t4", claim={"firstAvailable": [
        {"deviceClass": "mig.nvidia.com", "profile": "1g.10gb"}, {"deviceClass": "gpu.nvidia.com"}]})]),
        id="a MIG alternative with a whole-GPU fallback"),
    pytest.param(dra(workloads=[job("a", sharedClaim="shared")], draDriver={"featureGates": {"MPSSupport": True}},
                     claims=[mps_claim()]), id="MPS claim on Hopper"),
    pytest.param(dra(P100, workloads=[job(pool="p100")], operator={"driver": {"enabled": False}}),
                 id="Pascal whole GPUs with a host driver"),
])
def test_dra_configs_that_meet_the_prerequisites_parse(sections):
    parse_sections(sections, "Pulumi.t.yaml")


def test_a_mig_claim_on_no_pool_is_checked_against_every_pool():
    unpinned = {**job(pool="t4", claim={"deviceClass": "mig.nvidia.com"}), "nodePool": None}
    errors = errors_of(dra(T4, workloads=[unpinned]))
    assert any(e.startswith("gpufleet:workloads[0].gpu.claim.deviceClass: asks for a MIG device on any node pool")
               for e in errors), errors


def test_every_impossible_mig_alternative_is_refused_at_first_available():
    errors = errors_of(dra(T4, workloads=[job(pool="t4", claim={"firstAvailable": [
        {"deviceClass": "mig.nvidia.com", "profile": "1g.10gb"}, {"deviceClass": "mig.nvidia.com"}]})]))
    assert any(e.startswith("gpufleet:workloads[0].gpu.claim.firstAvailable: every alternative asks for a MIG "
                            "device on node pool 't4'") for e in errors), errors


def warnings_of(sections: dict) -> list[str]:
    return [f"{i.path}: {i.message}" for i in fact_warnings(parse_sections(sections, "Pulumi.t.yaml"))]


def test_an_mps_memory_limit_below_a_cuda_context_is_a_warning():
    sections = dra(workloads=[job("a", sharedClaim="shared")], draDriver={"featureGates": {"MPSSupport": True}},
                   claims=[mps_claim(defaultPinnedDeviceMemoryLimit="256Mi")])
    warnings = warnings_of(sections)
    assert any(w.startswith("gpufleet:claims[0].sharing.defaultPinnedDeviceMemoryLimit: '256Mi' (256 MiB) per MPS "
                            "client") and "set at least 500Mi" in w for w in warnings), warnings
    sections["claims"][0]["sharing"]["defaultPinnedDeviceMemoryLimit"] = "10Gi"
    assert warnings_of(sections) == []


@pytest.mark.parametrize("version, warned", [("1.34.1", True), ("1.34.2", False), ("1.35", False), ("1.34", False)])
def test_the_operators_dra_workflow_wants_kubernetes_1_34_2(version, warned):
    warnings = warnings_of(dra(cluster={"kubernetesVersion": version}))
    assert any(w.startswith("gpufleet:cluster.kubernetesVersion: Kubernetes 1.34.1") and "1.34.2" in w
               for w in warnings) is warned, warnings
