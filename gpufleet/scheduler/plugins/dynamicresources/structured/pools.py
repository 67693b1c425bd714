"""Which devices a node can reach (k8s.io/dynamic-resource-allocation v0.34.1 structured/,
`GatherPools`): slices for the node, by pool, highest generation only."""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.capacity.dra import Device
from gpufleet.capacity.model import Node
from gpufleet.scheduler.helpers.nodeaffinity import node_selector_matches


@dataclass(frozen=True)
class Pool:
    driver: str
    name: str
    devices: tuple[Device, ...]
    complete: bool
    invalid: str | None
    """Why the pool cannot be used (a device name twice), or None."""
    local: bool
    """Every slice is for one node (`nodeName`): an allocation from it pins its claim to that node."""


def _reaches(spec: dict, node: Node) -> bool:
    if spec.get("nodeName"):
        return spec["nodeName"] == node.name
    if spec.get("allNodes"):
        return True
    selector = spec.get("nodeSelector")
    if not selector:
        return False
    return node_selector_matches(selector, node)


def node_pools(slices: list[dict], node: Node) -> list[Pool]:
    """The pools a node can use, in input order of their first slice."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for spec in slices:
        if _reaches(spec, node):
            pool = spec.get("pool") or {}
            grouped.setdefault((spec.get("driver") or "", pool.get("name") or ""), []).append(spec)
    pools = []
    for (driver, name), specs in grouped.items():
        top = max(int((s.get("pool") or {}).get("generation") or 0) for s in specs)
        current = [s for s in specs if int((s.get("pool") or {}).get("generation") or 0) == top]
        wanted = max(int((s.get("pool") or {}).get("resourceSliceCount") or 1) for s in current)
        devices, seen, invalid = [], set(), None
        for s in current:
            for d in s.get("devices") or ():
                if d["name"] in seen:
                    invalid = invalid or f"duplicate device name {d['name']}"
                seen.add(d["name"])
                if d.get("consumesCounters"):
                    continue  # never allocated while DRAPartitionableDevices is off (the 1.34 default)
                devices.append(Device(driver, name, d["name"], d.get("attributes") or {}, d.get("capacity") or {}))
        local = all(s.get("nodeName") for s in current)
        pools.append(Pool(driver, name, tuple(devices), len(current) == wanted, invalid, local))
    return pools
