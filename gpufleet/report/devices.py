"""A node's GPUs and the units the device plugin hands out on them, from the node's labels and allocatable.

A unit is what one pod's request of 1 gets: a whole GPU, a MIG instance, or one MPS / time-sliced share of
either. Layout rules (what a label set implies; real MIG layouts can differ in slice positions only):
- `nvidia.com/gpu.replicas` > 1 splits every unit of a device into that many shares (MPS or time-slicing,
  `nvidia.com/gpu.sharing-strategy`); the allocatable counts are divided by it to get the devices.
- MIG `single` (product label `<product>-MIG-<profile>`): the instances fill GPUs of that product in order,
  as many per GPU as the profile allows. MIG `mixed`: `nvidia.com/gpu.count` physical GPUs; the whole ones
  are `nvidia.com/gpu`; the `nvidia.com/mig-<profile>` instances fill the rest, largest first, first fit.
- Inside a GPU, instances take the lowest memory-slice start their profile allows (the MIG profile tables).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil

from gpufleet.capacity.dra import DRA_KINDS, dra_objects
from gpufleet.capacity.model import Node
from gpufleet.capacity.quantity import parse
from gpufleet.errors import InputError
from gpufleet.manifests.workloads import flatten
from gpufleet.nvidia.mig_profiles import TABLES, MigProfile, MigTable
from gpufleet.nvidia.products import find_product
from gpufleet.scheduling.dra_offer import attribute, node_devices

MIG_PREFIX = "nvidia.com/mig-"
GPU = "nvidia.com/gpu"


@dataclass(frozen=True)
class Unit:
    """One allocatable unit: what it is served as, where it sits on its GPU, and the memory it gives."""

    resource: str
    kind: str  # whole | mig | mps | time-slicing
    x: float  # left edge, fraction of the GPU's memory axis
    width: float
    y: float  # top edge, fraction of the GPU's compute axis
    height: float
    memory_mib: int | None
    label: str
    slot: int = 0  # the device (whole GPU or MIG instance) this unit belongs to, numbered within its GPU
    mig_profile: str | None = None


@dataclass(frozen=True)
class Gpu:
    product: str
    memory_mib: int | None
    units: tuple[Unit, ...]


def _strip_shared(resource: str) -> str:
    return resource.removesuffix(".shared")


def _profile_of(resource: str) -> str:
    return _strip_shared(resource)[len(MIG_PREFIX):].replace(".me", "+me")


def _place(table: MigTable, profiles: list[MigProfile]) -> list[tuple[MigProfile, int]] | None:
    """Memory-slice starts for these instances on one GPU (largest first), or None when they do not fit."""
    if sum(p.compute_slices for p in profiles) > table.compute_slices:
        return None
    order = sorted(profiles, key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))

    def go(i: int, used: frozenset[int]) -> list[tuple[MigProfile, int]] | None:
        if i == len(order):
            return []
        p = order[i]
        for start in p.starts:
            span = frozenset(range(start, start + p.memory_slices))
            if start + p.memory_slices <= table.memory_slices and not span & used:
                rest = go(i + 1, used | span)
                if rest is not None:
                    return [(p, start)] + rest
        return None

    return go(0, frozenset())


def _fill_gpus(table: MigTable, instances: list[MigProfile], gpus: int) -> list[list[MigProfile]]:
    """First fit, largest first, over at least `gpus` GPUs (more when they do not fit)."""
    bins: list[list[MigProfile]] = [[] for _ in range(max(gpus, 0))]
    for p in sorted(instances, key=lambda p: (-p.memory_slices, -p.compute_slices, p.name)):
        for b in bins:
            if _place(table, b + [p]) is not None:
                b.append(p)
                break
        else:
            bins.append([p])
    return bins


def _shares(base: Unit, replicas: int, strategy: str, resource: str, slot: int = 0) -> list[Unit]:
    if replicas <= 1:
        return [Unit(resource, base.kind, base.x, base.width, base.y, base.height, base.memory_mib, base.label, slot,
                     base.mig_profile)]
    kind = "mps" if strategy == "mps" else "time-slicing"
    w = base.width / replicas
    mem = base.memory_mib // replicas if (base.memory_mib is not None and kind == "mps") else base.memory_mib
    return [Unit(resource, kind, base.x + k * w, w, base.y, base.height, mem,
                 f"{base.label}, {kind} share {k + 1}/{replicas}", slot, base.mig_profile) for k in range(replicas)]


def _mig_gpu(product: str, memory: int | None, table: MigTable, profiles: list[MigProfile], resource_of,
             replicas: int, strategy: str) -> Gpu:
    units: list[Unit] = []
    placed = _place(table, profiles) or [(p, 0) for p in profiles]
    for slot, (p, start) in enumerate(sorted(placed, key=lambda e: e[1])):
        base = Unit(resource_of(p), "mig", start / table.memory_slices, p.memory_slices / table.memory_slices,
                    0.0, p.compute_slices / table.compute_slices, p.memory_mib, f"MIG {p.name}", slot, p.name)
        units += _shares(base, replicas, strategy, resource_of(p), slot)
    return Gpu(product, memory, tuple(units))


def node_gpus(node: Node) -> list[Gpu]:
    """The GPUs of a node, each with its units in allocation order."""
    labels = node.labels
    product_label = labels.get("nvidia.com/gpu.product", "").removesuffix("-SHARED")
    base_name, _, single_profile = product_label.partition("-MIG-")
    product = find_product(base_name) if base_name else None
    name = product.key if product else (base_name or "GPU")
    memory = product.memory_mib if product else None
    if memory is None and labels.get("nvidia.com/gpu.memory", "").isdigit():
        memory = int(labels["nvidia.com/gpu.memory"])
    table = TABLES.get(product.mig_table) if product and product.mig_table else None
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "none")
    try:
        replicas = max(int(labels.get("nvidia.com/gpu.replicas", "1") or 1), 1)
    except ValueError:
        replicas = 1
    counts = {r: v for r, v in node.allocatable.items() if r.startswith("nvidia.com/") and v > 0
              and (_strip_shared(r) == GPU or _strip_shared(r).startswith(MIG_PREFIX))}

    def devices(resource: str) -> int:
        return counts[resource] // replicas if replicas > 1 else counts[resource]

    gpus: list[Gpu] = []
    gpu_resources = [r for r in counts if _strip_shared(r) == GPU]
    mig_resources = sorted(r for r in counts if _strip_shared(r).startswith(MIG_PREFIX))
    whole_unit = Unit("", "whole", 0.0, 1.0, 0.0, 1.0, memory, f"whole {name}")
    if single_profile and table and single_profile in table.profiles and gpu_resources:
        r = gpu_resources[0]
        p = table.profiles[single_profile]
        n = devices(r)
        per = _fill_gpus(table, [p] * n, ceil(n / max(p.max_count, 1)))
        return [_mig_gpu(name, memory, table, b, lambda _p, r=r: r, replicas, strategy) for b in per if b]
    for r in gpu_resources:
        for _ in range(devices(r)):
            gpus.append(Gpu(name, memory, tuple(_shares(whole_unit, replicas, strategy, r))))
    if mig_resources and table:
        instances, resource_by_profile = [], {}
        for r in mig_resources:
            found = table.profiles.get(_profile_of(r))
            if found is None:
                continue
            resource_by_profile[found.name] = r
            instances += [found] * devices(r)
        try:
            physical = int(labels.get("nvidia.com/gpu.count", "0") or 0)
        except ValueError:
            physical = 0
        for b in _fill_gpus(table, instances, physical - len(gpus)):
            if b:
                gpus.append(_mig_gpu(name, memory, table, b, lambda p: resource_by_profile[p.name], replicas,
                                     strategy))
    return gpus


def dra_gpus(nodes: Sequence[Node], manifests: Sequence[dict]) -> dict[str, list[tuple[str, Gpu]]]:
    """node -> its whole GPUs published in DRA ResourceSlices (devices of `type` gpu), each with its device
    label (driver/pool/name): a DRA node advertises no `nvidia.com/gpu`, so its GPUs are drawn from these."""
    objects = dra_objects(o for o in flatten(manifests) if o.get("kind") in DRA_KINDS)
    if not objects.slices:
        return {}
    out: dict[str, list[tuple[str, Gpu]]] = {}
    for node, devices in zip(nodes, node_devices(objects, nodes), strict=True):
        for d in devices:
            if attribute(d, "type") != "gpu":
                continue
            name = attribute(d, "productName") or "GPU"
            product = find_product(name)
            memory = product.memory_mib if product else None
            try:
                memory = int(parse((d.capacity.get("memory") or {}).get("value")) / 2**20)
            except InputError:
                pass
            shown = product.key if product else name
            unit = Unit("", "whole", 0.0, 1.0, 0.0, 1.0, memory, f"whole {shown}")
            out.setdefault(node.name, []).append((d.label, Gpu(shown, memory, (unit,))))
    return out
