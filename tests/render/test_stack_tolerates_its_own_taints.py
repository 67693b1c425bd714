"""A GPU node pool with a custom taint (`dedicated=gpu:NoSchedule`) still gets the whole GPU stack: every
DaemonSet gpufleet deploys there (the operator's operands through the ClusterPolicy / GPUCluster /
NVIDIADriver, NFD's worker, the standalone device plugin, GFD and MPS daemon, the DRA kubelet plugin,
gpufleet's own mig-manager) tolerates the pool's taints as well as everything the chart tolerates by
default. Checked on what the real upstream charts render with `helm template`. A stack without such
taints renders exactly as the charts' defaults say."""

from __future__ import annotations

import copy
import tarfile

import pytest
import yaml

from gpufleet.charts.gitops import upstream_release
from gpufleet.charts.objects import chart_objects
from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.nvidia import versions
from gpufleet.render import tolerations as tol
from tests.conftest import ROOT, plan_sections
from tests.upstream.upstream_charts import by_kind, chart_archive, helm_template

DEDICATED = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
DRA_API = ("--api-versions", "resource.k8s.io/v1/DeviceClass", "--api-versions", "resource.k8s.io/v1")
SHIPPED = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))


def tolerated(tolerations: list[dict], taint: dict) -> bool:
    """The API's ToleratesTaint, written out for the test."""
    for t in tolerations or []:
        if t.get("effect") not in (None, "", taint["effect"]):
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] == taint["key"] and (t.get("operator") == "Exists" or t.get("value", "") == taint.get("value", "")):
            return True
    return False


def sections_of(stack: str) -> dict:
    raw = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {k.split(":", 1)[1]: copy.deepcopy(v) for k, v in raw.items() if k.startswith("gpufleet:")}


def variant(stack: str, *taints: dict, **over) -> dict:
    """A shipped stack's sections with `over` applied and `taints` added to every node pool."""
    sections = {**sections_of(stack), **over}
    sections["nodePools"] = [{**p, "taints": [*p.get("taints", []), *taints]} for p in sections["nodePools"]]
    return sections


#: name -> sections builder: every way gpufleet deploys the GPU stack.
VARIANTS = {
    "operator": lambda *t: variant("dev", *t),
    "operator-dra": lambda *t: variant("dra", *t),
    "standalone-mps": lambda *t: {k: v for k, v in variant("dev", *t, mode="standalone").items() if k != "operator"},
    "standalone-mig": lambda *t: variant("mig", *t),
    "standalone-dra": lambda *t: variant("dra", *t, mode="standalone",
                                         draDriver={**sections_of("dra")["draDriver"], "version": "v0.4.1"}),
}


def render(sections: dict, tmp_path_factory) -> list[dict]:
    cfg = parse_sections(sections, "Pulumi.t.yaml")
    up = upstream_release(cfg)
    return helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                         tmp_path_factory.mktemp("chart"), *DRA_API)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """variant -> (objects without the taint, objects with it), each rendered once by the real chart."""
    cache: dict[str, tuple] = {}

    def get(name: str):
        if name not in cache:
            build = VARIANTS[name]
            cache[name] = (render(build(), tmp_path_factory), render(build(DEDICATED), tmp_path_factory))
        return cache[name]

    return get


def gpu_node_tolerations(objects: list[dict]) -> dict[str, list]:
    """What decides whether each GPU-node pod of the release may run on a tainted node: every DaemonSet's
    pod tolerations, and the operator CRs' `daemonsets.tolerations` (applied to all their operand DaemonSets)."""
    out = {f"DaemonSet/{n}": d["spec"]["template"]["spec"].get("tolerations", [])
           for n, d in by_kind(objects, "DaemonSet").items()}
    for kind in ("ClusterPolicy", "GPUCluster"):
        out |= {f"{kind}/{n}": o["spec"]["daemonsets"].get("tolerations", [])
                for n, o in by_kind(objects, kind).items()}
    out |= {f"NVIDIADriver/{n}": o["spec"].get("tolerations", []) for n, o in by_kind(objects, "NVIDIADriver").items()}
    return out


