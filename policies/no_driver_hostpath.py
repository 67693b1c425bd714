"""no-driver-hostpath: workloads get the NVIDIA driver from the container toolkit, never from hostPath."""

from __future__ import annotations

import fnmatch

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy

from policies._common import config_of, describe, pod_spec

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


def validate(args: ResourceValidationArgs, report_violation) -> None:
    spec = pod_spec(args.resource_type, args.props)
    if spec is None:
        return
    allowed = tuple(config_of(args).get("allowedPaths") or ()) + DEFAULT_ALLOWED
    for volume in spec.get("volumes") or []:
        path = (volume.get("hostPath") or {}).get("path")
        if isinstance(path, str) and is_driver_path(path, allowed):
            report_violation(f"{describe(args.resource_type, args.props, args.name)} mounts the host's NVIDIA driver "
                             f"files (volume '{volume.get('name')}', hostPath {path}); expected no driver hostPath: "
                             "request a GPU and let the container toolkit inject the driver matching the node.")


POLICY = ResourceValidationPolicy(
    name="no-driver-hostpath",
    description="Workloads never mount NVIDIA driver libraries or tools from the host with hostPath.",
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={
        "allowedPaths": {"type": "array", "items": {"type": "string"},
                         "description": "Host paths (and everything below) that may be mounted anyway."},
    }),
    validate=validate,
)
