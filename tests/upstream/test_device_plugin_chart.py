"""The real nvidia-device-plugin 0.20.0 chart, rendered with `helm template` and the release values of each
standalone stack, runs the plugin and GFD as gpufleet intends, and in a way mig-manager can pause.

mig-manager v0.15.0 (NVIDIA/mig-parted pkg/mig/reconfigure) pauses GPU clients before a MIG change: it sets
each `nvidia.com/gpu.deploy.<component>` node label that is not "false" to `paused-for-mig-change`, waits
until no pod labelled `app=nvidia-device-plugin-daemonset` (then `app=gpu-feature-discovery`, ...) is left
on the node in DEFAULT_GPU_CLIENTS_NAMESPACE, changes MIG, and sets the labels back to "true".
"""

from __future__ import annotations

import copy

import pytest
import yaml

from gpufleet.charts.gitops import upstream_release
from gpufleet.config.loading import load_stack
from gpufleet.nvidia import versions
from gpufleet.render import gpu_stack as r
from gpufleet.render.labels import SHARING_CONFIGMAP
from tests.conftest import ROOT, loaded_from, plan_shipped
from tests.upstream.upstream_charts import by_kind, chart_archive, helm_template

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))
STANDALONE_STACKS = [s for s in STACKS if load_stack(s, ROOT).config.mode == "standalone"]
#: The deploy labels mig-manager pauses (reconfigure.go shutdownKubernetesGPUClients).
PAUSED_BY_MIG_MANAGER = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "nvsm")


def dev_as_standalone():
    """The dev stack's sections (MPS sharing profile) in standalone mode: covers the chart's config wiring."""
    raw = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    sections = {k.split(":", 1)[1]: (yaml.safe_load(v) if isinstance(v, str) and k != "gpufleet:mode" else v)
                for k, v in raw.items() if k.startswith("gpufleet:")}
    sections["mode"] = "standalone"
    sections.pop("operator", None)
    return loaded_from(sections, "dev-standalone").config


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    cache: dict[str, tuple] = {}

    def render(stack: str):
        if stack not in cache:
            cfg = dev_as_standalone() if stack == "dev-standalone" else load_stack(stack, ROOT).config
            up = upstream_release(cfg)
            assert (up.chart, up.version) == (versions.DEVICE_PLUGIN_CHART, versions.DEVICE_PLUGIN_VERSION)
            objects = helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                                    tmp_path_factory.mktemp(stack))
            cache[stack] = (cfg, up, objects)
        return cache[stack]

    return render


def gpu_daemonsets(objects: list[dict]) -> dict[str, dict]:
    """The release's own DaemonSets (plugin, GFD, MPS control daemon), not the NFD subchart's."""
    return {n: d for n, d in by_kind(objects, "DaemonSet").items() if "node-feature-discovery" not in n}


def containers(ds: dict) -> dict[str, dict]:
    spec = ds["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"] + (spec.get("initContainers") or [])}


def env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def selected(node_labels: dict[str, str], pod_spec: dict) -> bool:
    """Does the DaemonSet controller place (and keep) this pod on a node with these labels? (nodeSelector)"""
    return all(node_labels.get(k) == v for k, v in pod_spec.get("nodeSelector", {}).items())


def paused(node_labels: dict[str, str]) -> dict[str, str]:
    """The node's labels while mig-manager changes MIG (its maybeSetPaused)."""
    out = dict(node_labels)
    for component in PAUSED_BY_MIG_MANAGER:
        key = f"nvidia.com/gpu.deploy.{component}"
        out[key] = "false" if node_labels.get(key) == "false" else "paused-for-mig-change"
    return out


def test_the_standalone_stacks_include_mig():
    assert "mig" in STANDALONE_STACKS


@pytest.mark.parametrize("stack", [*STANDALONE_STACKS, "dev-standalone"])
def test_plugin_and_gfd_get_the_configured_mig_strategy(stack, rendered):
    cfg, _, objects = rendered(stack)
    daemonsets = gpu_daemonsets(objects)
    plugin = containers(daemonsets["nvidia-device-plugin"])["nvidia-device-plugin-ctr"]
    assert env(plugin).get("MIG_STRATEGY", "none") == cfg.device_plugin.mig_strategy
    gfd = daemonsets.get("nvidia-device-plugin-gpu-feature-discovery")
    assert (gfd is not None) is cfg.device_plugin.gfd
    if gfd is not None:
        assert env(containers(gfd)["gpu-feature-discovery-ctr"]).get("MIG_STRATEGY",
                                                                     "none") == cfg.device_plugin.mig_strategy


