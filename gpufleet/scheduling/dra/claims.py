"""A pod's claims through the check, as the resourceclaim controller and the DynamicResources plugin see them.

A template claim is made afresh for each pod (the controller's generateName `<pod>-<claim>-`); a named
claim is shared: allocated once (by its first consumer, or already in its status) and every consumer
follows its node selector. Devices allocated to existing claims, and to pods placed earlier in the
check, are in use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from gpufleet.capacity.quantity import parse
from gpufleet.scheduling.dra.allocator import Allocator, Claim, OutOfBudget, missing_class
from gpufleet.capacity.dra import Device, DraObjects
from gpufleet.scheduling.dra.pools import Pool, node_pools
from gpufleet.scheduling.filters import node_selector_matches

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_ON_NODE = "resourceclaim not available on the node"
TIMED_OUT = "timed out trying to allocate devices"
RESERVED_FOR_MAX = 256
_NAME_MAX = 57


def generate_name(pod: str, claim: str) -> str:
    """The controller's generateName for a template claim, both parts shortened past 57 characters."""
    name = f"{pod}-{claim}-"
    if len(name) > _NAME_MAX:
        pod, claim = pod[:len(pod) * _NAME_MAX // len(name)], claim[:len(claim) * _NAME_MAX // len(name)]
        name = f"{pod}-{claim}"
    return name


@dataclass
class Needs:
    """A pod's claims: those to allocate (with the shared claim's key, None for a template claim) and those
    already allocated (their node selector, None meaning every node), or why the pod is not tried at all."""

    allocate: list[tuple[Claim, tuple[str, str] | None]] = field(default_factory=list)
    allocated: list[tuple[tuple[str, str], dict | None]] = field(default_factory=list)
    gated: str | None = None
    prefilter: str | None = None


@dataclass
class Shared:
    selector: dict | None
    devices: list[Device]
    consumers: int


class DraState:
    def __init__(self, objects: DraObjects):
        self.objects = objects
        self.in_use: set[tuple[str, str, str]] = set()
        self.shared: dict[tuple[str, str], Shared] = {}
        published = {(spec.get("driver"), (spec.get("pool") or {}).get("name"), d.get("name")): (spec, d)
                     for spec in objects.slices for d in spec.get("devices") or ()}
        for key, claim in objects.claims.items():
            status = claim.get("status") or {}
            allocation = status.get("allocation")
            if not allocation:
                continue
            results = ((allocation.get("devices") or {}).get("results")) or ()
            self.in_use |= {(r["driver"], r["pool"], r["device"]) for r in results if not r.get("adminAccess")}
            found = [published[k] for k in ((r["driver"], r["pool"], r["device"]) for r in results) if k in published]
            devices = [Device(spec["driver"], spec["pool"]["name"], d["name"], d.get("attributes") or {},
                              d.get("capacity") or {}) for spec, d in found]
            self.shared[key] = Shared(allocation.get("nodeSelector"), devices, len(status.get("reservedFor") or ()))
        self._pools: dict[str, list[Pool]] = {}
        self._selected: dict[tuple, bool] = {}
        self._activations: dict[tuple, dict] = {}

    def copy(self) -> "DraState":
        twin = DraState.__new__(DraState)
        twin.objects, twin.in_use, twin._pools = self.objects, set(self.in_use), self._pools
        twin._selected, twin._activations = self._selected, self._activations
        twin.shared = {k: Shared(s.selector, list(s.devices), s.consumers) for k, s in self.shared.items()}
        return twin

    def needs(self, namespace: str, pod: str, spec: dict) -> Needs:
        """What a pod's `resourceClaims` ask for (PreEnqueue and PreFilter of the plugin)."""
        needs = Needs()
        for pc in spec.get("resourceClaims") or ():
            template, named = pc.get("resourceClaimTemplateName"), pc.get("resourceClaimName")
            if template is not None:
                spec_ = self.objects.templates.get((namespace, template))
                if spec_ is None:
                    needs.gated = (f'pod "{namespace}/{pod}": ResourceClaim not created yet (the resourceclaim '
                                   f'controller reports FailedResourceClaimCreation: PodResourceClaim {pc.get("name")}: '
                                   f'resource claim template "{template}": resourceclaimtemplate.resource.k8s.io '
                                   f'"{template}" not found); the pod waits without a scheduling attempt')
                    return needs
                needs.allocate.append((Claim(namespace, generate_name(pod, pc.get("name") or ""), spec_), None))
                continue
            key = (namespace, named)
            claim = self.objects.claims.get(key)
            if claim is None:
                needs.gated = (f'could not find ResourceClaim "{namespace}/{named}"; the pod waits without a '
                               "scheduling attempt")
                return needs
            shared = self.shared.get(key)
            if shared is not None:
                if shared.consumers >= RESERVED_FOR_MAX:
                    needs.gated = (f"ResourceClaim {namespace}/{named} is already reserved for {RESERVED_FOR_MAX} "
                                   "consumers, the most status.reservedFor holds; binding the pod fails")
                    return needs
                needs.allocated.append((key, shared.selector))
            else:
                needs.allocate.append((Claim(namespace, named, claim.get("spec") or {}), key))
        needs.prefilter = missing_class([c for c, _ in needs.allocate], self.objects.classes)
        return needs

    def filter(self, node: Node, needs: Needs) -> list[list[tuple[str, Device]]] | str:
        """The plugin's Filter on one node: devices per claim to allocate, or the reason it fails.

        Raises FilterError for the filter's errors (CEL errors, ...)."""
        for _, selector in needs.allocated:
            if selector and not node_selector_matches(selector, node):
                return NOT_ON_NODE
        if not needs.allocate:
            return []
        pools = self._pools.get(node.name)
        if pools is None:
            pools = self._pools[node.name] = node_pools(self.objects.slices, node)
        try:
            allocator = Allocator(self.objects.classes, pools, self.in_use, self._selected, self._activations)
            found = allocator.allocate([c for c, _ in needs.allocate])
        except OutOfBudget:
            return TIMED_OUT
        return CANNOT_ALLOCATE if found is None else found

    def commit(self, node: Node, needs: Needs, result: list[list[tuple[str, Device]]]) -> tuple[list[Device], list[Device]]:
        """Record a pod placed on `node`: (the devices it uses, those newly allocated to it)."""
        pools = {(p.driver, p.name): p for p in self._pools.get(node.name) or ()}
        used: list[Device] = []
        for (claim, key), picked in zip(needs.allocate, result):
            devices = [d for _, d in picked]
            used += devices
            self.in_use |= {d.key for d in devices}
            if key is not None:
                local = any(pools[(d.driver, d.pool)].local for d in devices)
                selector = ({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                     "values": [node.name]}]}]} if local else None)
                self.shared[key] = Shared(selector, devices, 1)
        for key, _ in needs.allocated:
            self.shared[key].consumers += 1
            used += self.shared[key].devices
        return used, [d for picked in result for _, d in picked]


def release_unreserved(state: "DraState", needs: Needs) -> bool:
    """The plugin's PostFilter after a pod with claims found no node: an allocated claim that was not
    available on some node and is reserved for nobody is deallocated (its devices free for later pods).
    One claim per failed attempt; True when one was."""
    for key, selector in needs.allocated:
        shared = state.shared.get(key)
        if shared is not None and selector is not None and shared.consumers == 0:
            state.in_use -= {d.key for d in shared.devices}
            del state.shared[key]
            return True
    return False


def memory_mib(devices: list[Device]) -> int | None:
    """GPU memory of the devices (their `memory` capacity), in MiB; None when none publishes it."""
    sizes = []
    for d in devices:
        cap = d.capacity.get("memory") or d.capacity.get(f"{d.driver}/memory")
        if cap is not None:
            sizes.append(int(parse(cap["value"])) // 2**20)
    return sum(sizes) if sizes else None
