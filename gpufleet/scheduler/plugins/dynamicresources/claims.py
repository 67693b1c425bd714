"""A pod's claims through the check, as the resourceclaim controller and the DynamicResources plugin see them.

A template claim is made afresh for each pod (the controller's generateName `<pod>-<claim>-`); a named
claim is shared: allocated once (by its first consumer, or already in its status) and every consumer
follows its node selector. Devices allocated to existing claims, and to pods placed earlier in the
check, are in use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gpufleet.capacity.dra import Device, DraObjects
from gpufleet.capacity.model import Node
from gpufleet.capacity.quantity import parse
from gpufleet.scheduler.helpers.nodeaffinity import node_selector_matches
from gpufleet.scheduler.plugins.dynamicresources import structured
from gpufleet.scheduler.plugins.dynamicresources.structured import (
    Allocator,
    Claim,
    FilterError,
    Looks,
    OutOfBudget,
    Pool,
    Table,
    countable,
    missing_class,
    node_pools,
    relevance,
)

CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_ON_NODE = "resourceclaim not available on the node"
TIMED_OUT = "timed out trying to allocate devices"
RESERVED_FOR_MAX = 256
#: Sets of claim specs whose allocator answers (per look of a node) are kept.
KEPT_VERDICTS = 256
#: Nodes with more devices than this have their free devices told as bytes (likeness), not as bits.
BITS = 52
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
    released: tuple[str, str] | None = None
    """The claim PostFilter deallocated after this attempt found no node (the pod is tried again)."""


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
        self._outcomes: dict[tuple, bool | str] = {}
        self._candidates: dict[tuple, tuple] = {}
        self._table: list[Table] = []  # built once, shared by the runs' copies
        self._bits: np.ndarray | None = None
        self._bits_synced = 0
        self._free: np.ndarray | None = None
        self.nodes: list[Node] = []
        self.index: dict[str, int] = {}
        self.changed: list[int] = []
        """Node positions (`attach`), each time a device the node can reach is taken or freed (this run's)."""
        self._reach: dict[tuple[str, str, str], list[int]] = {}
        self._verdicts: dict[tuple, Verdicts] = {}  # claim specs -> the allocator's answer per look
        self._look_ids: dict[bytes, dict] = {}  # split of the nodes -> (fixed part, free bits) -> look id (all runs')
        self._on: dict[str, np.ndarray] = {}  # node selector -> per node: 0 not known, 1 matches, 2 does not
        self._looks: dict[tuple, Looks] = {}  # relevance -> per node, its look's id (one run's)
        self._looks_by_split: dict[bytes, Looks] = {}
        self._signatures: dict[int, tuple[dict, str]] = {}
        self._slices_of: dict[str, list[tuple[int, dict]]] | None = None
        self.explaining = None
        """What explanations of Pending pods share (.unmatched.Explaining), kept across a check's pods."""

    def copy(self) -> DraState:
        twin = DraState.__new__(DraState)
        twin.objects, twin.in_use, twin._pools = self.objects, set(self.in_use), self._pools
        twin._selected, twin._activations, twin._outcomes = self._selected, self._activations, self._outcomes
        twin._candidates, twin._table = self._candidates, self._table
        twin._free = None if self._free is None else self._free.copy()
        twin._bits = None if self._bits is None else self._bits.copy()
        twin._bits_synced = self._bits_synced
        twin.shared = {k: Shared(s.selector, list(s.devices), s.consumers) for k, s in self.shared.items()}
        twin.nodes, twin.changed, twin._reach, twin.index = self.nodes, list(self.changed), self._reach, self.index
        twin._verdicts, twin._look_ids, twin._looks, twin._looks_by_split = self._verdicts, self._look_ids, {}, {}
        twin._on = self._on
        twin._signatures, twin._slices_of = self._signatures, self._slices_of
        twin.explaining = self.explaining
        return twin

    def attach(self, nodes: Sequence[Node]) -> None:
        """The nodes in the order the scheduler visits them: positions for `tried`."""
        self.nodes, self.changed = list(nodes), []
        self.index = {}
        for i, node in enumerate(self.nodes):
            self.index.setdefault(node.name, i)
        for i, node in enumerate(self.nodes):
            for pool in self.pools(node):
                for d in pool.devices:
                    self._reach.setdefault(d.key, []).append(i)

    def pools(self, node: Node) -> list[Pool]:
        found = self._pools.get(node.name)
        if found is None:
            if self._slices_of is None:  # slices by the node they name; those for many nodes under ""
                self._slices_of = {}
                for i, spec in enumerate(self.objects.slices):
                    self._slices_of.setdefault(spec.get("nodeName") or "", []).append((i, spec))
            mine = sorted(self._slices_of.get(node.name, []) + self._slices_of.get("", []), key=lambda p: p[0])
            found = self._pools[node.name] = node_pools([spec for _, spec in mine], node)
        return found

    def _changed(self, keys) -> None:
        for key in keys:
            at = self._reach.get(key)
            if at:
                self.changed += at
            if self._free is not None:
                self._free[self._table[0].entries.get(key, [])] = key not in self.in_use

    def free_bits(self, positions: np.ndarray) -> np.ndarray:
        """Per node, which of its devices are free, as the bits of one number (device i: bit i); -1 for a
        node with more than BITS devices. Kept up to date with `changed` (this run's)."""
        if self._bits is None:
            self._bits, self._bits_synced = self._bits_of(np.arange(len(self.nodes))), len(self.changed)
        elif len(self.changed) > self._bits_synced:
            moved = np.unique(np.array(self.changed[self._bits_synced:], dtype=np.int64))
            self._bits[moved] = self._bits_of(moved)
            self._bits_synced = len(self.changed)
        return self._bits[positions]

    def _bits_of(self, positions: np.ndarray) -> np.ndarray:
        table, free = self.table(), self.free()
        entries, local = table.at(positions)
        offset = entries - table.start[positions][local]
        weights = np.where(free[entries] & (offset < BITS), 2.0 ** np.minimum(offset, BITS), 0.0)
        bits = np.bincount(local, weights=weights, minlength=len(positions)).astype(np.int64)
        bits[table.size[positions] > BITS] = -1
        return bits

    def table(self) -> Table:
        """Every (node, device) entry, for counting (structured.counting)."""
        if not self._table:
            self._table.append(Table(self))
        return self._table[0]

    def free(self) -> np.ndarray:
        """Per table entry: whether its device is free (this run's)."""
        if self._free is None:
            self._free = np.array([k not in self.in_use for k in self.table().keys], dtype=bool)
        return self._free

    def tried(self, needs: Needs) -> NodeOutcomes:
        """The filter's outcome per node for a pod with these needs."""
        key = tuple(self._signature(c.spec) for c, _ in needs.allocate)
        verdicts = self._verdicts.pop(key, None)
        if verdicts is None:
            verdicts = Verdicts(relevance([c for c, _ in needs.allocate], self.objects.classes))
        self._verdicts[key] = verdicts  # most recently used last
        if len(self._verdicts) > KEPT_VERDICTS:
            del self._verdicts[next(iter(self._verdicts))]
        return NodeOutcomes(self, needs, verdicts)

    def selector_asker(self) -> Allocator:
        """An allocator with no devices, to ask what the selectors say of a device (its answers cached with the
        runs' shared ones)."""
        return Allocator(self.objects.classes, [], set(), self._selected, self._activations, self._outcomes)

    def looks(self, what: tuple) -> Looks:
        """The looks of the nodes for claims of this relevance. Relevances that split the nodes alike (a
        fleet's hundreds of claim shapes split it a dozen ways) share one: the same look, the same answer."""
        found = self._looks.get(what)
        if found is None:
            fixed = self.table().fixed(self.selector_asker(), what)
            split = fixed.tobytes()  # canonical: ids by first appearance
            found = self._looks_by_split.get(split)
            if found is None:
                found = self._looks_by_split[split] = Looks(self, fixed, self._look_ids.setdefault(split, {}))
            self._looks[what] = found
        return found

    def _signature(self, spec: dict) -> str:
        found = self._signatures.get(id(spec))
        if found is None or found[0] is not spec:
            found = self._signatures[id(spec)] = (spec, repr(spec))  # holds it: the id stays its own
        return found[1]

    def needs(self, namespace: str, pod: str, spec: dict) -> Needs:
        """What a pod's `resourceClaims` ask for (PreEnqueue and PreFilter of the plugin)."""
        needs = Needs()
        for pc in spec.get("resourceClaims") or ():
            template, named = pc.get("resourceClaimTemplateName"), pc.get("resourceClaimName")
            if template is not None:
                spec_ = self.objects.templates.get((namespace, template))
                if spec_ is None:
                    needs.gated = (f'pod "{namespace}/{pod}": ResourceClaim not created yet (the resourceclaim '
                                   'controller reports FailedResourceClaimCreation: '
                                   f'PodResourceClaim {pc.get("name")}: '
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
        return self.allocate(node, needs)

    def allocate(self, node: Node, needs: Needs) -> list[list[tuple[str, Device]]] | str:
        """The filter's allocation on one node, its claims' node selectors aside."""
        if not needs.allocate:
            return []
        pools = self.pools(node)
        try:
            allocator = Allocator(self.objects.classes, pools, self.in_use, self._selected, self._activations,
                                  self._outcomes, self._candidates)
            found = allocator.allocate([c for c, _ in needs.allocate])
        except OutOfBudget:
            return TIMED_OUT
        return CANNOT_ALLOCATE if found is None else found

    def commit(self, node: Node, needs: Needs,
               result: list[list[tuple[str, Device]]]) -> tuple[list[Device], list[Device]]:
        """Record a pod placed on `node`: (the devices it uses, those newly allocated to it)."""
        pools = {(p.driver, p.name): p for p in self._pools.get(node.name) or ()}
        used: list[Device] = []
        for (_claim, key), picked in zip(needs.allocate, result, strict=True):
            devices = [d for _, d in picked]
            used += devices
            self.in_use |= {d.key for d in devices}
            self._changed(d.key for d in devices)
            if key is not None:
                local = any(pools[(d.driver, d.pool)].local for d in devices)
                selector = ({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                                     "values": [node.name]}]}]} if local else None)
                self.shared[key] = Shared(selector, devices, 1)
        for key, _ in needs.allocated:
            self.shared[key].consumers += 1
            used += self.shared[key].devices
        return used, [d for picked in result for _, d in picked]