EXPECTED = {
    "operator": {"ClusterPolicy/cluster-policy", "DaemonSet/gpu-operator-node-feature-discovery-worker"},
    "operator-dra": {"GPUCluster/gpu-cluster", "NVIDIADriver/default",
                     "DaemonSet/gpu-operator-node-feature-discovery-worker"},
    "standalone-mps": {"DaemonSet/nvidia-device-plugin", "DaemonSet/nvidia-device-plugin-gpu-feature-discovery",
                       "DaemonSet/nvidia-device-plugin-mps-control-daemon",
                       "DaemonSet/nvidia-device-plugin-node-feature-discovery-worker"},
    "standalone-mig": {"DaemonSet/nvidia-device-plugin", "DaemonSet/nvidia-device-plugin-gpu-feature-discovery",
                       "DaemonSet/nvidia-device-plugin-mps-control-daemon",
                       "DaemonSet/nvidia-device-plugin-node-feature-discovery-worker"},
    "standalone-dra": {"DaemonSet/dra-driver-nvidia-gpu-kubelet-plugin"},
}


@pytest.mark.parametrize("name", VARIANTS)
def test_every_gpu_node_daemon_of_the_chart_tolerates_the_pools_custom_taint(name, rendered):
    plain, tainted = rendered(name)
    found = gpu_node_tolerations(tainted)
    assert set(found) == EXPECTED[name]  # every DaemonSet of the release runs on GPU nodes (NFD's worker on all)
    for what in EXPECTED[name]:
        assert tolerated(found[what], DEDICATED), (what, found[what])
        # the fix is gpufleet's, not the chart's
        assert not tolerated(gpu_node_tolerations(plain)[what], DEDICATED), what


@pytest.mark.parametrize("name", VARIANTS)
def test_the_charts_own_tolerations_are_kept_and_only_the_pool_taint_is_added(name, rendered):
    plain, tainted = rendered(name)
    before, after = gpu_node_tolerations(plain), gpu_node_tolerations(tainted)
    assert set(before) == set(after)
    for what in before:
        assert after[what] == [*before[what], {"key": "dedicated", "operator": "Equal", "value": "gpu",
                                               "effect": "NoSchedule"}], what


@pytest.mark.parametrize("name", VARIANTS)
def test_without_custom_taints_the_release_values_set_no_toleration(name):
    cfg = parse_sections(VARIANTS[name](), "Pulumi.t.yaml")
    assert "tolerations" not in yaml.safe_dump(upstream_release(cfg).values)


GPU_PRESENT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_NO_VALUE = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
PREFER = {"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}


@pytest.mark.parametrize("name, taint", [
    pytest.param(name, taint, id=f"{name}: {tid}")
    for name in ("operator", "operator-dra", "standalone-mig", "standalone-dra")
    for tid, taint in (("nvidia.com/gpu=present", GPU_PRESENT), ("nvidia.com/gpu without value", GPU_NO_VALUE),
                       ("PreferNoSchedule", PREFER))
    if not (name == "standalone-mig" and taint is GPU_NO_VALUE)])  # the plugin chart's NFD: next test
def test_a_taint_the_charts_already_tolerate_changes_no_value(name, taint):
    plain = upstream_release(parse_sections(VARIANTS[name](), "Pulumi.t.yaml")).values
    assert upstream_release(parse_sections(VARIANTS[name](taint), "Pulumi.t.yaml")).values == plain


def test_the_device_plugin_charts_nfd_worker_gets_a_valueless_gpu_taint_and_nothing_else_changes():
    plain = upstream_release(parse_sections(VARIANTS["standalone-mig"](), "Pulumi.t.yaml")).values
    values = upstream_release(parse_sections(VARIANTS["standalone-mig"](GPU_NO_VALUE), "Pulumi.t.yaml")).values
    assert values.pop("nfd") == {"worker": {"tolerations": [
        *tol.DEVICE_PLUGIN_NFD_WORKER,
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "", "effect": "NoSchedule"}]}}
    assert values == plain


def test_two_pools_with_the_same_taint_get_one_toleration_and_different_taints_one_each():
    sections = variant("dev", DEDICATED)
    sections["nodePools"].append({**copy.deepcopy(sections["nodePools"][0]), "name": "more", "nodes": ["n-more"],
                                  "taints": [DEDICATED, {"key": "team", "value": "ml", "effect": "NoExecute"}]})
    values = upstream_release(parse_sections(sections, "Pulumi.t.yaml")).values
    assert [t["key"] for t in values["daemonsets"]["tolerations"]] == ["nvidia.com/gpu", "dedicated", "team"]
    assert values["daemonsets"]["tolerations"][2] == {"key": "team", "operator": "Equal", "value": "ml",
                                                      "effect": "NoExecute"}


