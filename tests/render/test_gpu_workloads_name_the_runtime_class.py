"""With CDI off, the device plugin hands a container its GPUs through NVIDIA_VISIBLE_DEVICES, which only the
nvidia runtime acts on. Where that runtime is not containerd's default (cluster.runtime.setAsDefault false),
gpufleet's GPU workloads name the RuntimeClass the operator creates, or they would start under runc and see
no GPU. The standalone device plugin hands out GPUs the same way: where nvidia is not the default there
(setAsDefault false, or the k3s / rke2 presets, whose containerd registers nvidia beside runc), the plugin's
and GFD's pods name it too. With CDI on (the default) or nvidia as the default runtime, nothing changes."""

from __future__ import annotations

import copy

import pytest

from gpufleet.charts.gitops import upstream_release
from gpufleet.charts.objects import chart_objects
from gpufleet.config.loading import parse_sections
from gpufleet.render import gpu_stack as r
from gpufleet.render.workloads import workload_objects
from gpufleet.validation.kube import validate_documents
from tests.upstream.upstream_charts import by_kind, chart_archive, helm_template

POOL = {"name": "t4", "nodes": ["t4-0"], "gpu": {"product": "Tesla-T4", "count": 1}}
GPU_JOB = {"kind": "job", "name": "train", "image": "nvcr.io/nvidia/pytorch:24.08-py3", "nodePool": "t4",
           "gpu": {"count": 1}}
CPU_JOB = {"kind": "job", "name": "etl", "image": "python:3.12-slim"}
NOTEBOOK = {"kind": "notebook", "name": "nb", "image": "quay.io/jupyter/pytorch-notebook:2024-08-19", "nodePool": "t4",
            "gpu": {"count": 1}, "service": {"type": "ClusterIP"}}
INFERENCE = {"kind": "inference", "name": "svc", "image": "nvcr.io/nvidia/tritonserver:24.08-py3", "nodePool": "t4",
             "gpu": {"count": 1}, "ports": [{"port": 8000}], "service": {"type": "ClusterIP"}}


def stack(mode="operator", cdi=None, set_as_default=None, runtime_class=None, toolkit=True, preset=None,
          allocation=None):
    runtime = {k: v for k, v in (("setAsDefault", set_as_default), ("runtimeClass", runtime_class),
                                 ("preset", preset)) if v is not None}
    sections = {"mode": mode, "cluster": {"runtime": runtime}, "nodePools": [copy.deepcopy(POOL)],
                "workloads": [copy.deepcopy(w) for w in (GPU_JOB, CPU_JOB, NOTEBOOK, INFERENCE)]}
    if mode == "operator":
        sections["operator"] = {"toolkit": {"enabled": toolkit}, **({"cdi": cdi} if cdi is not None else {})}
    if allocation is not None:
        sections["gpuAllocation"] = allocation
        for w in sections["workloads"]:
            if w.get("gpu"):
                w["gpu"] = {"claim": {"deviceClass": "gpu.nvidia.com"}}
    return parse_sections(sections, "Pulumi.t.yaml")


def pod_specs(cfg) -> dict[str, dict]:
    return {o["metadata"]["name"]: o["spec"]["template"]["spec"] for w in cfg.workloads
            for o in workload_objects(cfg, w) if o["kind"] in ("Deployment", "Job")}


def test_gpu_pods_name_the_nvidia_runtime_class_when_cdi_is_off_and_nvidia_is_not_the_default():
    specs = pod_specs(stack(cdi=False, set_as_default=False))
    assert {n: s.get("runtimeClassName") for n, s in specs.items()} == {
        "train": "nvidia", "etl": None, "nb": "nvidia", "svc": "nvidia"}


def test_the_name_is_the_runtime_class_the_operator_is_told_to_create():
    cfg = stack(cdi=False, set_as_default=False, runtime_class="nvidia-legacy")
    assert pod_specs(cfg)["train"]["runtimeClassName"] == "nvidia-legacy"
    assert r.operator_values(cfg)["operator"]["runtimeClass"] == "nvidia-legacy"