class NodeOutcomes:
    """One set of needs against every node: what `DraState.filter` says, per node. The answer is worked out
    once per look of a node's devices (structured.likeness) and kept with the claim specs for
    every run: a node is asked again only when its free devices changed, and nodes that look alike share
    one answer. It is worked out by counting where counting is exact (.counting), by refuting where no
    allocation can exist (.refuting), by the allocator's first descent where it fills every request at once
    (.descent), else by the allocator. Codes: 0 passes, -1 the filter's error (asked again on the node, to
    raise it in its own words), else a reason (`reason`)."""

    REASONS = (CANNOT_ALLOCATE, NOT_ON_NODE, TIMED_OUT)
    _UNKNOWN = structured.UNKNOWN

    def __init__(self, state: DraState, needs: Needs, verdicts: Verdicts):
        self.state, self.needs, self.verdicts = state, needs, verdicts
        self.looks = state.looks(verdicts.what) if needs.allocate else None
        self.alts = countable(needs)

    def codes(self, positions: np.ndarray) -> np.ndarray:
        node_looks = self.looks  # None exactly when no claim is left to allocate
        if not self.needs.allocate or node_looks is None:
            codes = np.zeros(len(positions), dtype=np.int8)
        else:
            ids = node_looks.of(positions)
            verdicts = self.verdicts.sized(int(ids.max()) + 1 if len(ids) else 0)
            codes = verdicts.code[ids]
            unknown = codes == self._UNKNOWN
            if unknown.any():
                looks, first = np.unique(ids[unknown], return_index=True)
                verdicts.code[looks] = self._allocation(positions[unknown][first], looks)
                codes = verdicts.code[ids]
        if any(selector for _, selector in self.needs.allocated):
            codes[~self._on_node(positions)] = 1 + self.REASONS.index(NOT_ON_NODE)
        return codes

    def _allocation(self, positions: np.ndarray, looks: np.ndarray) -> np.ndarray:
        """The filter's code on nodes of these (distinct) looks, for the claims to allocate."""
        state, needs = self.state, self.needs
        codes = structured.decide(state, self.alts, [c for c, _ in needs.allocate], positions)
        codes[codes == structured.TIMED_OUT] = 1 + self.REASONS.index(TIMED_OUT)
        codes[codes == structured.CANNOT_ALLOCATE] = 1 + self.REASONS.index(CANNOT_ALLOCATE)
        for j in np.flatnonzero(codes == self._UNKNOWN).tolist():  # only the search itself can tell
            codes[j] = self.verdicts.learn(int(looks[j]), state, int(positions[j]), needs)
        return codes

    def _on_node(self, positions: np.ndarray) -> np.ndarray:
        """Whether each node matches every allocated claim's node selector (what the filter checks first)."""
        ok = np.ones(len(positions), dtype=bool)
        for _, selector in self.needs.allocated:
            if not selector:
                continue
            key = repr(selector)
            on = self.state._on.get(key)
            if on is None:
                on = _by_name(selector, self.state.index)
                if on is None:
                    on = np.zeros(len(self.state.nodes), dtype=np.int8)
                self.state._on[key] = on
            for pos in positions[on[positions] == 0].tolist():
                on[pos] = 1 if node_selector_matches(selector, self.state.nodes[pos]) else 2
            ok &= on[positions] == 1
        return ok

    def reason(self, code: int) -> str:
        return self.REASONS[code - 1]

    def found(self, pos: int) -> list[list[tuple[str, Device]]]:
        """The devices per claim the allocator picks on a node that passes."""
        if not self.needs.allocate or self.looks is None:  # None exactly when no claim is left to allocate
            return []
        look = int(self.looks.id[pos])  # asked about in `codes`, devices unchanged since
        if look not in self.verdicts.picked:  # passed without the allocator: it picks them now, for the look
            if self.verdicts.learn(look, self.state, pos, self.needs) != 0:
                raise AssertionError("a shortcut passed a node the allocator does not")
        devices = [d for p in self.state.pools(self.state.nodes[pos]) for d in p.devices]
        return [[(request, devices[i]) for request, i in picked] for picked in self.verdicts.picked[look]]

    def fail(self, pos: int) -> None:
        """Raise the filter's error on this node, in this pod's names."""
        self.state.filter(self.state.nodes[pos], self.needs)
        raise AssertionError("the DynamicResources filter's error did not recur")


