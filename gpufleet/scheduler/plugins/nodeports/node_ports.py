"""NodePorts (pkg/scheduler/framework/plugins/nodeports/node_ports.go, v1.34.1): a pod that wants a host port
cannot use a node where a pod already holds it.

The filter runs after NodeAffinity and before NodeResourcesFit; a pod without host ports skips it. Two
ports clash when protocol and port are equal and either host IP is 0.0.0.0 or both are the same
(HostPortInfo.CheckConflict). What a pod holds and wants: gpufleet.capacity.ports. The used ports of every
node are kept per (protocol, port) and host IP as counts per node, so one check is a few array operations.
"""

from __future__ import annotations

import numpy as np

from gpufleet.capacity.ports import ALL_ADDRESSES, HostPort, host_ports
from gpufleet.scheduler.framework.interface import Plugin, Reads

REASON = "node(s) didn't have free ports for the requested pod ports"


class UsedPorts:
    """Per (protocol, port), per host IP, how many pods on each node hold it."""

    def __init__(self, n: int):
        self.n = n
        self.held: dict[tuple[str, int], dict[str, np.ndarray]] = {}

    def copy(self) -> UsedPorts:
        twin = UsedPorts(self.n)
        twin.held = {k: {ip: a.copy() for ip, a in by_ip.items()} for k, by_ip in self.held.items()}
        return twin

    def add(self, node: int, ports: tuple[HostPort, ...]) -> None:
        for protocol, address, port in ports:
            by_ip = self.held.setdefault((protocol, port), {})
            counts = by_ip.get(address)
            if counts is None:
                counts = by_ip[address] = np.zeros(self.n, dtype=np.int64)
            counts[node] += 1

    def remove(self, node: int, ports: tuple[HostPort, ...]) -> None:
        """A pod that held `ports` on `node` is gone (preempted)."""
        for protocol, address, port in ports:
            self.held[(protocol, port)][address][node] -= 1

    def _clashing(self, wanted: tuple[HostPort, ...]):
        """The per-node counts of every held port that one of the wanted ports clashes with
        (HostPortInfo.CheckConflict: same protocol and port, and 0.0.0.0 on either side or the same IP)."""
        for protocol, address, port in wanted:
            for held_address, counts in (self.held.get((protocol, port)) or {}).items():
                if address == ALL_ADDRESSES or held_address in (ALL_ADDRESSES, address):
                    yield counts

    def taken(self, wanted: tuple[HostPort, ...], at=slice(None)) -> np.ndarray:
        """Per node (of `at`), whether one of the wanted ports clashes with a port held there."""
        out = np.zeros(self.n, dtype=bool)[at]
        for counts in self._clashing(wanted):
            out |= counts[at] > 0
        return out

    def taken_on(self, wanted: tuple[HostPort, ...], node: int) -> bool:
        return any(counts[node] for counts in self._clashing(wanted))


class NodePorts(Plugin):
    name = "NodePorts"
    reads = Reads(pod=("hostNetwork", "containers.ports", "initContainers.ports",
                       "initContainers.restartPolicy"))

    def pre_filter(self, spec: dict) -> tuple[HostPort, ...]:
        """The host ports the pod wants (its PreFilter state)."""
        return host_ports(spec)

    def filter_nodes(self, snap, shape, at) -> dict[str, np.ndarray]:
        if shape.ports and snap.ports is not None:  # a pod without host ports skips the filter
            return {REASON: snap.ports.taken(shape.ports, at)}
        return {}

    def fails_on(self, snap, shape, i: int) -> bool:
        return bool(shape.ports and snap.ports is not None and snap.ports.taken_on(shape.ports, i))
