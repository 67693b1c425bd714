"""gpuAllocation dra: what the config accepts and refuses, each refusal naming the YAML path, the bad value
and what is allowed."""

from __future__ import annotations

import copy

import pytest

from gpufleet.config.loading import load_stack, parse_sections
from tests.conftest import ROOT
from tests.conftest import config_errors as errors_of

POOL = {"name": "h100", "nodes": ["n0", "n1"], "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 8}}


def job(name="train", **gpu) -> dict:
    return {"kind": "job", "name": name, "image": "nvcr.io/nvidia/pytorch:24.08-py3", "nodePool": "h100", "gpu": gpu}


def base() -> dict:
    return {"mode": "operator", "gpuAllocation": "dra", "draDriver": {"featureGates": {"TimeSlicingSettings": True}},
            "nodePools": [copy.deepcopy(POOL)],
            "claims": [{"name": "shared", "sharing": {"strategy": "TimeSlicing", "interval": "Short"}}],
            "workloads": [job(claim={"count": 4, "sameAttribute": "resource.kubernetes.io/pcieRoot"}),
                          job("a", sharedClaim="shared"), job("b", sharedClaim="shared")]}


def with_(mutate) -> dict:
    s = base()
    mutate(s)
    return s


def test_a_dra_stack_with_claims_and_a_shared_time_sliced_claim_is_valid():
    cfg = parse_sections(base(), "Pulumi.t.yaml")
    assert cfg.uses_dra() and cfg.workloads[0].gpu.claim.count == 4
    assert cfg.claim("shared", "default").sharing.interval == "Short"


def test_the_shipped_dra_stack_loads():
    cfg = load_stack("dra", ROOT).config
    assert cfg.gpu_allocation == "dra" and [c.name for c in cfg.claims] == ["shared-h100"]


CASES = [
    (lambda s: s["cluster"].update(kubernetesVersion="1.33") if "cluster" in s
     else s.update(cluster={"kubernetesVersion": "1.33"}),
     "gpufleet:cluster.kubernetesVersion: '1.33' does not serve resource.k8s.io/v1, which gpuAllocation dra needs; "
     "allowed: 1.34 or later"),
    (lambda s: s["draDriver"].update(featureGates={}),
     "gpufleet:claims[0].sharing.strategy: 'TimeSlicing' needs the driver feature gate TimeSlicingSettings"),
    (lambda s: s["claims"][0].update(sharing={"strategy": "MPS", "defaultActiveThreadPercentage": 50}),
     "gpufleet:claims[0].sharing.strategy: 'MPS' needs the driver feature gate MPSSupport"),
    (lambda s: s["draDriver"]["featureGates"].update(DynamicMIG=True, MPSSupport=True),
     "gpufleet:draDriver.featureGates: DynamicMIG and MPSSupport cannot both be enabled"),
    (lambda s: s["workloads"][0]["gpu"].update(count=2),
     "gpufleet:workloads[0].gpu.count: set together with a claim; allowed: only gpu.claim or gpu.sharedClaim"),
    (lambda s: s["workloads"][1]["gpu"].update(sharedClaim="nope"),
     "gpufleet:workloads[1].gpu.sharedClaim: 'nope' is not a claim in namespace 'default'; allowed: shared"),
    (lambda s: s["workloads"][0]["gpu"]["claim"].update(allocationMode="All"),
     "gpufleet:workloads[0].gpu.claim.count: 4 with allocationMode All; allowed: no count"),
    (lambda s: s["workloads"][0]["gpu"]["claim"].update(profile="1g.10gb"),
     "gpufleet:workloads[0].gpu.claim.profile: '1g.10gb' is a MIG profile, but deviceClass is 'gpu.nvidia.com'; "
     "allowed: deviceClass mig.nvidia.com"),
    (lambda s: s["workloads"][0]["gpu"]["claim"].update(firstAvailable=[{"count": 2}]),
     "gpufleet:workloads[0].gpu.claim.count: set together with firstAvailable"),
    (lambda s: s["workloads"].append(job("c", count=1)),
     "gpufleet:workloads[3].gpu: with gpuAllocation dra a workload claims its GPUs; allowed: gpu.claim"),
    (lambda s: s.update(gpuAllocation="devicePlugin"),
     "gpufleet:workloads[0].gpu.claim: a GPU claim needs gpuAllocation dra (gpuAllocation is 'devicePlugin')"),
    (lambda s: s["nodePools"][0].update(migGeometry="all-disabled"),
     "gpufleet:nodePools[0].migGeometry: 'all-disabled': with gpuAllocation dra gpufleet does not partition GPUs"),
    (lambda s: s["claims"][0].update(deviceClass="mig.nvidia.com", profile="1g.10gb"),
     "gpufleet:claims[0].sharing.strategy: 'TimeSlicing' has no effect on MIG devices; allowed: MPS"),
    (lambda s: (s["nodePools"].append({**POOL, "name": "other", "nodes": ["n2"]}),
                s["workloads"][2].update(nodePool="other")),
     "gpufleet:workloads[2].nodePool: 'other', but workloads[1] shares claim 'shared' from node pool 'h100': a shared "
     "claim's device is on one node; allowed: nodePool 'h100'"),
    (lambda s: s.update(mode="standalone",
                        draDriver={"namespace": "default", "featureGates": {"TimeSlicingSettings": True}}),
     "gpufleet:draDriver.namespace: 'default': the dra-driver-nvidia-gpu chart refuses the default namespace"),
]


@pytest.mark.parametrize("mutate, message", CASES)
def test_each_dra_rule_reports_path_bad_value_and_what_is_allowed(mutate, message):
    errors = errors_of(with_(mutate))
    assert any(e.startswith(message) for e in errors), errors


def test_unknown_feature_gate_and_sharing_interval_are_field_errors():
    errors = errors_of(with_(lambda s: (s["draDriver"]["featureGates"].update(TimeSlicing=True),
                                        s["claims"][0]["sharing"].update(interval="Forever"))))
    assert any(e.startswith("gpufleet:draDriver.featureGates.TimeSlicing") for e in errors), errors
    assert any(e.startswith("gpufleet:claims[0].sharing.interval: Input should be 'Default', 'Short', 'Medium' or "
                            "'Long'; got \"Forever\"") for e in errors), errors


def test_mps_settings_with_time_slicing_are_refused_at_the_sharing_entry():
    errors = errors_of(with_(lambda s: s["claims"][0]["sharing"].update(defaultActiveThreadPercentage=20)))
    assert errors == ["gpufleet:claims[0].sharing: defaultActiveThreadPercentage with strategy 'TimeSlicing'; "
                      "allowed: interval (MPS settings need strategy MPS)"]