def _by_name(selector: dict, index: dict[str, int]) -> np.ndarray | None:
    """A selector of one term naming nodes (`matchFields` metadata.name In ...), as an allocation from a
    node's own pool pins its claim: per node 1 matches, 2 does not; None for any other selector."""
    terms: Sequence[dict] = selector.get("nodeSelectorTerms") or ()
    if len(terms) != 1 or terms[0].get("matchExpressions") or not terms[0].get("matchFields"):
        return None
    names: set[str] | None = None
    for requirement in terms[0]["matchFields"]:
        if requirement.get("key") != "metadata.name" or requirement.get("operator") != "In":
            return None
        values = {str(v) for v in requirement.get("values") or ()}
        names = values if names is None else names & values
    out = np.full(len(index), 2, dtype=np.int8)
    out[[index[name] for name in names or () if name in index]] = 1
    return out


class Verdicts:
    """The allocator's answer for one set of claim specs, per look of a node (shared by the runs)."""

    def __init__(self, what: tuple):
        self.what = what
        self.code = np.zeros(0, dtype=np.int8)
        self.picked: dict[int, list[list[tuple[str, int]]]] = {}

    def sized(self, size: int) -> Verdicts:
        if size > len(self.code):
            grown = np.full(max(size, 2 * len(self.code)), NodeOutcomes._UNKNOWN, dtype=np.int8)
            grown[:len(self.code)] = self.code
            self.code = grown
        return self

    def learn(self, look: int, state: DraState, pos: int, needs: Needs) -> int:
        """The allocator's code on the node at `pos`, kept (with the devices it picks) for its look."""
        node = state.nodes[pos]
        try:
            result = state.allocate(node, needs)
        except FilterError:
            code = -1
        else:
            if isinstance(result, str):
                code = 1 + NodeOutcomes.REASONS.index(result)
            else:
                index = {d.key: i for i, d in enumerate(d for p in state.pools(node) for d in p.devices)}
                self.picked[look] = [[(request, index[d.key]) for request, d in picked] for picked in result]
                code = 0
        self.code[look] = code
        return code


def release_unreserved(state: DraState, needs: Needs) -> tuple[str, str] | None:
    """The plugin's PostFilter after a pod with claims found no node: an allocated claim that was not
    available on some node and is reserved for nobody is deallocated (its devices free for later pods).
    One claim per failed attempt; its key when one was. The claim's change requeues the pod, so the
    scheduler tries it again and may allocate the claim anew, on a node the pod fits."""
    for key, selector in needs.allocated:
        shared = state.shared.get(key)
        if shared is not None and selector is not None and shared.consumers == 0:
            state.in_use -= {d.key for d in shared.devices}
            state._changed(d.key for d in shared.devices)
            del state.shared[key]
            return key
    return None


def memory_mib(devices: list[Device]) -> int | None:
    """GPU memory of the devices (their `memory` capacity), in MiB; None when none publishes it."""
    sizes = []
    for d in devices:
        cap = d.capacity.get("memory") or d.capacity.get(f"{d.driver}/memory")
        if cap is not None:
            sizes.append(int(parse(cap["value"])) // 2**20)
    return sum(sizes) if sizes else None
