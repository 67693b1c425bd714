"""The config rules built on NVIDIA's facts tables (version_rules, sharing_rules): a pinned driver branch
against the pools' GPUs, MPS on pre-Volta GPUs, the operator release against the cluster's Kubernetes
(errors), and what is only a risk: MPS shares below a CUDA context, time-slices of one GPU, memory that
time-slicing does not isolate, a driver or Kubernetes outside the validated matrix (warnings). Each case
asserts the YAML path and what the message tells the user."""

from __future__ import annotations

import copy

import pytest

from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.config.rules import fact_warnings
from tests.conftest import config_errors as errors_of


def pool(product: str, name: str = "gpus", count: int = 1, **extra) -> dict:
    return {"name": name, "nodes": [f"{name}-0"], "gpu": {"product": product, "count": count}, **extra}


def job(name: str = "train", pool_name: str = "gpus", **extra) -> dict:
    return {"kind": "job", "name": name, "image": "nvcr.io/nvidia/pytorch:24.08-py3", "nodePool": pool_name,
            "gpu": {"count": 1}, **extra}


def stack(product: str = "Tesla-T4", **sections) -> dict:
    s = {"mode": "operator", "nodePools": [pool(product)], "workloads": [job()]}
    s.update(copy.deepcopy(sections))
    return s


def shared(strategy: str, replicas: int, product: str = "Tesla-T4", **profile) -> dict:
    """One pool sharing its GPUs with profile 's', one job taking a share."""
    return stack(product, devicePlugin={"sharingProfiles": {"s": {"strategy": strategy, "replicas": replicas,
                                                                  **profile}}},
                 nodePools=[pool(product, sharing="s")], workloads=[job(gpu={"count": 1, "shared": True})])


def warnings_of(sections: dict) -> list[str]:
    return [f"{i.path}: {i.message}" for i in fact_warnings(parse_sections(sections, "Pulumi.t.yaml"))]


ERRORS = [
    pytest.param(stack("Tesla-P100-PCIE-16GB", operator={"driver": {"version": "590.44.01"}}),
                 "gpufleet:operator.driver.version",
                 ["'590.44.01' (R590) does not drive the GPUs of node pool 'gpus' (Tesla-P100-PCIE-16GB, Pascal",
                  "R580 is the last driver branch for Pascal", "advertise no nvidia.com/gpu", "version 580.173.02"],
                 id="R590 on Pascal"),
    pytest.param(stack("Tesla-M60"), "gpufleet:operator.driver.version",
                 ["'595.91.07' (R595, the default pin) does not drive", "Maxwell", "driver.enabled: false"],
                 id="the default pin on Maxwell"),
    pytest.param(stack("GRID-K520"), "gpufleet:operator.driver.version",
                 ["R470 is the last driver branch for Kepler", "ships no R470 driver container"], id="Kepler"),
    pytest.param(stack("NVIDIA-B200", operator={"driver": {"version": "535.309.01"}}),
                 "gpufleet:operator.driver.version",
                 ["'535.309.01' (R535) is older than 570.133.20, the first driver gpu-operator's platform support "
                  "names for the GPUs of node pool 'gpus' (NVIDIA-B200", "fix: version 570.133.20 or newer"],
                 id="B200 below its first driver"),
    pytest.param(shared("mps", 2, "Tesla-M60", ) | {"operator": {"driver": {"enabled": False}}},
                 "gpufleet:nodePools[0].sharing",
                 ["MPS profile 's' on node pool 'gpus' (Tesla-M60, Maxwell, compute capability 5.2)",
                  "no per-client limits", "fix: a timeSlicing profile"], id="MPS on Maxwell"),
    pytest.param(stack(operator={"chartVersion": "v1.11.0"}, cluster={"kubernetesVersion": "1.25"}),
                 "gpufleet:operator.chartVersion",
                 ["'v1.11.0' creates a node.k8s.io/v1beta1 RuntimeClass", "Kubernetes 1.25 no longer serves",
                  "on Kubernetes 1.25 (gpufleet:cluster.kubernetesVersion)", "fix: chartVersion v26.7.0"],
                 id="operator 1.11 on Kubernetes 1.25"),
]


@pytest.mark.parametrize("sections, path, fragments", ERRORS)
def test_fact_rule_error_names_path_cause_and_fix(sections, path, fragments):
    found = [e for e in errors_of(sections) if e.startswith(path + ": ")]
    assert found, errors_of(sections)
    assert all(f in found[0] for f in fragments), found[0]


