"""The real gpu-operator v26.7.0 chart, rendered with `helm template` and each operator-mode stack's release
values, produces the ClusterPolicy gpufleet intends, valid against the chart's own CRD schema."""

from __future__ import annotations

import copy

import pytest

from gpufleet.charts.gitops import upstream_release
from gpufleet.config.loading import load_stack
from gpufleet.nvidia import versions
from gpufleet.render import gpu_stack as r
from gpufleet.render.labels import CONFIG_HASH_ANNOTATION, MIG_CONFIGMAP, SHARING_CONFIGMAP
from tests.conftest import ROOT
from tests.upstream import structural
from tests.upstream.upstream_charts import by_kind, chart_archive, crd_schema, helm_template

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))
OPERATOR_STACKS = [s for s in STACKS if load_stack(s, ROOT).config.mode == "operator"
                   and not load_stack(s, ROOT).config.uses_dra()]  # DRA stacks: test_dra_charts.py


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """stack -> (config, every object the chart renders); each stack rendered once."""
    cache: dict[str, tuple] = {}

    def render(stack: str):
        if stack not in cache:
            cfg = load_stack(stack, ROOT).config
            up = upstream_release(cfg)
            assert (up.chart, up.version) == (versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION)
            objects = helm_template(chart_archive(up.chart, up.version), up.release, up.namespace, up.values,
                                    tmp_path_factory.mktemp(stack))
            cache[stack] = (cfg, objects)
        return cache[stack]

    return render


def cluster_policy(objects: list[dict]) -> dict:
    (policy,) = by_kind(objects, "ClusterPolicy").values()
    return policy


@pytest.fixture(scope="module")
def schema():
    return crd_schema(chart_archive(versions.GPU_OPERATOR_CHART), "nvidia.com_clusterpolicies.yaml", "v1")


def test_the_operator_stacks_are_the_shipped_ones_in_operator_mode():
    assert {"dev", "k3s", "aks", "greed"} <= set(OPERATOR_STACKS)


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_cluster_policy_is_valid_against_the_charts_crd_schema_with_no_field_pruned(stack, rendered, schema):
    _, objects = rendered(stack)
    assert structural.problems(schema, cluster_policy(objects)) == []


def test_strict_schema_check_rejects_unknown_fields_wrong_types_and_enum_violations(rendered, schema):
    _, objects = rendered("dev")
    policy = copy.deepcopy(cluster_policy(objects))
    policy["spec"]["driver"]["enabeld"] = True
    policy["spec"]["toolkit"]["enabled"] = "yes"
    policy["spec"]["mig"]["strategy"] = "both"
    found = structural.problems(schema, policy)
    assert len(found) == 3, found
    assert found[0].startswith("spec.driver: Additional properties are not allowed ('enabeld'")
    assert found[1].startswith("spec.mig.strategy: 'both' is not one of ['none', 'single', 'mixed']")
    assert found[2] == "spec.toolkit.enabled: 'yes' is not of type 'boolean'"


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_driver_is_enabled_and_pinned_as_configured(stack, rendered):
    cfg, objects = rendered(stack)
    driver = cluster_policy(objects)["spec"]["driver"]
    assert driver["enabled"] is cfg.operator.driver.enabled
    if cfg.operator.driver.enabled:
        assert driver["version"] == cfg.operator.driver.version
    else:
        assert not by_kind(objects, "NVIDIADriver")


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_toolkit_gets_the_runtime_presets_containerd_paths_and_runtime_class(stack, rendered):
    cfg, objects = rendered(stack)
    spec = cluster_policy(objects)["spec"]
    env = {e["name"]: e["value"] for e in spec["toolkit"].get("env", [])}
    assert env == {e["name"]: e["value"] for e in cfg.cluster.runtime.toolkit_env()}
    assert spec["operator"]["runtimeClass"] == cfg.cluster.runtime.runtime_class
    if cfg.cluster.runtime.preset == "k3s":
        assert env == {"CONTAINERD_CONFIG": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
                       "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"}
    if cfg.cluster.runtime.preset == "containerd" and not cfg.cluster.runtime.config_path:
        assert "CONTAINERD_CONFIG" not in env  # the operator's own defaults are vanilla containerd's


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_device_plugin_reads_gpufleets_sharing_configmap_and_the_chart_makes_none(stack, rendered):
    cfg, objects = rendered(stack)
    config = cluster_policy(objects)["spec"]["devicePlugin"].get("config", {})
    if r.sharing_config_data(cfg):
        assert config == {"name": SHARING_CONFIGMAP, "default": r.default_sharing_key(cfg)}
    else:
        assert not config.get("name")
    assert SHARING_CONFIGMAP not in by_kind(objects, "ConfigMap")


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_mig_strategy_and_mig_manager_config_are_gpufleets(stack, rendered):
    cfg, objects = rendered(stack)
    spec = cluster_policy(objects)["spec"]
    assert spec["mig"]["strategy"] == cfg.device_plugin.mig_strategy
    assert spec["migManager"]["enabled"] is r.mig_geometries_in_use(cfg)
    if r.mig_geometries_in_use(cfg):
        assert spec["migManager"]["config"] == {"name": MIG_CONFIGMAP, "default": cfg.mig.default}
    assert MIG_CONFIGMAP not in by_kind(objects, "ConfigMap")


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_dcgm_exporter_and_its_service_monitor_follow_the_config(stack, rendered):
    cfg, objects = rendered(stack)
    dcgm = cluster_policy(objects)["spec"]["dcgmExporter"]
    assert dcgm["enabled"] is cfg.operator.dcgm_exporter.enabled
    assert dcgm["serviceMonitor"]["enabled"] is cfg.operator.dcgm_exporter.service_monitor


@pytest.mark.parametrize("stack", OPERATOR_STACKS)
def test_operand_pods_carry_the_config_hash_so_a_changed_configmap_rolls_them(stack, rendered):
    cfg, objects = rendered(stack)
    annotations = cluster_policy(objects)["spec"]["daemonsets"].get("annotations", {})
    if r.sharing_config_data(cfg) or r.mig_geometries_in_use(cfg):
        assert annotations[CONFIG_HASH_ANNOTATION] == r.config_hash(cfg)
    else:
        assert CONFIG_HASH_ANNOTATION not in annotations
