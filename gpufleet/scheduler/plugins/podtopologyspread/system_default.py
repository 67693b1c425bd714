"""PodTopologySpread's system default constraints (plugin.go systemDefaultConstraints, common.go
buildDefaultConstraints, scoring.go; v1.34): what the default profile (`defaultingType: System`) adds to a pod
that has no topologySpreadConstraints of its own, when the Services, ReplicaSet or StatefulSet that select it
give a non-empty selector (plugins/helper.default_selector).

Both constraints are `ScheduleAnyway`, so they only score: hostname with maxSkew 3, zone with maxSkew 5.
For each scored node (the window of feasible nodes), the sum over constraints whose key the node carries of
matching pods x log(domains + 2) + maxSkew - 1, rounded half away from zero; then reversed and scaled over
the window (NormalizeScore). With the system defaults no node is left out for lacking a label
(`requireAllTopologies` is false): a node without a zone label scores its hostname term only, and the
window's unlabelled nodes count as one more zone domain. Hostname counts are the node's own pods; zone
counts add up the pods on every node of the zone that matches the pod's required node affinity
(nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore). Terminating pods are not counted.

The counts change with every pod placed, so `DefaultSpread` keeps them for one workload's pods over a batch
of cycles: `add` after each placement.
"""

from __future__ import annotations

import math

import numpy as np

from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME_MAX_SKEW, ZONE_MAX_SKEW = 3, 5


class Layout:
    """What the default constraints read of the nodes, shared by every workload of a check."""

    __slots__ = ("labelled", "all_labelled", "zone_ids", "zones", "uniform")

    def __init__(self, labelled: np.ndarray, zone_of: np.ndarray):
        """`labelled`: per node, whether it has the hostname label; `zone_of`: per node, its zone's id (-1
        without a zone label)."""
        self.labelled = labelled
        self.all_labelled = bool(labelled.all())
        self.zone_ids = zone_of + 1  # 0: no zone label (one more domain when counting the scored nodes')
        self.zones = int(zone_of.max()) + 1 if len(zone_of) else 0
        zoned = zone_of >= 0
        self.uniform = (self.all_labelled or not labelled.any()) and (bool(zoned.all()) or not zoned.any())
        """Every node alike in which labels it has: while no matching pod is placed, every node scores the same."""


class DefaultSpread:
    """The default constraints' scores for one workload's pods, from the matching pods' count per node."""

    __slots__ = ("counts", "layout", "affinity_ok", "weight", "zone_counts", "placed")

    def __init__(self, counts: np.ndarray, layout: Layout, affinity_ok: np.ndarray, weight: int):
        """`counts`: per node, the pods matching the default selector there now (updated in place);
        `affinity_ok`: the nodes that match the pod's required node affinity (their pods count in their
        zone); `weight`: the plugin's score weight in the profile."""
        self.counts, self.layout, self.affinity_ok, self.weight = counts, layout, affinity_ok, weight
        self.zone_counts = np.zeros(layout.zones + 1, dtype=np.float64)  # by zone id + 1; [0] is never read
        held = np.flatnonzero(counts)
        self.placed = len(held)
        if len(held):
            held = held[affinity_ok[held]]
            np.add.at(self.zone_counts, layout.zone_ids[held], counts[held])

    def add(self, node: int) -> None:
        """A matching pod landed on `node`."""
        self.counts[node] += 1
        self.placed += 1
        if self.affinity_ok[node]:
            self.zone_counts[self.layout.zone_ids[node]] += 1

    def scores(self, window: np.ndarray) -> np.ndarray | None:
        """The weighted, normalised scores of the window's nodes (the feasible nodes being scored); None when
        they are all equal (nothing placed yet on nodes that are all alike)."""
        layout = self.layout
        if not self.placed and layout.uniform:
            return None
        if not layout.all_labelled:
            return self.scores_each(window)
        # Every node has the hostname label: a node without matching pods scores its zone's value, so the scores
        # are one value per zone, and the few nodes that hold matching pods on their own (small lists: Python).
        ids = layout.zone_ids[window]
        counts = self.counts[window]
        at = np.flatnonzero(counts)
        held_zones, held_counts = ids[at].tolist(), counts[at].tolist()
        if layout.zones:
            present = np.bincount(ids, minlength=layout.zones + 1).tolist()
            weight_z = math.log(sum(1 for n in present if n) + 2)
            table = [0.0, *(c * weight_z + (ZONE_MAX_SKEW - 1) for c in self.zone_counts[1:].tolist())]
        else:
            present, table = [len(window)], [0.0]
        skew_h = HOSTNAME_MAX_SKEW - 1
        base = [math.floor(skew_h + t + 0.5) for t in table]  # 0 x weight + 2, then the zone (scoring.go's order)
        weight_h = math.log(len(window) + 2)
        held = [math.floor(c * weight_h + skew_h + table[z] + 0.5) for c, z in zip(held_counts, held_zones,
                                                                                   strict=True)]
        for z in held_zones:
            present[z] -= 1  # zones where a node holds none
        seen = [b for b, n in zip(base, present, strict=True) if n > 0] + held
        top, low = max(seen), min(seen)
        w = self.weight
        if top == 0:
            return np.full(len(window), w * MAX_NODE_SCORE, dtype=np.int64)
        out = np.array([w * (MAX_NODE_SCORE * (top + low - b) // top) for b in base], dtype=np.int64)[ids]
        if held:
            out[at] = [w * (MAX_NODE_SCORE * (top + low - h) // top) for h in held]
        return out

    def scores_each(self, window: np.ndarray) -> np.ndarray:
        """`scores` node by node (any labels), as scoring.go computes them."""
        layout = self.layout
        host = self.counts[window] * math.log(len(window) + 2) + (HOSTNAME_MAX_SKEW - 1)
        if not layout.all_labelled:
            host = np.where(layout.labelled[window], host, 0.0)
        if layout.zones:
            ids = layout.zone_ids[window]
            domains = int(np.count_nonzero(np.bincount(ids, minlength=layout.zones + 1)))
            table = self.zone_counts * math.log(domains + 2) + (ZONE_MAX_SKEW - 1)
            table[0] = 0.0  # a node without a zone label scores no zone term
            host = host + table[ids]
        rounded = np.floor(host + 0.5).astype(np.int64)  # math.Round: half away from zero (all >= 0 here)
        top, low = int(rounded.max()), int(rounded.min())
        if top == 0:
            return np.full(len(window), self.weight * MAX_NODE_SCORE, dtype=np.int64)
        return self.weight * (MAX_NODE_SCORE * (top + low - rounded) // top)
