"""The policy pack's rules on a workload's pod spec, decided here for both the pack and `gpufleet check`.

`workload_findings` runs every rule that needs nothing but the manifest and a few facts of the planned
setup (`WorkloadFacts`, which default to what holds without a stack): no-visible-devices-bypass,
no-driver-hostpath, the resource names of gpu-request-shape, a privileged (or /dev-mounting) GPU container
(no-privileged-shared-gpu on shared GPUs, gpu-privileged elsewhere), and an MPS client that declares no
memory on a share with little room beside a CUDA context (mps-client-memory). The modules of policies/ call
the same functions, so `plan` and `check` say the same words. gpu-taint-toleration is not here: it needs the
stack's node pools, and `check` schedules against the real nodes' taints already.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpufleet.validation.gpu_requests import DevicePluginFacts, containers, is_list, request_shape_messages
from gpufleet.validation.mps_clients import mps_client_messages
from gpufleet.validation.privileged_gpus import privileged_gpu_messages

MANDATORY, ADVISORY = "mandatory", "advisory"


@dataclass(frozen=True)
class Rule:
    name: str
    level: str
    """The pack's enforcement level: a mandatory rule's finding stops `plan` and fails `check`."""


NO_VISIBLE_DEVICES_BYPASS = Rule("no-visible-devices-bypass", MANDATORY)
NO_DRIVER_HOSTPATH = Rule("no-driver-hostpath", MANDATORY)
GPU_REQUEST_SHAPE = Rule("gpu-request-shape", MANDATORY)
NO_PRIVILEGED_SHARED_GPU = Rule("no-privileged-shared-gpu", MANDATORY)
GPU_PRIVILEGED = Rule("gpu-privileged", ADVISORY)
MPS_CLIENT_MEMORY = Rule("mps-client-memory", ADVISORY)


@dataclass(frozen=True)
class Finding:
    rule: Rule
    message: str

    @property
    def text(self) -> str:
        return f"[{self.rule.name}] {self.message}"


@dataclass(frozen=True)
class WorkloadFacts:
    """The planned setup a workload is judged against; the defaults are what holds without a stack."""

    platform_managed: bool = False
    allowed_host_paths: tuple[str, ...] = ()
    devices: DevicePluginFacts = field(default_factory=DevicePluginFacts)
    shared_resources: frozenset[str] = frozenset()
    """GPU resources served only as shares (time-slicing or MPS replicas) where the workload may land."""
    mps_shares: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """GPU resource -> (the smallest MPS share in MiB, how it is made up), where MPS serves it."""


# ---- where the pod spec is -------------------------------------------------------------------------

#: Kind -> the path from the object to its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "ReplicationController": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def _dig(value: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def describe(kind: str, metadata: Any, fallback_name: str = "") -> str:
    """`Deployment myns/web` (the fallback name when metadata has none)."""
    meta = metadata if isinstance(metadata, Mapping) else {}
    ns = meta.get("namespace")
    return f"{kind} {f'{ns}/' if ns else ''}{meta.get('name') or fallback_name}"


# ---- no-visible-devices-bypass -----------------------------------------------------------------------

VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
NO_GPU_VALUES = {"", "void", "none"}
CDI_ANNOTATION_PREFIX = "cdi.k8s.io/"


def _requests_gpu(container: Mapping) -> bool:
    res = container.get("resources") or {}
    res = res if isinstance(res, Mapping) else {}
    names = {n for part in ("limits", "requests") if isinstance(res.get(part) or {}, Mapping)
             for n in (res.get(part) or {})}
    return any(isinstance(n, str) and n.startswith("nvidia.com/") for n in names)


def visible_devices_bypasses(spec: Any, template_annotations: Any) -> list[str]:
    """What hands a container GPUs outside the device plugin's accounting: an NVIDIA_VISIBLE_DEVICES
    env naming GPUs in a container with no nvidia.com/* request, or a CDI annotation injecting GPUs."""
    found = []
    for c in containers(spec):
        env = c.get("env") or []
        for item in env if is_list(env) else []:
            if not isinstance(item, Mapping):
                continue
            value = item.get("value")
            names_gpus = value is None or str(value).strip().lower() not in NO_GPU_VALUES
            if item.get("name") == VISIBLE_DEVICES_ENV and names_gpus and not _requests_gpu(c):
                shown = value if value is not None else "(from a reference)"
                found.append(f"container '{c.get('name')}' sets {VISIBLE_DEVICES_ENV}={shown}")
    annotations = template_annotations if isinstance(template_annotations, Mapping) else {}
    for key, value in annotations.items():
        if isinstance(key, str) and key.startswith(CDI_ANNOTATION_PREFIX) and "nvidia.com/gpu" in str(value):
            found.append(f"annotation {key}={value} injects GPUs through CDI")
    return found


def visible_devices_message(what: str, bypass: str) -> str:
    return (f"{what}: {bypass} without a GPU resource request, bypassing the device plugin's accounting; "
            "expected a nvidia.com/* resource limit instead (pinning devices is allowed only in "
            "platform-managed mode).")


# ---- no-driver-hostpath ---------------------------------------------------------------------------------

#: Directories that hold (only) driver files: a mount of one of them, or of anything below, is a driver mount.
DRIVER_DIRS = (
    "/usr/local/nvidia",          # toolkit/driver install dir (gpu-operator toolkit.installDir, GKE COS)
    "/run/nvidia/driver",         # gpu-operator driver container's root (hostPaths.driverInstallDir)
    "/run/nvidia",                # its parent (holds driver/); /run/nvidia/mps below is allowed by default
    "/usr/lib64/nvidia",
    "/usr/lib/nvidia",
    "/usr/lib/x86_64-linux-gnu/nvidia",
    "/usr/lib/aarch64-linux-gnu/nvidia",
    "/home/kubernetes/bin/nvidia",  # GKE driver installer
    "/opt/nvidia",
)
#: Single driver files (libraries, tools) in the shared library directories.
DRIVER_FILES = (
    "/usr/lib/x86_64-linux-gnu/libnvidia*", "/usr/lib/x86_64-linux-gnu/libcuda*",
    "/usr/lib/aarch64-linux-gnu/libnvidia*", "/usr/lib/aarch64-linux-gnu/libcuda*",
    "/usr/lib64/libnvidia*", "/usr/lib64/libcuda*", "/usr/lib/libnvidia*", "/usr/lib/libcuda*",
    "/usr/bin/nvidia-*",
)
DEFAULT_ALLOWED = ("/run/nvidia/mps",)


def is_driver_path(path: str, allowed: tuple[str, ...] = DEFAULT_ALLOWED) -> bool:
    path = "/" + path.strip("/") if path.strip("/") else "/"
    if any(path == a or path.startswith(a.rstrip("/") + "/") for a in allowed):
        return False
    if any(path == d or path.startswith(d + "/") for d in DRIVER_DIRS):
        return True
    return any(fnmatch.fnmatch(path, pattern) for pattern in DRIVER_FILES)


def driver_hostpath_messages(what: str, spec: Any, allowed: tuple[str, ...] = ()) -> list[str]:
    """A violation per hostPath volume holding NVIDIA driver files; `allowed` adds to DEFAULT_ALLOWED."""
    if not isinstance(spec, Mapping):
        return []
    allowed = tuple(a for a in allowed if isinstance(a, str)) + DEFAULT_ALLOWED
    found = []
    volumes = spec.get("volumes") or []
    for volume in volumes if is_list(volumes) else []:
        if not isinstance(volume, Mapping):
            continue
        path = _dig(volume, ("hostPath", "path"))
        if isinstance(path, str) and is_driver_path(path, allowed):
            found.append(f"{what} mounts the host's NVIDIA driver files (volume '{volume.get('name')}', "
                         f"hostPath {path}); expected no driver hostPath: request a GPU and let the container "
                         "toolkit inject the driver matching the node.")
    return found


# ---- every rule on one manifest -------------------------------------------------------------------------

def workload_findings(obj: Any, facts: WorkloadFacts = WorkloadFacts()) -> list[Finding]:
    """The findings of the rules above on one manifest object (Kubernetes shape: kind, metadata, spec).

    Objects that are no workload give none. Only names of gpu-request-shape are judged: the quantities
    it also judges are the API server's validation, which `check` reports in the API server's words.
    """
    kind = obj.get("kind") if isinstance(obj, Mapping) else None
    path = POD_SPEC_PATHS.get(kind) if isinstance(kind, str) else None
    spec = _dig(obj, path) if path else None
    if not isinstance(spec, Mapping) or not isinstance(kind, str) or path is None:
        return []
    what = describe(kind, obj.get("metadata"), "(unnamed)")
    found: list[Finding] = []
    if not facts.platform_managed:
        annotations = _dig(obj, (*path[:-1], "metadata", "annotations"))
        found += [Finding(NO_VISIBLE_DEVICES_BYPASS, visible_devices_message(what, b))
                  for b in visible_devices_bypasses(spec, annotations)]
    found += [Finding(NO_DRIVER_HOSTPATH, m)
              for m in driver_hostpath_messages(what, spec, facts.allowed_host_paths)]
    found += [Finding(GPU_REQUEST_SHAPE, m)
              for m in request_shape_messages(what, spec, lambda: facts.devices, api_rules=False)]
    errors, warnings = privileged_gpu_messages(what, spec, facts.shared_resources)
    found += [Finding(NO_PRIVILEGED_SHARED_GPU, m) for m in errors]
    found += [Finding(GPU_PRIVILEGED, m) for m in warnings]
    annotations = _dig(obj, (*path[:-1], "metadata", "annotations"))
    found += [Finding(MPS_CLIENT_MEMORY, m)
              for m in mps_client_messages(what, spec, annotations, facts.mps_shares)]
    return found
