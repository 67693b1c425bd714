"""What the config alone says about the platform the GPU nodes run: a toolkit pointed at a containerd config
the distribution regenerates (error), a pool that selects nodes of an OS the driver container cannot run on
(warning), a cluster older than the chart's minimum Kubernetes (error). Each names the path and the fix, and
the correct setups beside them pass."""

from __future__ import annotations

import pytest

from gpufleet.config.loading import parse_sections
from gpufleet.config.rules import fact_warnings
from tests.conftest import config_errors as errors_of

RKE2_CONFIG = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"


def stack(**sections) -> dict:
    return {"mode": "operator", "nodePools": [{"name": "gpus", "nodes": ["gpu-0"], "gpu": {"product": "Tesla-T4"}}],
            **sections}


def warnings_of(sections: dict) -> list[str]:
    return [f"{i.path}: {i.message}" for i in fact_warnings(parse_sections(sections, "Pulumi.t.yaml"))]


def test_the_toolkit_pointed_at_rke2s_regenerated_config_is_refused_naming_the_template():
    errors = errors_of(stack(cluster={"runtime": {"preset": "rke2", "configPath": RKE2_CONFIG}}))
    [error] = [e for e in errors if "config.toml.tmpl" in e]
    assert error.startswith(f"gpufleet:cluster.runtime.configPath: '{RKE2_CONFIG}' (CONTAINERD_CONFIG): rke2 writes")
    assert f"{RKE2_CONFIG}.tmpl (containerd 1.x)" in error
    assert "/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl (containerd 2.x)" in error


@pytest.mark.parametrize("runtime", [{"preset": "rke2"}, {"preset": "k3s"},
                                     {"preset": "rke2", "configPath": RKE2_CONFIG + ".tmpl"}],
                         ids=["rke2 preset: the socket only", "k3s preset (documented config.toml)",
                              "rke2 template"])
def test_the_distributions_documented_paths_pass(runtime):
    parse_sections(stack(cluster={"runtime": runtime}), "Pulumi.t.yaml")  # raises ConfigError on any error


@pytest.mark.parametrize("label, value, verdict", [
    ("feature.node.kubernetes.io/system-os_release.ID", "talos", "cannot run there"),
    ("cloud.google.com/gke-os-distribution", "cos", "cannot run there"),
    ("feature.node.kubernetes.io/system-os_release.ID", "flatcar", "is not validated there"),
])
def test_a_pool_of_an_os_the_driver_container_cannot_serve_is_a_warning(label, value, verdict):
    sections = stack()
    sections["nodePools"][0]["nodeSelector"] = {label: value}
    found = [w for w in warnings_of(sections) if w.startswith("gpufleet:nodePools[0].nodeSelector: ")]
    assert found and verdict in found[0] and "fix: operator.driver.enabled: false" in found[0], warnings_of(sections)


def test_the_same_pool_with_the_hosts_driver_or_on_ubuntu_passes():
    talos = stack(operator={"driver": {"enabled": False}})
    talos["nodePools"][0]["nodeSelector"] = {"feature.node.kubernetes.io/system-os_release.ID": "talos"}
    ubuntu = stack()
    ubuntu["nodePools"][0]["nodeSelector"] = {"feature.node.kubernetes.io/system-os_release.ID": "ubuntu"}
    assert [w for s in (talos, ubuntu) for w in warnings_of(s) if "nodeSelector" in w] == []


@pytest.mark.parametrize("mode, version, floor, chart", [
    ("operator", "1.15", "1.16", "gpu-operator"), ("standalone", "1.9", "1.10", "nvidia-device-plugin")])
def test_a_cluster_older_than_the_charts_minimum_kubernetes_is_refused(mode, version, floor, chart):
    errors = errors_of({**stack(cluster={"kubernetesVersion": version}), "mode": mode})
    assert any(e.startswith(f"gpufleet:cluster.kubernetesVersion: Kubernetes {version} (gpufleet:cluster."
                            f"kubernetesVersion) is older than {floor}, the oldest Kubernetes {chart} supports")
               for e in errors), errors


def test_the_floor_itself_installs():
    parse_sections(stack(cluster={"kubernetesVersion": "1.16"}), "Pulumi.t.yaml")