@pytest.mark.parametrize("sections", [
    pytest.param(stack("Tesla-P100-PCIE-16GB", operator={"driver": {"version": "580.173.02"}}), id="R580 on Pascal"),
    pytest.param(stack("Tesla-M60", operator={"driver": {"enabled": False}}), id="host driver on Maxwell"),
    pytest.param(stack("GRID-K520", mode="standalone"), id="standalone uses the host driver"),
    pytest.param(stack("NVIDIA-B200"), id="B200 with the default pin"),
    pytest.param(shared("mps", 4, "Tesla-V100-SXM2-16GB") | {"operator": {"driver": {"version": "580.173.02"}}},
                 id="MPS on Volta with its last driver branch"),
    pytest.param(shared("timeSlicing", 4, "Tesla-M60") | {"operator": {"driver": {"enabled": False}}},
                 id="time-slicing on Maxwell"),
    pytest.param(stack(operator={"chartVersion": "v22.9.0"}, cluster={"kubernetesVersion": "1.25"}),
                 id="operator 22.9 on Kubernetes 1.25"),
])
def test_configs_the_facts_allow_parse(sections):
    parse_sections(sections, "Pulumi.t.yaml")


def test_mps_on_pascal_through_the_default_profile_names_default_sharing():
    sections = shared("mps", 2, "Tesla-P4")
    sections["devicePlugin"]["defaultSharing"] = "s"
    del sections["nodePools"][0]["sharing"]
    errors = errors_of(sections | {"operator": {"driver": {"enabled": False}}})
    assert [e.split(": ")[0] for e in errors] == ["gpufleet:devicePlugin.defaultSharing"]


WARNINGS = [
    pytest.param(shared("mps", 48), "gpufleet:devicePlugin.sharingProfiles.s.replicas",
                 ["48 MPS replicas pin each client on Tesla-T4 (node pool 'gpus') to 320 MiB", "(unconfirmed",
                  "at most 30 replicas"], id="MPS share below a CUDA context"),
    pytest.param(shared("mps", 30), "gpufleet:workloads[0].gpu",
                 ["node pool 'gpus' pins each MPS client to 512 MiB (Tesla-T4: 15360 MiB / 30 replicas)",
                  "leaving about 12 MiB for this workload, which declares no GPU memory",
                  "fix: declare gpu.memoryMiB", "at most 10 replicas"], id="MPS share with no room for the workload"),
    pytest.param(shared("timeSlicing", 4) | {"workloads": [job(gpu={"count": 2, "shared": True, "memoryMiB": 4000})]},
                 "gpufleet:workloads[0].gpu.count",
                 ["2 time-sliced GPUs per pod on node pool 'gpus'", "they are slices of one GPU", "fix: count 1"],
                 id="two time-slices of a one-GPU node"),
    pytest.param(shared("timeSlicing", 4) | {"workloads": [job(parallelism=2, gpu={"count": 1, "shared": True})]},
                 "gpufleet:workloads[0].gpu",
                 ["time-slices 1 GPU(s) among 2 pod slices", "declares no GPU memory", "CUDA out of memory",
                  "fix: declare gpu.memoryMiB"], id="unchecked memory on a shared GPU"),
    pytest.param(shared("timeSlicing", 4) | {"workloads": [
        {"kind": "inference", "name": "llm", "image": "vllm/vllm-openai:v0.6.3", "nodePool": "gpus", "replicas": 2,
         "gpu": {"count": 1, "shared": True, "memoryMiB": 6000}}]},
                 "gpufleet:workloads[0].gpu",
                 ["vLLM reserves --gpu-memory-utilization 0.9 of the whole GPU's memory",
                  "at least 2 pods share one GPU",
                  "--gpu-memory-utilization 0.45 or less"], id="two vLLM servers on one time-sliced GPU"),
    pytest.param(stack(operator={"driver": {"version": "570.195.03"}}), "gpufleet:operator.driver.version",
                 ["'570.195.03' (R570) is not a branch gpu-operator v26.7.0 was validated with "
                  "(R610, R595, R580, R535)",
                  "ImagePullBackOff"], id="driver branch outside the operator's matrix"),
    pytest.param(stack(cluster={"kubernetesVersion": "1.31"}), "gpufleet:operator.chartVersion",
                 ["'v26.7.0' was validated with Kubernetes 1.32-1.36", "not Kubernetes 1.31",
                  "(24.9.x, 25.3.x, 25.10.x)"],
                 id="Kubernetes below the operator's matrix"),
]


