"""Requests that no node meets at all, explained so that the fix points the right way.

- An extended resource no node advertises: a misspelt name (`nvidia.com/gpus`) gets the nearest name the
  nodes have; a MIG profile the GPUs are not split into gets the profiles they are, and which GPUs have the
  profile at all.
- More of a GPU resource per pod than any node of a known GPU product holds (the product tables in
  gpufleet.nvidia): adding nodes cannot help, so the fix does not suggest it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from gpufleet.capacity.model import Node
from gpufleet.nvidia.mig_profiles import TABLES, resource_name
from gpufleet.nvidia.products import PRODUCTS

GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
_SHOWN = 8
#: The most MIG instances one GPU of any known product splits into.
_MOST_INSTANCES = max(p.max_count for t in TABLES.values() for p in t.profiles.values())


def advertised(nodes: Sequence[Node]) -> list[str]:
    """The extended resources (names with a domain) any of the nodes has allocatable."""
    return sorted({r for n in nodes for r, v in n.allocatable.items() if "/" in r and v > 0})


def _listed(names: list[str]) -> str:
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _profile(resource: str) -> str:
    return resource.removeprefix(MIG_PREFIX).removesuffix(".shared").replace(".me", "+me")


def _products_with(profile: str) -> list[str]:
    return [p.key for p in PRODUCTS.values() if p.mig_table and profile in TABLES[p.mig_table].profiles]


def _plugin_names() -> set[str]:
    """Every resource name the NVIDIA device plugin can advertise."""
    names = {GPU, f"{GPU}.shared"}
    for table in TABLES.values():
        for profile in table.profiles:
            names |= {resource_name(profile), f"{resource_name(profile)}.shared"}
    return names


def missing_resource(resource: str, amount: int, nodes: Sequence[Node]) -> tuple[str, str] | None:
    """(summary, fix) when no node advertises `resource`; None when some node does."""
    have = advertised(nodes)
    if resource in have:
        return None
    one = f"{resource} {amount}"
    close = difflib.get_close_matches(resource, have, n=1, cutoff=0.6)
    if resource.startswith(MIG_PREFIX):
        profile = _profile(resource)
        offered = [_profile(r) for r in have if r.startswith(MIG_PREFIX)]
        summary = (f"no node offers MIG profile {profile} (one pod asks for {one}); "
                   + (f"the nodes offer {_listed(offered)}" if offered else "no node offers MIG instances"))
        products = _products_with(profile)
        where = (f"{profile} exists on {_listed(products)}" if products else
                 f"no known GPU has a MIG profile {profile}")
        nearest = f" (nearest: {close[0]})" if close else ""
        fix = f"ask for a profile the nodes offer{nearest}, or split GPUs into {profile} instances ({where})"
        return summary, fix
    summary = (f"no node has {resource} (one pod asks for {one}); "
               + (f"the nodes have {_listed(have)}" if have else "the nodes have no extended resources"))
    if close:
        fix = f"did you mean {close[0]}? ask for {close[0]} {amount}"
    elif resource.startswith("nvidia.com/") and resource not in _plugin_names():
        fix = (f"{resource} is no resource the NVIDIA device plugin advertises: ask for {GPU}, "
               f"{GPU}.shared or {MIG_PREFIX}<profile>")
    else:
        fix = f"ask for a resource the nodes have, or add nodes that advertise {resource}"
    return summary, fix


def most_known(resource: str, nodes: Sequence[Node]) -> tuple[int, str] | None:
    """(the most of `resource` one node of any known GPU product holds, in words), where the product tables
    bound it: `nvidia.com/gpu` (whole GPUs, times the MIG instances or shared replicas one GPU gives as these
    nodes advertise it) and the instances of one MIG profile. None for other resources."""
    if resource == GPU:
        gpus = max(p.max_gpus_per_node for p in PRODUCTS.values())
        per_gpu = 1
        for labels in (n.labels for n in nodes if n.allocatable.get(GPU, 0) > 0):
            single = "-MIG-" in labels.get("nvidia.com/gpu.product", "")
            replicas = labels.get("nvidia.com/gpu.replicas", "1")
            shares = int(replicas) if replicas.isdigit() else 1
            per_gpu = max(per_gpu, (_MOST_INSTANCES if single else 1) * shares)
        units = ""
        if per_gpu > 1:
            units = f" x {per_gpu} units each (as these nodes split or share them) = {gpus * per_gpu}"
        return gpus * per_gpu, f"{gpus} GPUs{units}"
    if resource.startswith(MIG_PREFIX) and not resource.endswith(".shared"):
        profile = _profile(resource)
        best = None
        for p in PRODUCTS.values():
            found = TABLES[p.mig_table].profiles.get(profile) if p.mig_table else None
            if found is not None and (best is None or p.max_gpus_per_node * found.max_count > best[0]):
                most = p.max_gpus_per_node * found.max_count
                best = (most, f"{p.max_gpus_per_node} {p.key} with {found.max_count} {profile} each = {most}")
        return best
    return None
