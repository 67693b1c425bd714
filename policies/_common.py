"""Helpers shared by the policies: pod specs of workload resources, quantities, GPU resource names, and
the stack config a policy checks against.

Props arrive as the Pulumi resources' inputs (camelCase manifest keys, numbers as floats). During
preview any value may be unknown; touching it raises `UnknownValueError`. Per-resource loops use
`each_known` so that one unknown value skips that resource instead of the whole stack policy.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pulumi_policy.proxy import UnknownValueError

# Quantities and where pod specs sit are shared with `gpufleet check` (gpufleet.validation).
from gpufleet.validation.gpu_requests import quantity, shown  # noqa: F401  (re-exported to the policies)
from gpufleet.validation.workload_policies import POD_SPEC_PATHS as KIND_POD_SPEC_PATHS

if TYPE_CHECKING:  # the pack imports the config models only when a policy reads a stack
    from gpufleet.config.stack import StackConfig

#: Resource type -> the path from its props to the pod spec (the kinds gpufleet.validation reads manifests of).
_API_GROUPS = {"Pod": "core/v1", "ReplicationController": "core/v1", "Deployment": "apps/v1",
               "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1", "Job": "batch/v1",
               "CronJob": "batch/v1"}
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {f"kubernetes:{_API_GROUPS[kind]}:{kind}": path
                                              for kind, path in KIND_POD_SPEC_PATHS.items()}
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
CONFIGMAP_TYPE = "kubernetes:core/v1:ConfigMap"
SERVICE_TYPE = "kubernetes:core/v1:Service"
NODE_PATCH_TYPE = "kubernetes:core/v1:NodePatch"

NVIDIA_PREFIX = "nvidia.com/"
LEGACY_GPU = "alpha.kubernetes.io/nvidia-gpu"
#: Extended resources the NVIDIA device plugin (and gpufleet) can advertise.
GPU_RESOURCE = re.compile(r"^nvidia\.com/(gpu|gpu\.shared|mig-[^/]+)$")

#: Config properties every stack-aware policy accepts (see docs/policies.md "Stack config").
STACK_CONFIG_PROPERTIES: dict[str, Any] = {
    "stack": {"type": "string", "description": "Stack whose Pulumi.<stack>.yaml describes the planned GPU "
              "setup. Default: PULUMI_STACK, else the stack named in the resource URNs."},
    "projectDir": {"type": "string", "description": "Directory holding Pulumi.yaml and the stack files, "
                   "relative to the policy pack. Default: the pack's parent directory."},
}


def dig(value: Any, *path: str) -> Any:
    """value[path[0]][path[1]]..., or None when a step is missing or not a mapping."""
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
        if value is None:
            return None
    return value


def pod_spec(resource_type: str, props: Any) -> dict | None:
    path = POD_SPEC_PATHS.get(resource_type)
    return dig(props, *path) if path else None


def pod_template_metadata(resource_type: str, props: Any) -> dict:
    path = POD_SPEC_PATHS.get(resource_type)
    if not path:
        return {}
    return dig(props, *path[:-1], "metadata") or {} if len(path) > 1 else dig(props, "metadata") or {}


def containers(spec: Any) -> Iterator[dict]:
    """Init, regular and ephemeral containers of a pod spec."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from (spec or {}).get(key) or []


def kind_of(resource_type: str) -> str:
    return resource_type.rsplit(":", 1)[-1]


def describe(resource_type: str, props: Any, name: str = "") -> str:
    """`Deployment myns/web` (falls back to the Pulumi resource name)."""
    meta = dig(props, "metadata") or {}
    obj = meta.get("name") or name
    ns = meta.get("namespace")
    return f"{kind_of(resource_type)} {ns + '/' if ns else ''}{obj}"


def each_known(items: Iterable[Any], fn: Callable[[Any], object]) -> list[str]:
    """Run fn on every item; an item touching an unknown preview value is skipped. Returns why each was."""
    skipped = []
    for item in items:
        try:
            fn(item)
        except UnknownValueError as e:
            skipped.append(str(getattr(e, "message", e)))
    return skipped


# ---- the stack config a policy checks against ------------------------------------------------------

PACK_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class StackRef:
    stack: str
    project_dir: Path


def stack_ref(config: dict | None, urn: str | None = None) -> StackRef | None:
    """Which stack config to load: policy config `stack`, else PULUMI_STACK, else the stack in the URN."""
    config = config or {}
    stack = config.get("stack") or os.environ.get("PULUMI_STACK")
    if not stack and urn and urn.startswith("urn:pulumi:"):
        stack = urn[len("urn:pulumi:"):].split("::", 1)[0]
    if not stack:
        return None
    project = Path(config.get("projectDir") or "..")
    if not project.is_absolute():
        project = (PACK_DIR / project).resolve()
    return StackRef(stack, project)


def load_stack_config(ref: StackRef | None) -> StackConfig | None:
    """The validated StackConfig of `ref`, or None when there is no such stack file (or it is invalid:
    config errors are `gpufleet validate`'s job; the policies then check the resources alone)."""
    if ref is None:
        return None
    path = ref.project_dir / f"Pulumi.{ref.stack}.yaml"
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    return _load(str(ref.project_dir), ref.stack, mtime)


@lru_cache(maxsize=16)
def _load(project_dir: str, stack: str, _mtime: int) -> StackConfig | None:
    from gpufleet.config.loading import load_stack
    from gpufleet.errors import GpufleetError

    try:
        return load_stack(stack, Path(project_dir)).config
    except GpufleetError:
        return None


def stack_config_for(args: Any) -> Any:
    """The StackConfig for a ResourceValidationArgs / StackValidationArgs (None when unavailable)."""
    config = args.get_config() if hasattr(args, "get_config") else getattr(args, "config", None)
    urn = getattr(args, "urn", None)
    if urn is None and getattr(args, "resources", None):
        urn = args.resources[0].urn
    return load_stack_config(stack_ref(config, urn))


def config_of(args: Any) -> dict:
    return (args.get_config() if hasattr(args, "get_config") else getattr(args, "config", None)) or {}
