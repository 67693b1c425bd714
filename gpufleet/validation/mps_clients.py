"""An MPS client whose pinned share leaves little beside a CUDA context, where the workload declares no GPU
memory (no `gpufleet.io/expected-gpu-memory-mib` or `gpufleet.io/model-memory` annotation): a warning with
the figures. The device plugin's MPS daemon pins each client to total memory / replicas (k8s-device-plugin
v0.20.0, set_default_device_pinned_mem_limit); the floors are gpufleet.nvidia.sharing's (unconfirmed).
`gpufleet check` reads the shares from GFD's labels (`nvidia.com/gpu.sharing-strategy=mps`,
`nvidia.com/gpu.replicas`, `nvidia.com/gpu.memory` in MiB); the pack from the stack's pools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpufleet.nvidia.sharing import CUDA_CONTEXT_FLOOR_MIB, GPU, MPS_WORKLOAD_ROOM_MIB
from gpufleet.validation.gpu_requests import containers

DECLARED = ("gpufleet.io/expected-gpu-memory-mib", "gpufleet.io/model-memory")


def node_mps_shares(nodes) -> dict[str, tuple[int, str]]:
    """resource -> (the smallest pinned share in MiB, how it is made up) over the nodes serving it by MPS."""
    out: dict[str, tuple[int, str]] = {}
    for n in nodes:
        labels = n.labels or {}
        replicas, memory = labels.get(f"{GPU}.replicas", ""), labels.get(f"{GPU}.memory", "")
        if labels.get(f"{GPU}.sharing-strategy") != "mps" or not replicas.isdigit() or not memory.isdigit():
            continue
        if int(replicas) < 2:
            continue
        share = int(memory) // int(replicas)
        how = f"{memory} MiB / {replicas} replicas on {n.name}"
        for name in (GPU, f"{GPU}.shared"):
            if name not in out or share < out[name][0]:
                out[name] = (share, how)
    return out


def mps_client_messages(what: str, spec: Any, annotations: Any,
                        shares: Mapping[str, tuple[int, str]]) -> list[str]:
    annotations = annotations if isinstance(annotations, Mapping) else {}
    if not shares or any(annotations.get(k) for k in DECLARED):
        return []
    found = []
    for c in containers(spec):
        res = got if isinstance(got := c.get("resources"), Mapping) else {}
        names = {n for part in ("limits", "requests") if isinstance(res.get(part), Mapping)
                 for n in res[part]}
        for name in sorted(n for n in names if n in shares):
            share, how = shares[name]
            left = share - CUDA_CONTEXT_FLOOR_MIB
            if 0 <= left < MPS_WORKLOAD_ROOM_MIB:
                found.append(
                    f"{what}: container '{c.get('name')}' gets an MPS share of {share} MiB of GPU memory "
                    f"({how}); a CUDA context takes roughly {CUDA_CONTEXT_FLOOR_MIB} MiB of it, leaving "
                    f"about {left} MiB, and the workload declares no GPU memory (annotation "
                    "gpufleet.io/expected-gpu-memory-mib), so its fit cannot be checked: past its share a "
                    "client fails with CUDA out of memory while the GPU has memory free; expected the "
                    "annotation (checked against the share), or fewer MPS replicas.")
    return found
