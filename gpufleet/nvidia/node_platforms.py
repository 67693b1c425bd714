"""What a GPU node's operating system, container runtime and kubelet say about the NVIDIA stack it can run,
read from the Node object (`status.nodeInfo.osImage`, `containerRuntimeVersion`, `kubeletVersion`) and from
the labels that name an OS (NFD's `system-os_release.ID`, GKE's `cloud.google.com/gke-os-distribution`).

Sources, per operating system (the versions read):
- Talos Linux: siderolabs/docs talos/v1.10 configure-your-talos-cluster/hardware-and-drivers/
  nvidia-gpu-proprietary.mdx and nvidia-gpu.mdx: the driver comes as system extensions
  (`nonfree-kmod-nvidia` or `nvidia-open-gpu-kernel-modules`, plus `nvidia-container-toolkit`) built for one
  Talos release; the extension registers an `nvidia` containerd runtime that is not the default, so the
  device plugin is installed with `runtimeClassName=nvidia`. No driver container image is built for Talos.
- Bottlerocket: bottlerocket.dev settings reference `settings.kubelet-device-plugins.nvidia.*` (1.23.x to
  1.54.x): the `*-nvidia` variants ship the driver and run NVIDIA's k8s-device-plugin as a host service
  (sharing, MIG and the device list strategy are OS settings) with the NVIDIA container runtime in legacy
  or CDI mode ("Supported NVIDIA Container Runtime modes"); the root filesystem is read-only.
- Container-Optimized OS (GKE): NVIDIA/cloud-native-docs gpu-operator/google-gke.rst (@3050258): COS is
  supported only with Google's driver installer (`driver.enabled=false`), whose driver lives under
  `/home/kubernetes/bin/nvidia` (`hostPaths.driverInstallDir` and `toolkit.installDir` there); GKE runs its
  own GPU device plugin DaemonSet on GPU nodes unless they carry
  `gke-no-default-nvidia-gpu-device-plugin=true`.
- Amazon Linux 2023 and Flatcar Container Linux: not in gpu-operator's platform support (NVIDIA/
  cloud-native-docs gpu-operator/platform-support.rst, v26.7.0: Ubuntu, RHEL, RHCOS). EKS's accelerated
  AL2023 NVIDIA AMIs include the NVIDIA kernel modules and driver (Amazon EKS User Guide, "Use EKS-optimized
  accelerated AMIs for GPU instances"; awslabs/amazon-eks-ami, AL2023 template `enable_accelerator=nvidia`).
  A driver container may exist for them (a community or self-built image), so this is a warning.
- Red Hat Enterprise Linux CoreOS: supported with the driver container (OpenShift, CRI-O;
  platform-support.rst).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

#: NFD's label of the OS the node runs (`ID` of /etc/os-release): talos, bottlerocket, cos, amzn, flatcar,
#: rhcos.
NFD_OS_LABEL = "feature.node.kubernetes.io/system-os_release.ID"
#: GKE's label of the node image's OS: cos or ubuntu.
GKE_OS_LABEL = "cloud.google.com/gke-os-distribution"
#: GKE labels every node with accelerators; its own device plugin DaemonSet selects it.
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
#: The node label that keeps GKE's device plugin off a node (google-gke.rst).
GKE_NO_DEVICE_PLUGIN_LABEL = "gke-no-default-nvidia-gpu-device-plugin"

DriverContainer = Literal["supported", "unvalidated", "impossible"]


@dataclass(frozen=True)
class NodeOs:
    """One operating system family as the GPU stack meets it."""

    key: str
    name: str
    os_image: str
    """Regular expression on `status.nodeInfo.osImage`."""
    os_release_ids: tuple[str, ...]
    """Values of NFD's system-os_release.ID (and GKE's gke-os-distribution) for this OS."""
    driver_container: DriverContainer
    """Whether gpu-operator's driver container can run there."""
    why: str = ""
    """What happens to the driver container there, and what the OS does instead."""
    driver_root: str | None = None
    """Where the host driver lives, when it is not the host's root."""
    own_device_plugin: str = ""
    own_toolkit: str = ""
    """How the OS ships the NVIDIA container runtime itself; empty where the operator's toolkit installs it."""
    """How the OS (or its managed platform) runs a device plugin of its own; empty where it does not."""
    nvidia_default_runtime: bool | None = None
    """Whether the OS's own NVIDIA runtime is containerd's default (False: pods name the RuntimeClass)."""


