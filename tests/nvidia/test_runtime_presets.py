"""Which runtime preset a node needs, read from what the Node reports, and the k0s preset's paths."""

from __future__ import annotations

import pytest

from gpufleet.config.loading import parse_sections
from gpufleet.nvidia.runtime_presets import PRESETS, distribution_of


@pytest.mark.parametrize("kubelet, runtime, labels, expected", [
    ("v1.33.3+k3s1", "containerd://2.0.5-k3s1", {}, "k3s"),
    ("v1.31.5+rke2r1", "containerd://1.7.23-k3s2", {}, "rke2"),
    ("v1.34.1+k0s", "containerd://1.7.27", {}, "k0s"),
    ("v1.32.8", "containerd://1.7.27", {"microk8s.io/cluster": "true"}, "microk8s"),
    ("v1.34.1", "containerd://2.1.4", {}, "containerd"),
    ("v1.34.1", "cri-o://1.34.0", {}, None),
    ("v1.34.1", "docker://27.3.1", {}, None),
])
def test_node_facts_name_the_distribution_whose_preset_the_toolkit_needs(kubelet, runtime, labels, expected):
    assert distribution_of(kubelet, runtime, labels) == expected


def test_k0s_preset_points_the_toolkit_at_k0s_drop_in_directory_and_socket():
    cfg = parse_sections({"cluster": {"runtime": {"preset": "k0s"}}}, "Pulumi.t.yaml")
    env = {e["name"]: e["value"] for e in cfg.cluster.runtime.toolkit_env()}
    assert env == {"CONTAINERD_CONFIG": "/etc/k0s/containerd.d/nvidia.toml",
                   "CONTAINERD_SOCKET": "/run/k0s/containerd.sock"}
    assert distribution_of("v1.34.1+k0s", "", {}) == PRESETS["k0s"].name


def test_k0s_paths_can_still_be_overridden_one_at_a_time():
    cfg = parse_sections({"cluster": {"runtime": {"preset": "k0s", "socket": "/run/custom.sock"}}}, "Pulumi.t.yaml")
    env = {e["name"]: e["value"] for e in cfg.cluster.runtime.toolkit_env()}
    assert env == {"CONTAINERD_CONFIG": "/etc/k0s/containerd.d/nvidia.toml", "CONTAINERD_SOCKET": "/run/custom.sock"}
