"""A GPU container that runs privileged, or mounts the host's /dev, sees every GPU of the node whatever it
requests: the device plugin's allocation only decides which device nodes an unprivileged container gets.

- A privileged container gets every host device (the CRI runtimes add /dev's devices to it; containerd's
  `privileged_without_host_devices` is false by default, containerd/containerd docs/cri/config.md), so
  /dev/nvidia0..N are all there; with the driver's libraries injected for its own GPU, `nvidia-smi` and CUDA
  see them all.
- A hostPath of /dev (or of /dev/nvidia*) exposes the same device nodes to any container that mounts it.
On a whole-GPU node it may take a GPU another pod was given (a warning: whether the code touches the other
GPUs is the workload's); on a shared GPU (time-slicing, MPS) it bypasses the share the plugin hands out and
MPS's per-client limits altogether (an error).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from gpufleet.validation.gpu_requests import containers, is_list

SHARED_SUFFIX = ".shared"


def _gpu_requests(c: Mapping) -> set[str]:
    res = got if isinstance(got := c.get("resources"), Mapping) else {}
    return {n for part in ("limits", "requests") if isinstance(res.get(part), Mapping)
            for n in res[part] if isinstance(n, str) and n.startswith("nvidia.com/")}


def _dev_volumes(spec: Mapping) -> dict[str, str]:
    """volume name -> hostPath of the pod's volumes that expose the host's device nodes."""
    out = {}
    volumes = spec.get("volumes") or []
    for v in volumes if is_list(volumes) else []:
        path = (v.get("hostPath") or {}).get("path") if isinstance(v, Mapping) and isinstance(
            v.get("hostPath"), Mapping) else None
        if isinstance(path, str):
            norm = "/" + path.strip("/")
            if norm == "/dev" or norm.startswith("/dev/nvidia"):
                out[str(v.get("name"))] = path
    return out


def exposures(spec: Any) -> Iterator[tuple[str, set[str], str]]:
    """(container name, GPU resources it requests, how it sees every GPU) of each GPU container that runs
    privileged or mounts the host's device nodes."""
    if not isinstance(spec, Mapping):
        return
    dev = _dev_volumes(spec)
    for c in containers(spec):
        gpus = _gpu_requests(c)
        if not gpus:
            continue
        security = got if isinstance(got := c.get("securityContext"), Mapping) else {}
        if security.get("privileged") is True:
            yield str(c.get("name")), gpus, "runs privileged (securityContext.privileged: true)"
            continue
        mounts = c.get("volumeMounts") or []
        for m in mounts if is_list(mounts) else []:
            if isinstance(m, Mapping) and m.get("name") in dev:
                yield str(c.get("name")), gpus, f"mounts the host's {dev[m['name']]} (volume '{m['name']}')"
                break


def privileged_gpu_messages(what: str, spec: Any,
                            shared_resources: frozenset[str]) -> tuple[list[str], list[str]]:
    """(errors, warnings): a privileged GPU container on a shared GPU is an error, elsewhere a warning.
    `shared_resources`: resource names the nodes (or the stack's pools) advertise only as shares."""
    errors, warnings = [], []
    for name, gpus, how in exposures(spec):
        shared = sorted(g for g in gpus if g.endswith(SHARED_SUFFIX) or g in shared_resources)
        asked = ", ".join(sorted(gpus))
        if shared:
            errors.append(
                f"{what}: container '{name}' {how} and requests {asked}, a share of a GPU the device plugin "
                "time-slices or runs under MPS: it sees every GPU of the node and all of their memory, so "
                "the shares (and MPS's per-client memory and thread limits) no longer hold for it or for "
                "the pods it shares with; expected no privileged mode and no /dev hostPath on a GPU "
                "workload (the device plugin gives the container its device; use a capability it needs, "
                "e.g. SYS_PTRACE, instead).")
        else:
            warnings.append(
                f"{what}: container '{name}' {how} and requests {asked}: it sees every GPU of the node, not "
                "only the one(s) allocated to it, and may take memory or compute from the pods the others "
                "are allocated to; expected no privileged mode and no /dev hostPath on a GPU workload, or "
                "verify that it limits itself (CUDA_VISIBLE_DEVICES) to what it requested.")
    return errors, warnings


def _shares(labels: Mapping[str, str], resource: str) -> bool:
    """GFD's labels say the node serves `resource` as time-slicing or MPS replicas."""
    replicas = labels.get(f"{resource}.replicas", "")
    strategy = labels.get(f"{resource}.sharing-strategy", "")
    return (replicas.isdigit() and int(replicas) > 1) or strategy in ("time-slicing", "mps")


def shared_resources(nodes) -> frozenset[str]:
    """The nvidia.com resources that every node advertising them serves as shares (GFD's
    `<resource>.replicas` / `.sharing-strategy` labels): a pod requesting one gets a share wherever it
    lands."""
    advertised: dict[str, list[bool]] = {}
    for n in nodes:
        for name, count in (n.allocatable or {}).items():
            if name.startswith("nvidia.com/") and count:
                advertised.setdefault(name, []).append(_shares(n.labels or {}, name))
    return frozenset(name for name, shared in advertised.items() if all(shared))