def test_operator_nfd_off_leaves_the_nfd_subchart_values_alone():
    values = upstream_release(parse_sections(variant("dev", DEDICATED, operator={"nfd": False}),
                                             "Pulumi.t.yaml")).values
    assert "node-feature-discovery" not in values
    assert tolerated(values["daemonsets"]["tolerations"], DEDICATED)


def test_gpufleets_own_mig_manager_tolerates_the_pool_taint_in_the_plan_and_the_chart():
    sections = variant("mig", DEDICATED)
    (mig_manager,) = plan_sections(sections).by_type("kubernetes:apps/v1:DaemonSet")
    planned = mig_manager.inputs["spec"]["template"]["spec"]["tolerations"]
    assert planned == [*tol.MIG_MANAGER,
                       {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    (in_chart,) = [o.manifest for o in chart_objects(parse_sections(sections, "Pulumi.t.yaml"))
                   if o.manifest["kind"] == "DaemonSet"]
    assert in_chart["spec"]["template"]["spec"]["tolerations"] == planned
    (plain,) = plan_sections(variant("mig")).by_type("kubernetes:apps/v1:DaemonSet")
    assert plain.inputs["spec"]["template"]["spec"]["tolerations"] == [dict(t) for t in tol.MIG_MANAGER]


def chart_values(chart: str) -> dict:
    with tarfile.open(chart_archive(chart)) as tar:
        return yaml.safe_load(tar.extractfile(f"{chart}/values.yaml").read())


def test_gpufleets_copy_of_each_charts_default_tolerations_is_the_charts_own():
    operator = chart_values(versions.GPU_OPERATOR_CHART)
    plugin = chart_values(versions.DEVICE_PLUGIN_CHART)
    dra = chart_values(versions.DRA_DRIVER_CHART)
    assert list(tol.OPERATOR_DAEMONSETS) == operator["daemonsets"]["tolerations"]
    assert list(tol.OPERATOR_NFD_WORKER) == operator["node-feature-discovery"]["worker"]["tolerations"]
    assert list(tol.DEVICE_PLUGIN) == plugin["tolerations"]
    assert list(tol.DEVICE_PLUGIN_NFD_WORKER) == plugin["nfd"]["worker"]["tolerations"]
    assert list(tol.DRA_KUBELET_PLUGIN) == dra["kubeletPlugin"]["tolerations"]


def effective(values: dict, path: tuple[str, ...], default: tuple) -> list:
    node = values
    for key in path:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return node or list(default)


@pytest.mark.parametrize("stack", SHIPPED)
def test_each_shipped_stacks_gpu_daemons_tolerate_its_own_pool_taints(stack):
    cfg = load_stack(stack, ROOT).config
    up = upstream_release(cfg)
    if up is None:
        pytest.skip("platform-managed: gpufleet deploys no GPU daemons")
    lists = {"gpu-operator": [(("daemonsets", "tolerations"), tol.OPERATOR_DAEMONSETS),
                              (("node-feature-discovery", "worker", "tolerations"), tol.OPERATOR_NFD_WORKER)],
             "nvidia-device-plugin": [(("tolerations",), tol.DEVICE_PLUGIN),
                                      (("nfd", "worker", "tolerations"), tol.DEVICE_PLUGIN_NFD_WORKER)],
             "dra-driver-nvidia-gpu": [(("kubeletPlugin", "tolerations"), tol.DRA_KUBELET_PLUGIN)]}[up.release]
    taints = [t.model_dump() for p in cfg.node_pools for t in p.taints if t.effect != "PreferNoSchedule"]
    for path, default in lists:
        for taint in taints:
            assert tolerated(effective(up.values, path, default), taint), (path, taint)


def test_the_tainted_shipped_stacks_are_covered():
    assert {"k3s", "aks"} <= {s for s in SHIPPED if any(p.taints for p in load_stack(s, ROOT).config.node_pools)}
