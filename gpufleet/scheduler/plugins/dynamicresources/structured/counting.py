"""The allocator's answer by counting, for the claims where counting gives it exactly.

A pod with one claim to allocate, of one request (`exactly`, or `firstAvailable` subrequests in order),
each an ExactCount or All of devices without admin access: the structured allocator's search is complete,
so a node passes when, for the first alternative that can, `count` free devices pass the selectors there
(and, under the claim's `matchAttribute` constraints, share one value of every constrained attribute), or,
for All, every device they pass is free. Which
devices it takes is the allocator's business, on the chosen node. A failed search is exhaustive and fails
("cannot allocate all claims") unless it runs out of its step budget first: a node where the search could
(up to 2^free x devices steps per alternative tried, or the devices themselves when it succeeds at once),
where a selector fails on a free device, or with an invalid pool, is left to the allocator itself.
Counting runs over the devices of the nodes asked about at once (numpy), per run.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.plugins.dynamicresources.cel import CelError, reads
from gpufleet.scheduler.plugins.dynamicresources.structured import allocator
from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import (
    CLAIM_LIMIT,
    Allocator,
    Alternative,
    FilterError,
    alternatives,
    claim_limit_error,
    constraints_on,
    late_all,
    lookup,
    requests_of,
)

#: Per device of a node: the selectors pass, reject, or fail on it.
PASS, REJECT, ERROR = 1, 0, 2
#: What `Table.selected` says of a device its selectors pass, by the name the package exports.
SELECTED = PASS
#: Nodes with more devices than this have a fixed part of their own (`Table.fixed`).
_FIXED_WIDTH = 128


def countable(needs) -> list[list[tuple[Alternative, tuple[str, ...]]]] | None:
    """The device slots in the allocator's order (the requests of every claim), each with its alternatives in
    order and the attributes its constraints make equal, when the needs are answered by counting; None
    when not. Several slots count only as plain ExactCount requests without constraints."""
    slots = []
    for claim, _ in needs.allocate:
        if claim_limit_error(claim):
            return None
        for request in requests_of(claim):
            alts = alternatives(request)
            if not alts or late_all(alts):
                return None
            if any(a.admin or not (a.all or 1 <= a.count <= CLAIM_LIMIT) for a in alts):
                return None
            slots.append([(alt, tuple(dict.fromkeys(name for _, name in constraints_on(claim, alt))))
                          for alt in alts])
    if not slots:
        return None
    if len(slots) > 1 and (len(slots) > 4 or any(len(slot) != 1 or slot[0][0].all or slot[0][1] for slot in slots)):
        return None
    return slots


class Table:
    """Every (node, device) the nodes reach, node by node in the allocator's order (shared by the runs)."""

    def __init__(self, state):
        nodes = state.nodes
        keys, owner, sizes, invalid, incomplete = [], [], [], [], []
        for pos, node in enumerate(nodes):
            pools = state.pools(node)
            devices = [d for p in pools for d in p.devices]
            keys += [d.key for d in devices]
            owner += [pos] * len(devices)
            sizes.append(len(devices))
            invalid.append(any(p.invalid for p in pools))
            incomplete.append(any(not p.complete for p in pools))
        self.keys, self.devices = keys, [d for node in nodes for p in state.pools(node) for d in p.devices]
        self.owner = np.array(owner, dtype=np.int64)
        self.size = np.array(sizes, dtype=np.int64)
        self.start = np.concatenate(([0], np.cumsum(self.size)[:-1])).astype(np.int64) if sizes else self.size
        self.invalid = np.array(invalid, dtype=bool)
        self.incomplete = np.array(incomplete, dtype=bool)
        self.entries: dict[tuple, list[int]] = {}
        for i, key in enumerate(keys):
            self.entries.setdefault(key, []).append(i)
        self._selected: dict[tuple, np.ndarray] = {}
        self._values: dict[tuple, np.ndarray] = {}
        self._kinds: dict = {}
        self._columns: dict = {}
        self._written: list[dict] | None = None
        self._fixed: dict[tuple, np.ndarray] = {}

    def at(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the entries of these nodes, per entry the index of its node in `positions`)."""
        sizes = self.size[positions]
        local = np.repeat(np.arange(len(positions)), sizes)
        offsets = np.repeat(self.start[positions] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        return offsets + np.arange(int(sizes.sum())), local

    def kinds(self, ask: Allocator, paths: tuple | None) -> np.ndarray:
        """Per entry, an id of what selectors reading `paths` see of its device (equal seen, equal ids; None
        paths: the device itself, as for a device whose attributes do not convert)."""
        found = self._kinds.get(paths)
        if found is None:
            if paths is None:
                found = self._column(ask, None)
            else:
                columns = [self._column(ask, ()), self._column(ask, "bad"), *(self._column(ask, p) for p in paths)]
                found = _combined(columns)
            self._kinds[paths] = found
        return found

    def _column(self, ask: Allocator, path) -> np.ndarray:
        """Per entry an id of one thing about its device: the device (None), its driver (()), whether its
        attributes fail to convert ("bad": the device's id, else -1), or a CEL path's value."""
        found = self._columns.get(path)
        if found is None:
            ids: dict = {}
            out = np.zeros(len(self.keys), dtype=np.int64)
            fields = self._fields() if isinstance(path, tuple) and path else None
            for i, (device, dkey) in enumerate(zip(self.devices, self.keys, strict=True)):
                if path is None:
                    seen = dkey
                elif path == ():
                    seen = device.driver
                elif fields is not None:  # the field as written: equal text, equal value (a device that
                    seen = fields[i].get(path)  # does not convert is told apart by the "bad" column)
                else:
                    try:
                        ask._device_var(device)
                        seen = None
                    except CelError:
                        seen = dkey
                out[i] = -1 if seen is None else ids.setdefault(seen, len(ids))
            found = self._columns[path] = out
        return found

    def fixed(self, ask: Allocator, what: tuple) -> np.ndarray:
        """Per node, an id of what the filter reads of it for claims of this relevance
        (likeness.relevance) that no pod changes: whether a pool is invalid or incomplete, and per device
        in order, what the selectors see of it and which earlier device of the node first had its values
        of the constrained attributes. Equal ids, equal fixed parts (shared by the runs)."""
        found = self._fixed.get(what)
        if found is None:
            paths, names = what
            seen = self.kinds(ask, paths)
            # Per constrained attribute on its own (each constraint compares one): per device, the rank
            # of its value among the node's values in order of first appearance.
            entry = _combined([seen, *(self._ranks(name) for name in names)])
            n, widest = len(self.size), min(int(self.size.max()) if len(self.size) else 0, _FIXED_WIDTH)
            grid = np.full((n, widest + 4), -1, dtype=np.int64)
            column = np.arange(len(self.keys)) - self.start[self.owner]
            kept = column < widest
            grid[self.owner[kept], column[kept]] = entry[kept]
            grid[:, widest] = self.size
            grid[:, widest + 1] = self.invalid
            grid[:, widest + 2] = self.incomplete
            grid[:, widest + 3] = np.where(self.size > widest, np.arange(n), -1)  # more devices: a look of its own
            ids = rows(grid)
            firsts = np.unique(ids, return_index=True)[1]  # renumbered by first appearance: equal splits of
            renumber = np.empty(len(firsts), dtype=np.int64)  # the nodes, equal arrays
            renumber[np.argsort(firsts)] = np.arange(len(firsts))
            found = self._fixed[what] = renumber[ids]
        return found

    def _ranks(self, name: str) -> np.ndarray:
        """Per entry, the rank of its device's value of one attribute among the values of its node's devices
        by first appearance (equal values on a node, equal ranks); -1 without the attribute."""
        rank = np.full(len(self.keys), -1, dtype=np.int64)
        values = self.values((name,))
        valued = np.flatnonzero(values >= 0)
        if not len(valued):
            return rank
        width = int(values.max()) + 1
        pairs, first, inverse = np.unique(self.owner[valued] * width + values[valued], return_index=True,
                                          return_inverse=True)
        order = np.argsort(valued[first], kind="stable")  # a node's values by first appearance
        by_appearance = np.empty(len(pairs), dtype=np.int64)
        by_appearance[order] = np.arange(len(pairs))
        node_of = pairs // width
        firsts = np.searchsorted(node_of[order], node_of)  # the node's first value, in that order
        rank[valued] = (by_appearance - firsts)[inverse.reshape(-1)]
        return rank

    def _fields(self) -> list[dict]:
        """Per entry, its device's fields by CEL path (where, domain, id) as written in the slice; a field
        written twice (qualified and not) is the later one, as the `device` variable has it."""
        if self._written is None:
            by_device: dict[tuple, dict] = {}
            self._written = []
            for device, dkey in zip(self.devices, self.keys, strict=True):
                found = by_device.get(dkey)
                if found is None:
                    found = by_device[dkey] = {}
                    for where, written in (("attributes", device.attributes), ("capacity", device.capacity)):
                        for name, v in written.items():
                            domain, _, ident = name.rpartition("/")
                            found[(where, domain or device.driver, ident)] = _hashable(v)
                self._written.append(found)
        return self._written

    def values(self, names: tuple[str, ...]) -> np.ndarray:
        """Per entry, an id of its values of the attributes (equal values, equal ids); -1 when one is missing
        (what `matchAttribute` compares, as the allocator reads it)."""
        found = self._values.get(names)
        if found is None:
            ids: dict[tuple, int] = {}
            out = np.full(len(self.keys), -1, dtype=np.int64)
            for i, device in enumerate(self.devices):
                value = tuple(lookup(device, name) for name in names)
                if None not in value:
                    out[i] = ids.setdefault(value, len(ids))
            found = self._values[names] = out
        return found

    def selected(self, state, alt: Alternative, claim) -> np.ndarray:
        """Per entry: PASS, REJECT or ERROR for the alternative's class and selectors (CEL is pure)."""
        key = (alt.class_name, alt.selectors)
        found = self._selected.get(key)
        if found is None:
            ask = Allocator(state.objects.classes, [], set(), state._selected, state._activations, state._outcomes)
            spec = state.objects.classes.get(alt.class_name) or {}
            expressions = [(s.get("cel") or {}).get("expression") or "" for s in spec.get("selectors") or ()]
            expressions += alt.selectors
            paths = _union([reads(e) for e in expressions]) if expressions else ()
            kinds = self.kinds(ask, paths)
            firsts = np.unique(kinds, return_index=True)[1]
            answers = np.zeros(len(firsts), dtype=np.int8)
            for j, i in enumerate(firsts.tolist()):  # one device of each kind answers for all
                try:
                    answers[j] = PASS if ask._selected(self.devices[i], claim, alt, self.keys[i]) else REJECT
                except FilterError:
                    answers[j] = ERROR
            out = answers[kinds] if len(kinds) else np.zeros(0, dtype=np.int8)
            found = self._selected[key] = out
        return found


def _combined(columns: list[np.ndarray]) -> np.ndarray:
    """Per entry, an id of its values in all the columns (equal values, equal ids, 0..m-1): the columns as
    digits of one number (made compact again whenever the next digit would overflow it)."""
    acc, span = np.zeros(len(columns[0]), dtype=np.int64), 1
    for column in columns:
        radix = int(column.max(initial=-1)) + 2  # values from -1 up
        if span * radix >= 2 ** 62:
            acc = np.unique(acc, return_inverse=True)[1].reshape(-1).astype(np.int64)
            span = int(acc.max(initial=0)) + 1
        acc, span = acc * radix + (column + 1), span * radix
    return np.unique(acc, return_inverse=True)[1].reshape(-1).astype(np.int64)


def rows(grid: np.ndarray) -> np.ndarray:
    """Per row of an integer array, an id (equal rows, equal ids): rows compared as bytes, one sort."""
    low, high = (int(grid.min()), int(grid.max())) if grid.size else (0, 0)
    narrow = next(t for t in (np.int8, np.int16, np.int32, np.int64)
                  if np.iinfo(t).min <= low and high <= np.iinfo(t).max)  # fewer bytes to compare
    grid = np.ascontiguousarray(grid, dtype=narrow)
    if not grid.size:
        return np.zeros(len(grid), dtype=np.int64)
    raw = grid.view(np.dtype((np.void, grid.dtype.itemsize * grid.shape[1]))).reshape(-1)
    return np.unique(raw, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _hashable(value):
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, list):
        return ("list", *(_hashable(v) for v in value))
    return value


def _union(found: list) -> tuple | None:
    if any(f is None for f in found):
        return None
    return tuple(sorted({p for f in found for p in f}))


def counted(state, table: Table, free: np.ndarray, slots: list, claims: list, positions: np.ndarray) -> np.ndarray:
    """Per node: 0 passes, 1 fails (cannot allocate), -2 left to the allocator."""
    if len(slots) > 1:
        return _slots(state, table, free, [slot[0][0] for slot in slots], claims, positions)
    return _one_slot(state, table, free, slots[0], claims[0], positions)


def _slots(state, table: Table, free: np.ndarray, alts: list[Alternative], claims: list,
           positions: np.ndarray) -> np.ndarray:
    """Several ExactCount slots: the allocator's first descent takes, slot by slot, the first free devices
    the slot's selectors pass that no earlier slot took; when that fills every slot, the node passes (in at
    most slots x devices steps). When some set of slots has fewer such devices among them than they ask
    for together, no assignment exists and the exhaustive search fails, within its budget when
    (2^free)^slots x devices is. Anything else is left to the allocator."""
    k = len(positions)
    entries, local = table.at(positions)
    free = free[entries]
    size = table.size[positions]
    sizes_before = np.concatenate(([0], np.cumsum(size)[:-1]))
    unsure = table.invalid[positions].copy()
    taken = np.zeros(len(entries), dtype=bool)
    greedy = np.ones(k, dtype=bool)
    usable, steps = [], np.ones(k, dtype=np.float64) * size * len(alts)
    for alt in alts:
        sel = table.selected(state, alt, claims[0])[entries]  # the claim names errors only: not kept
        unsure |= np.bincount(local[free & (sel == ERROR)], minlength=k) > 0
        mine = free & (sel == PASS)
        usable.append(mine)
        steps *= np.exp2(np.minimum(np.bincount(local[mine], minlength=k), 60))
        open_ = mine & ~taken
        total = np.cumsum(open_)
        before = np.concatenate(([0], total))[sizes_before] if len(entries) else np.zeros(k, dtype=np.int64)
        rank = total - np.repeat(before, size)
        take = open_ & (rank <= alt.count)
        greedy &= np.bincount(local[take], minlength=k) >= alt.count
        taken |= take
    out = np.where(greedy, 0, -2).astype(np.int8)
    out[greedy & (len(alts) * size > allocator.SEARCH_BUDGET)] = -2
    impossible = np.zeros(k, dtype=bool)
    for subset in range(1, 2 ** len(alts)):
        members = [t for t in range(len(alts)) if subset >> t & 1]
        union = np.zeros(len(entries), dtype=bool)
        for t in members:
            union |= usable[t]
        impossible |= np.bincount(local[union], minlength=k) < sum(alts[t].count for t in members)
    out[~greedy & impossible & (steps <= allocator.SEARCH_BUDGET)] = 1
    out[unsure] = -2
    return out


def _one_slot(state, table: Table, free: np.ndarray, alts: list[tuple[Alternative, tuple[str, ...]]],
              claim, positions: np.ndarray) -> np.ndarray:
    k = len(positions)
    entries, local = table.at(positions)
    free = free[entries]
    size = table.size[positions]
    out = np.full(k, 1, dtype=np.int8)
    unsure = table.invalid[positions].copy()
    settled = np.zeros(k, dtype=bool)
    steps = np.zeros(k, dtype=np.float64)
    for alt, names in alts:
        sel = table.selected(state, alt, claim)[entries]
        if alt.all:
            # Checked before any search, for every "All" alternative: every pool complete and valid, and
            # every device's selectors evaluate; then all matching devices, none in use, at most the limit.
            unsure |= table.incomplete[positions] | (np.bincount(local[sel == ERROR], minlength=k) > 0)
            if names:  # a constraint it breaks is the filter's error
                unsure |= ~settled
            matching = np.bincount(local[sel == PASS], minlength=k)
            busy = np.bincount(local[(sel == PASS) & ~free], minlength=k)
            ok = ~settled & (matching >= 1) & (busy == 0) & (matching <= CLAIM_LIMIT)
            out[ok] = 0
            settled |= ok
            continue
        usable = free & (sel == PASS)
        have = np.bincount(local[usable], minlength=k)
        unsure |= np.bincount(local[free & (sel == ERROR)], minlength=k) > 0
        if names:  # the most devices that share one value of every constrained attribute
            values = table.values(names)[entries]
            usable &= values >= 0
            width = max(int(values.max()) + 1 if len(values) else 1, 1)
            pairs, counts = np.unique(local[usable] * width + values[usable], return_counts=True)
            most = np.zeros(k, dtype=np.int64)
            np.maximum.at(most, pairs // width, counts)
        else:
            most = have
        ok = ~settled & (most >= alt.count)
        out[ok] = 0
        # A failed (or constrained) search may try every subset of the free devices it can take: at most
        # 2^free x devices steps; an unconstrained success takes at most one pass over the devices.
        bound = np.exp2(np.minimum(have, 60)) * size
        steps += np.where(settled, 0.0, np.where(ok & (not names), size, bound))
        settled |= ok
    unsure |= steps > allocator.SEARCH_BUDGET
    out[unsure] = -2
    return out

