"""`gpufleet:cluster`: which cluster, and how its container runtime is laid out."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpufleet.config._base import Model
from gpufleet.config.aks import AksConfig
from gpufleet.config.k8s_types import ObjectName
from gpufleet.nvidia.runtime_presets import PRESETS

RuntimePresetName = Literal["containerd", "k3s", "rke2", "k0s", "microk8s"]


class RuntimeConfig(Model):
    """The container runtime on the GPU nodes, as the NVIDIA container toolkit must configure it.

    Start from a preset and override single paths when a node differs.
    """

    preset: RuntimePresetName = "containerd"
    """Distribution preset: containerd (vanilla), k3s, rke2, k0s or microk8s. Defaults to containerd."""
    config_path: str | None = None
    """Host path of containerd's top-level config (CONTAINERD_CONFIG). Defaults to the preset's."""
    socket: str | None = None
    """Host path of containerd's socket (CONTAINERD_SOCKET). Defaults to the preset's."""
    drop_in_config: str | None = None
    """Host path of the drop-in file the toolkit writes (RUNTIME_DROP_IN_CONFIG). Defaults to the operator's."""
    config_source: str | None = None
    """Where the toolkit reads the current config from (RUNTIME_CONFIG_SOURCE), e.g. `file`."""
    runtime_class: ObjectName = "nvidia"
    """Name of the RuntimeClass and containerd runtime handler. Defaults to nvidia."""
    set_as_default: bool | None = None
    """Make nvidia containerd's default runtime (NVIDIA_RUNTIME_SET_AS_DEFAULT). Unset: the operator decides
    (with CDI on it does not)."""

    def toolkit_env(self) -> list[dict[str, str]]:
        """The `toolkit.env` entries for this runtime: the preset's paths, then explicit overrides."""
        preset = PRESETS[self.preset]
        pairs = [
            ("CONTAINERD_CONFIG", self.config_path or preset.config_path),
            ("CONTAINERD_SOCKET", self.socket or preset.socket),
            ("RUNTIME_DROP_IN_CONFIG", self.drop_in_config),
            ("RUNTIME_CONFIG_SOURCE", self.config_source or preset.config_source),
        ]
        if self.set_as_default is not None:
            pairs.append(("NVIDIA_RUNTIME_SET_AS_DEFAULT", "true" if self.set_as_default else "false"))
        return [{"name": k, "value": v} for k, v in pairs if v is not None]


class ClusterConfig(Model):
    """The cluster: an existing one (kubeconfig/context; without them Pulumi's ambient KUBECONFIG is used),
    or one this stack creates (`aks`)."""

    kubeconfig: str | None = None
    """Path of the kubeconfig file. Defaults to the Kubernetes provider's own lookup."""
    context: str | None = None
    """kubeconfig context to use. Defaults to the current context."""
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    """Container runtime layout on the GPU nodes."""
    extended_resource_toleration: bool = False
    """Whether the API server runs the ExtendedResourceToleration admission plugin (off by default in
    Kubernetes): then GPU pods tolerate `nvidia.com/gpu` taints automatically."""
    kubernetes_version: str = "1.34"
    """Kubernetes version the manifests are validated against."""
    aks: AksConfig | None = None
    """Create an AKS cluster with GPU node pools and deploy onto it (docs/aks.md). Unset: use an existing
    cluster. Excludes kubeconfig and context."""