def test_the_operator_chart_renders_the_same_runtime_class_name_into_the_cluster_policy(tmp_path):
    cfg = stack(cdi=False, set_as_default=False)
    up = upstream_release(cfg)
    (policy,) = by_kind(helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                                      tmp_path), "ClusterPolicy").values()
    assert policy["spec"]["operator"]["runtimeClass"] == pod_specs(cfg)["train"]["runtimeClassName"]
    assert policy["spec"]["cdi"]["enabled"] is False
    toolkit_env = {e["name"]: e["value"] for e in policy["spec"]["toolkit"]["env"]}
    assert toolkit_env["NVIDIA_RUNTIME_SET_AS_DEFAULT"] == "false"


@pytest.mark.parametrize("cfg", [
    pytest.param(lambda: stack(), id="CDI on (the chart's default)"),
    pytest.param(lambda: stack(cdi=True, set_as_default=False), id="CDI on, nvidia not default"),
    pytest.param(lambda: stack(cdi=False), id="CDI off, toolkit makes nvidia the default"),
    pytest.param(lambda: stack(cdi=False, set_as_default=True), id="CDI off, nvidia the default"),
    pytest.param(lambda: stack(cdi=False, toolkit=False), id="CDI off, host toolkit, default unknown"),
    pytest.param(lambda: stack(mode="standalone"), id="standalone, the host's runtime unknown"),
    pytest.param(lambda: stack(mode="standalone", preset="k3s", set_as_default=True),
                 id="standalone, k3s default nvidia"),
    pytest.param(lambda: stack(mode="standalone", preset="k3s", allocation="dra"), id="standalone DRA: CDI only"),
])
def test_no_runtime_class_where_the_gpus_reach_the_container_without_it(cfg):
    assert all("runtimeClassName" not in s for s in pod_specs(cfg()).values())


def test_the_generated_chart_carries_it_and_the_pods_validate_against_kubernetes():
    cfg = stack(cdi=False, set_as_default=False)
    jobs = [o.manifest for o in chart_objects(cfg) if o.manifest["kind"] == "Job"]
    assert {j["metadata"]["name"]: j["spec"]["template"]["spec"].get("runtimeClassName") for j in jobs} == {
        "train": "nvidia", "etl": None}
    docs = [o for w in cfg.workloads for o in workload_objects(cfg, w)]
    assert validate_documents(docs, cfg.cluster.kubernetes_version) == []


@pytest.mark.parametrize("runtime", [{"set_as_default": False}, {"preset": "k3s"}, {"preset": "rke2"}],
                         ids=["setAsDefault false", "k3s", "rke2"])
def test_standalone_gpu_pods_and_the_plugin_name_the_runtime_class_where_nvidia_is_not_the_default(runtime):
    cfg = stack(mode="standalone", **runtime)
    assert {n: s.get("runtimeClassName") for n, s in pod_specs(cfg).items()} == {
        "train": "nvidia", "etl": None, "nb": "nvidia", "svc": "nvidia"}
    assert r.device_plugin_values(cfg)["runtimeClassName"] == "nvidia"


def test_the_device_plugin_chart_renders_it_into_the_plugin_and_gfd_daemonsets(tmp_path):
    cfg = stack(mode="standalone", preset="k3s")
    up = upstream_release(cfg)
    daemonsets = by_kind(helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                                       tmp_path), "DaemonSet")
    classes = {name: ds["spec"]["template"]["spec"].get("runtimeClassName") for name, ds in daemonsets.items()}
    plugin_and_gfd = {n: c for n, c in classes.items() if "node-feature-discovery" not in n}
    assert len(plugin_and_gfd) >= 2 and set(plugin_and_gfd.values()) == {"nvidia"}, classes
