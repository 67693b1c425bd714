"""Container-toolkit settings per Kubernetes distribution (NVIDIA/gpu-operator v26.7.0 controllers/
object_controls.go `transformForRuntime`; docs/mistakes.md), and how a Node shows which distribution it runs.

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
    # k0s runs its own containerd (/var/lib/k0s/bin/containerd --address=/run/k0s/containerd.sock
    # --config=/etc/k0s/containerd.toml) and imports every *.toml in /etc/k0s/containerd.d/ (k0s >= 1.27.1);
    # its docs point the operator's toolkit at a file there ("Runtime", "Using nvidia-container-runtime",
    # docs/runtime.md of k0sproject/k0s). k0s nodes report kubeletVersion `v1.x.y+k0s`. Unconfirmed: whether
    # toolkit >= 1.18 (operator >= v25.10), which adds an import of its own drop-in to that file, works on
    # every k0s release (NVIDIA/gpu-operator#1835 reports k0s not following the second import).
    "k0s": RuntimePreset(
        "k0s",
        "/etc/k0s/containerd.d/nvidia.toml",
        "/run/k0s/containerd.sock",
        kubelet_version_marker="+k0s",
    ),
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

#: Label prefixes only MicroK8s nodes carry (e.g. `microk8s.io/cluster=true`, `node.kubernetes.io/microk8s-worker`).
MICROK8S_LABEL_PREFIXES = ("microk8s.io/", "node.kubernetes.io/microk8s-")


def distribution_of(kubelet_version: str, container_runtime: str, labels: dict[str, str]) -> str | None:
    """The preset a node needs, from its facts: k3s / rke2 / k0s by the marker in kubeletVersion, microk8s by
    its labels, containerd for other containerd nodes (or a node that does not say), None for another runtime
    (cri-o, docker), which no preset describes."""
    for preset in PRESETS.values():
        if preset.kubelet_version_marker and preset.kubelet_version_marker in kubelet_version:
            return preset.name
    if any(k.startswith(MICROK8S_LABEL_PREFIXES) for k in labels):
        return "microk8s"
    if container_runtime.startswith("containerd://") or not container_runtime:
        return "containerd"
    return None