@pytest.mark.parametrize("sections, path, fragments", WARNINGS)
def test_fact_warning_names_path_risk_and_fix(sections, path, fragments):
    parse_sections(sections, "Pulumi.t.yaml")  # a warning never stops the stack
    found = [w for w in warnings_of(sections) if w.startswith(path + ": ")]
    assert found, warnings_of(sections)
    assert all(f in found[0] for f in fragments), found[0]


@pytest.mark.parametrize("sections", [
    pytest.param(shared("mps", 10), id="MPS shares of 1536 MiB: room beside a CUDA context"),
    pytest.param(shared("mps", 30) | {"workloads": [job(gpu={"count": 1, "shared": True, "memoryMiB": 4})]},
                 id="MPS shares of 512 MiB for a workload that declares what it needs"),
    pytest.param(shared("timeSlicing", 4), id="one pod on a time-sliced GPU"),
    pytest.param(shared("timeSlicing", 4) | {"workloads": [job(parallelism=2, gpu={"count": 1, "shared": True,
                                                                                  "memoryMiB": 4000})]},
                 id="declared memory is left to the capacity check"),
    pytest.param(shared("timeSlicing", 4) | {"workloads": [
        {"kind": "inference", "name": "llm", "image": "vllm/vllm-openai:v0.6.3", "nodePool": "gpus", "replicas": 2,
         "args": ["--gpu-memory-utilization", "0.45"], "gpu": {"count": 1, "shared": True, "memoryMiB": 6000}}]},
                 id="vLLM servers that leave room for each other"),
    pytest.param(stack(cluster={"kubernetesVersion": "1.36"}), id="Kubernetes in the operator's matrix"),
    pytest.param(stack(operator={"driver": {"version": "580.173.02"}}), id="a listed driver"),
])
def test_no_warning_where_nothing_is_at_risk(sections):
    assert warnings_of(sections) == []


def test_two_time_slices_that_the_plugin_refuses_are_an_error_not_a_warning():
    sections = shared("timeSlicing", 4, failRequestsGreaterThanOne=True)
    sections["workloads"] = [job(gpu={"count": 2, "shared": True})]
    assert any("UnexpectedAdmissionError" in e for e in errors_of(sections))


def test_the_aks_cluster_version_is_the_one_checked(tmp_path):
    sections = stack(cluster={"kubernetesVersion": "1.34", "aks": {
        "resourceGroup": {"name": "rg"}, "location": "westeurope", "kubernetesVersion": "1.30",
        "gpuPools": [{"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "count": 1, "driver": "operator"}]}},
        nodePools=[], workloads=[])
    assert [w.split(": ")[0] for w in warnings_of(sections)] == ["gpufleet:operator.chartVersion"]
    assert "not Kubernetes 1.30 (gpufleet:cluster.aks.kubernetesVersion)" in warnings_of(sections)[0]


def test_the_warnings_reach_the_loaded_stack_with_the_file_name(tmp_path):
    (tmp_path / "Pulumi.ts.yaml").write_text(
        "config:\n  gpufleet:mode: operator\n"
        "  gpufleet:devicePlugin:\n    sharingProfiles:\n      s: {strategy: mps, replicas: 48}\n"
        "  gpufleet:nodePools:\n    - {name: gpus, nodes: [n0], gpu: {product: Tesla-T4}, sharing: s}\n")
    warnings = load_stack("ts", tmp_path).warnings
    assert any(w.startswith("Pulumi.ts.yaml: gpufleet:devicePlugin.sharingProfiles.s.replicas: 48 MPS replicas")
               for w in warnings), warnings


def test_a_chart_version_gpufleet_does_not_write_values_for_is_a_warning_at_its_path():
    found = warnings_of(stack(operator={"chartVersion": "v25.10.1"}))
    (w,) = [w for w in found if w.startswith("gpufleet:operator.chartVersion: gpufleet writes")]
    assert "gpu-operator v26.7.0" in w and "'v25.10.1'" in w and "Helm ignores a key a chart does not know" in w
    assert "fix: chartVersion v26.7.0" in w
    standalone = stack(mode="standalone", devicePlugin={"chartVersion": "0.17.0"})
    assert any(w.startswith("gpufleet:devicePlugin.chartVersion: gpufleet writes its values for "
                            "nvidia-device-plugin 0.20.0") for w in warnings_of(standalone))
    assert not [w for w in warnings_of(stack()) if "gpufleet writes its values" in w]  # the pinned charts