@pytest.mark.parametrize("stack", [*STANDALONE_STACKS, "dev-standalone"])
def test_plugin_reads_gpufleets_sharing_configmap_with_its_default(stack, rendered):
    cfg, _, objects = rendered(stack)
    for name, ds in gpu_daemonsets(objects).items():
        volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
        if r.sharing_config_data(cfg):
            assert volumes["available-configs"]["configMap"]["name"] == SHARING_CONFIGMAP, name
            managers = [c for c in containers(ds).values() if c.get("command") == ["config-manager"]]
            assert managers and {env(c)["DEFAULT_CONFIG"] for c in managers} == {r.default_sharing_key(cfg)}, name
        else:
            assert "available-configs" not in volumes, name
    assert SHARING_CONFIGMAP not in by_kind(objects, "ConfigMap")  # gpufleet owns it; the chart must not


def test_mps_sharing_in_standalone_mode_runs_the_mps_control_daemon(rendered):
    _, _, objects = rendered("dev-standalone")
    assert "nvidia-device-plugin-mps-control-daemon" in gpu_daemonsets(objects)


@pytest.fixture(scope="module")
def mig_plan():
    return plan_shipped("mig")


def test_mig_node_starts_with_every_gpu_client_scheduled(rendered, mig_plan):
    cfg, _, objects = rendered("mig")
    (patch,) = mig_plan.by_type("kubernetes:core/v1:NodePatch")
    labels = patch.inputs["metadata"]["labels"]
    (mig_manager,) = mig_plan.by_type("kubernetes:apps/v1:DaemonSet")
    assert selected(labels, mig_manager.inputs["spec"]["template"]["spec"])
    daemonsets = gpu_daemonsets(objects)
    # (The MPS control daemon also needs nvidia.com/mps.capable, which only an MPS sharing config sets.)
    for name in ("nvidia-device-plugin", "nvidia-device-plugin-gpu-feature-discovery"):
        assert selected(labels, daemonsets[name]["spec"]["template"]["spec"]), name


def test_mig_managers_pause_empties_the_node_of_plugin_and_gfd_and_it_waits_for_them(rendered, mig_plan):
    _, up, objects = rendered("mig")
    (patch,) = mig_plan.by_type("kubernetes:core/v1:NodePatch")
    during_change = paused(patch.inputs["metadata"]["labels"])
    (mig_manager,) = mig_plan.by_type("kubernetes:apps/v1:DaemonSet")
    mm_spec = mig_manager.inputs["spec"]["template"]["spec"]
    assert selected(during_change, mm_spec)  # mig-manager itself keeps running
    mm_env = {e["name"]: e.get("value") for e in mm_spec["containers"][0]["env"]}
    assert mm_env["DEFAULT_GPU_CLIENTS_NAMESPACE"] == up.namespace
    for name, ds in gpu_daemonsets(objects).items():
        assert ds["metadata"]["namespace"] == up.namespace, name
        assert not selected(during_change, ds["spec"]["template"]["spec"]), f"{name} keeps running during a MIG change"
        # mig-manager lists pods by this label before it touches MIG mode: the chart's pods must carry it.
        assert ds["spec"]["template"]["metadata"]["labels"]["app"] == "nvidia-device-plugin-daemonset", name


def test_without_gpufleets_values_the_chart_would_run_the_plugin_through_a_mig_change(rendered, tmp_path):
    cfg, up, _ = rendered("mig")
    values = copy.deepcopy(up.values)
    values.pop("nodeSelector")
    values.pop("selectorLabelsOverride")
    objects = helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, values, tmp_path)
    plugin = gpu_daemonsets(objects)["nvidia-device-plugin"]
    during_change = paused(r.node_labels(cfg)["a100-node-0"])
    assert selected(during_change, plugin["spec"]["template"]["spec"])
    assert "app" not in plugin["spec"]["template"]["metadata"]["labels"]