OPERATING_SYSTEMS: tuple[NodeOs, ...] = (
    NodeOs("talos", "Talos Linux", r"^Talos\b", ("talos",), "impossible",
           why="Talos is immutable and loads the NVIDIA driver only from its system extensions "
               "(nonfree-kmod-nvidia or nvidia-open-gpu-kernel-modules with nvidia-container-toolkit), built "
               "for one Talos release; no driver container image exists for it, so the driver pod never gets "
               "ready",
           nvidia_default_runtime=False),
    NodeOs("bottlerocket", "Bottlerocket", r"^Bottlerocket\b", ("bottlerocket",), "impossible",
           why="Bottlerocket's root filesystem is read-only and its *-nvidia variants ship the driver in the "
               "image; a driver container cannot install kernel modules there (a variant without -nvidia has "
               "no driver at all: use an *-nvidia variant)",
           own_device_plugin="the *-nvidia variants run NVIDIA's device plugin as a host service "
                             "(settings.kubelet-device-plugins.nvidia)",
           own_toolkit="the *-nvidia variants ship the NVIDIA container runtime (legacy and CDI modes) and "
                       "write containerd's config from their own settings"),
    NodeOs("cos", "Container-Optimized OS", r"^Container-Optimized OS\b", ("cos",), "impossible",
           why="the GPU operator supports COS only with Google's driver installer; its driver container "
               "does not run on COS",
           driver_root="/home/kubernetes/bin/nvidia"),
    NodeOs("amzn2023", "Amazon Linux 2023", r"^Amazon Linux 2023\b", ("amzn",), "unvalidated",
           why="Amazon Linux 2023 is not among the operator's supported operating systems; EKS's accelerated "
               "AL2023 NVIDIA AMIs ship the driver already"),
    NodeOs("flatcar", "Flatcar Container Linux", r"^Flatcar Container Linux\b", ("flatcar",), "unvalidated",
           why="Flatcar is not among the operator's supported operating systems and its /usr is read-only; "
               "the driver pod needs a driver image built for Flatcar"),
    NodeOs("rhcos", "Red Hat Enterprise Linux CoreOS", r"^Red Hat Enterprise Linux CoreOS\b", ("rhcos",),
           "supported"),
    NodeOs("rhel", "Red Hat Enterprise Linux", r"^Red Hat Enterprise Linux\b(?! CoreOS)", ("rhel",),
           "supported"),
    NodeOs("ubuntu", "Ubuntu", r"^Ubuntu\b", ("ubuntu",), "supported"),
)


def node_os(os_image: str, labels: dict[str, str]) -> NodeOs | None:
    """The OS a node runs, from its osImage, else (no osImage given) from NFD's or GKE's OS label; None when
    nothing says, or the osImage names an OS gpufleet has no facts for (NFD's `amzn` is Amazon Linux 2 too)."""
    if os_image:
        return next((o for o in OPERATING_SYSTEMS if re.search(o.os_image, os_image)), None)
    return os_named(labels)


def os_named(labels: dict[str, str]) -> NodeOs | None:
    """The OS a set of labels names (a node's, or a node selector's)."""
    named = {str(labels.get(NFD_OS_LABEL) or "").lower(), str(labels.get(GKE_OS_LABEL) or "").lower()} - {""}
    return next((o for o in OPERATING_SYSTEMS if named & set(o.os_release_ids)), None)


def gke_device_plugin_runs(labels: dict[str, str]) -> bool:
    """GKE runs its own device plugin on this node (a GKE GPU node without the opt-out label)."""
    return GKE_ACCELERATOR_LABEL in labels and labels.get(GKE_NO_DEVICE_PLUGIN_LABEL) != "true"


# ---- container runtimes ----------------------------------------------------------------------------------

Version = tuple[int, ...]


def version_of(text: str) -> Version | None:
    """The leading numbers of a version: `v1.31.2+k3s1` -> (1, 31, 2), `1.7.23-1` -> (1, 7, 23),
    `v1.30.5-gke.1014001` -> (1, 30, 5); None when it starts with no number."""
    m = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", (text or "").strip())
    if m is None:
        return None
    return tuple(int(g) for g in m.groups() if g is not None)


def runtime_of(container_runtime_version: str) -> tuple[str, Version | None] | None:
    """(`containerd` / `docker` / `cri-o` / ..., its version) of `containerd://1.7.23`; None when empty."""
    name, sep, rest = (container_runtime_version or "").partition("://")
    if not sep or not name:
        return None
    return name.lower(), version_of(rest)


def show_version(version: Version) -> str:
    return ".".join(map(str, version))


#: The first NVIDIA container toolkit that writes containerd's config version 3, which containerd 2.x reads
#: (NVIDIA/nvidia-container-toolkit CHANGELOG.md, v1.17.4: "Add support for containerd version 3 config").
TOOLKIT_FIRST_CONTAINERD_2 = (1, 17, 4)

