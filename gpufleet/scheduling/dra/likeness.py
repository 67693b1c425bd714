"""Nodes whose devices look alike to a pod's claims, so the allocator runs once for all of them.

The structured allocator (gpufleet.scheduling.dra.allocator) reads, of a node: its pools in order (driver,
whether complete or invalid) and their devices in order; of a device: whether it is in use, what its
class's and requests' CEL selectors see of it (`cel.reads`: the fields they name, or the whole device when
an expression uses `device` otherwise) and, for `matchAttribute` constraints, whether two devices' values
are equal. Two nodes equal in all of that (the `Look` of a node for those claims) get the same answer, with
the devices at the same positions. Errors are not shared: a node whose look gave an error is asked again,
so the error names its own pools and devices.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduling.dra.allocator import Claim, _lookup, alternatives, requests_of
from gpufleet.scheduling.dra.cel import CelError, device_activation, projection, reads


#: Nodes whose look was never taken, or whose devices changed since.
_STALE = -1


def relevance(claims: list[Claim], classes: dict[str, dict]) -> tuple:
    """What the allocator reads of a device for these claims: (CEL paths or None for everything,
    constraint attribute names)."""
    paths: set | None = set()
    constrained: set[str] = set()
    for claim in claims:
        for request in requests_of(claim):
            for alt in alternatives(request):
                spec = classes.get(alt.class_name) or {}
                expressions = [(s.get("cel") or {}).get("expression") or "" for s in spec.get("selectors") or ()]
                for expression in [*expressions, *alt.selectors]:
                    found = reads(expression)
                    if found is None or paths is None:
                        paths = None
                    else:
                        paths.update(found)
        for constraint in (claim.spec.get("devices") or {}).get("constraints") or ():
            if constraint.get("matchAttribute"):
                constrained.add(constraint["matchAttribute"])
    return (None if paths is None else tuple(sorted(paths)), tuple(sorted(constrained)))


class Looks:
    """Per node position, an id of its look for one relevance (equal ids, equal looks), kept up to date
    with the nodes' device versions. A look is the node's fixed part (pools, what the claims see of each
    device: interned once per node for all runs) and which of its devices are in use."""

    def __init__(self, state, what: tuple, shared: "Shared"):
        self.state, self.what, self.shared = state, what, shared
        n = len(state.nodes)
        self.id = np.zeros(n, dtype=np.int64)
        self.at = np.full(n, _STALE, dtype=np.int64)

    def of(self, positions: np.ndarray) -> np.ndarray:
        state, shared = self.state, self.shared
        stale = positions[self.at[positions] != state.version[positions]]
        in_use = state.in_use
        for pos in stale.tolist():
            fixed = shared.fixed.get(pos)
            if fixed is None:
                fixed = shared.fixed[pos] = shared.intern(self._fixed(pos))
            keys = state.device_keys(pos)
            look = (fixed, tuple([k in in_use for k in keys]))
            self.id[pos] = shared.ids.setdefault(look, len(shared.ids))
        self.at[stale] = state.version[stale]
        return self.id[positions]

    def _fixed(self, pos: int) -> tuple:
        state = self.state
        paths, constrained = self.what
        ranks: list[dict] = [{} for _ in constrained]
        out = []
        for pool in state.pools(state.nodes[pos]):
            devices = []
            for d in pool.devices:
                seen = d.key if paths is None else self.shared.seen(state, d, paths)
                order = tuple(None if (v := _lookup(d, name)) is None else r.setdefault(v, len(r))
                              for name, r in zip(constrained, ranks))
                devices.append((seen, order))
            out.append((pool.driver, pool.complete, pool.invalid is None, tuple(devices)))
        return tuple(out)


class Shared:
    """What the runs share for one relevance: each node's fixed part, and the ids of looks."""

    def __init__(self) -> None:
        self.fixed: dict[int, int] = {}
        self.ids: dict[tuple, int] = {}
        self._fixed_ids: dict[tuple, int] = {}

    def intern(self, fixed: tuple) -> int:
        return self._fixed_ids.setdefault(fixed, len(self._fixed_ids))

    def seen(self, state, device, paths: tuple) -> tuple:
        """What the selectors that read `paths` see of a device (its key when its activation fails)."""
        key = device.key
        fields = state._fields.get(key)
        if fields is None:
            fields = state._fields[key] = {}
        try:
            for path in paths:
                if path not in fields:
                    fields[path] = projection(_activation(state, device), (path,))[1]
        except CelError:
            return key  # every selector on it reports that error
        return (device.driver, *(fields[path] for path in paths))


def _activation(state, device) -> dict:
    found = state._activations.get(device.key)
    if found is None:
        found = state._activations[device.key] = device_activation(device.driver, device.attributes, device.capacity)
    return found
