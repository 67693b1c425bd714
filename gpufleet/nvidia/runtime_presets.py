"""Container-toolkit settings per Kubernetes distribution (nvidia-stack.md section 3).

The toolkit reads its containerd paths from `toolkit.env`; each preset is the set of variables the
distribution needs. Vanilla containerd needs none: the operator's defaults are its paths.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuntimePreset:
    """Where a distribution keeps containerd's config and socket."""

    name: str
    config_path: str | None
    socket: str | None
    config_source: str | None = None
    #: What `node.status.nodeInfo.containerRuntimeVersion` / `kubeletVersion` show on such nodes.
    kubelet_version_marker: str | None = None


PRESETS: dict[str, RuntimePreset] = {
    "containerd": RuntimePreset("containerd", None, None),
    "k3s": RuntimePreset(
        "k3s",
        "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        "/run/k3s/containerd/containerd.sock",
        kubelet_version_marker="+k3s",
    ),
    # rke2-docs for operator v25.10.x / v26.x: only the socket is set.
    "rke2": RuntimePreset("rke2", None, "/run/k3s/containerd/containerd.sock", kubelet_version_marker="+rke2"),
    "microk8s": RuntimePreset(
        "microk8s",
        "/var/snap/microk8s/current/args/containerd-template.toml",
        "/var/snap/microk8s/common/run/containerd.sock",
        config_source="file=/var/snap/microk8s/current/args/containerd.toml",
    ),
}

#: Paths the operator uses when nothing is set (object_controls.go).
DEFAULT_CONTAINERD_CONFIG = "/etc/containerd/config.toml"
DEFAULT_CONTAINERD_SOCKET = "/run/containerd/containerd.sock"