#: The toolkit each gpu-operator release pins (`toolkit.version` of deployments/gpu-operator/values.yaml at
#: each tag). v24.9.2 is the first to pin v1.17.4; earlier releases pin older toolkits (pins only grow).
OPERATOR_TOOLKITS: tuple[tuple[Version, Version], ...] = (
    ((24, 9, 2), (1, 17, 4)), ((25, 3, 4), (1, 17, 8)), ((25, 10, 1), (1, 18, 1)), ((26, 3, 3), (1, 19, 1)),
    ((26, 7, 0), (1, 20, 0)),
)
#: The first gpu-operator release whose pinned toolkit writes containerd 2.x's config.
OPERATOR_FIRST_CONTAINERD_2 = OPERATOR_TOOLKITS[0][0]


def toolkit_reads_containerd_2(operator: Version, toolkit_override: str | None) -> bool:
    """Whether the toolkit an operator release deploys (its pin, or a `toolkit.version` override) writes a
    config containerd 2.x reads."""
    if toolkit_override:
        version = version_of(toolkit_override)
        return version is None or version >= TOOLKIT_FIRST_CONTAINERD_2  # a digest: not judged
    return operator >= OPERATOR_FIRST_CONTAINERD_2


# ---- configs a distribution writes from a template -----------------------------------------------------

@dataclass(frozen=True)
class RegeneratedConfig:
    """A containerd config file the distribution writes afresh from a template at every start."""

    distribution: str
    path: str
    template: str
    template_containerd_2: str
    documented_target: bool = False
    """NVIDIA's and the distribution's docs point the toolkit at this file (k3s re-adds the nvidia runtime it
    finds at each start, so the edit may be lost without harm)."""


#: k3s-io/docs docs/advanced.md ("Configuring containerd"): k3s (and RKE2, which shares the agent code) writes
#: `config.toml` at each start from its built-in template or from `config.toml.tmpl` (containerd 1.7) /
#: `config-v3.toml.tmpl` (containerd 2.0) beside it; edits of `config.toml` are lost at the next restart.
#: rancher/rke2-docs docs/add-ons/gpu_operators.md: "The NVIDIA operator restarts containerd with a hangup
#: call which restarts RKE2", and sets only CONTAINERD_SOCKET (older NVIDIA docs: the config.toml.tmpl).
#: k3s's config.toml is the path the k3s docs and NVIDIA (NVIDIA/gpu-operator#406) give the toolkit, and k3s
#: adds the nvidia runtimes it detects at each start (k3s-io/docs docs/advanced.md, "NVIDIA Container Runtime
#: Support").
REGENERATED_CONFIGS: tuple[RegeneratedConfig, ...] = (
    RegeneratedConfig("rke2", "/var/lib/rancher/rke2/agent/etc/containerd/config.toml",
                      "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl",
                      "/var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.tmpl"),
    RegeneratedConfig("k3s", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
                      "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl",
                      "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.tmpl",
                      documented_target=True),
)


def regenerated_config(path: str | None) -> RegeneratedConfig | None:
    return next((r for r in REGENERATED_CONFIGS if path and path.rstrip("/") == r.path), None)


def regenerated_config_problem(path: str, containerd: Version | None = None) -> str | None:
    """Why the toolkit must not edit `path`, or None where it may."""
    regenerated = regenerated_config(path)
    if regenerated is None or regenerated.documented_target:
        return None
    if containerd is None:
        template = (f"{regenerated.template} (containerd 1.x) or {regenerated.template_containerd_2} "
                    "(containerd 2.x)")
    elif containerd[0] >= 2:
        template = f"{regenerated.template_containerd_2} (containerd 2.x)"
    else:
        template = f"{regenerated.template} (containerd 1.x)"
    return (f"{regenerated.distribution} writes {path} afresh from its template at every start (and the "
            f"toolkit's restart of containerd restarts {regenerated.distribution}), so the nvidia runtime "
            "the toolkit adds there is gone after the next restart and GPU pods fail with 'no runtime for "
            f"\"nvidia\" is configured'. Expected the toolkit pointed at the template {template}, or only "
            f"the socket set (the {regenerated.distribution} preset)")


# ---- Kubernetes version floors -------------------------------------------------------------------------

@dataclass(frozen=True)
class KubernetesFloor:
    """The oldest Kubernetes a chart installs on (Helm refuses below its Chart.yaml `kubeVersion`)."""

    chart: str
    minimum: tuple[int, int]
    source: str


KUBERNETES_FLOORS: dict[str, KubernetesFloor] = {f.chart: f for f in (
    KubernetesFloor("gpu-operator", (1, 16), "Chart.yaml of gpu-operator v26.7.0: kubeVersion '>= 1.16.0-0'"),
    KubernetesFloor("nvidia-device-plugin", (1, 10), "Chart.yaml of nvidia-device-plugin 0.20.0: kubeVersion "
                    "'>= 1.10.0-0' (the device plugin API is beta from Kubernetes 1.10)"),
    KubernetesFloor("dra-driver-nvidia-gpu", (1, 32), "Chart.yaml of dra-driver-nvidia-gpu 0.4.1: "
                    "kubeVersion "
                    "'>=1.32.0-0'"),
)}
