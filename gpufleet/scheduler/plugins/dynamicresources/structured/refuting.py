"""Nodes where the structured allocator surely fails, or surely runs out of steps, told without running it.

The allocator (.allocator) fills slots, every request of every claim in order, each
with the first of its alternatives that fits, and backtracks over all of them; `taken` keeps one device out
of two slots. A node is refuted, for claims of any shape, when no assignment can exist:
- some slot has no alternative with enough free devices its selectors pass (for All: a matching device,
  none in use, at most the claim limit), whatever the other slots took; the search fails there every time
  it gets there, and never gets past it;
- the slots of some set together need more distinct devices than all their alternatives can offer (Hall's
  condition: each slot needs at least the fewest devices any of its possible alternatives takes);
- a claim whose every request must share one value of the same `matchAttribute` attributes has no value
  whose devices pass the two checks above for that claim's slots.
A failing search returns "cannot allocate" only when it ends before the step budget and raises nothing
first. The steps are bounded from the node's counts: an alternative taking `count` of `usable` devices
visits at most sum(C(usable, j), j < count) partial choices, each a pass over the node's devices, and
hands at most C(usable, count) choices to the next slot. Where instead the search surely passes the budget
before it fails, the answer is the scheduler's timeout ("timed out trying to allocate devices"): at every
visit of a slot it passes over all the node's devices at least once per ExactCount alternative, and hands
the next slot at least C(usable - taken, count) choices of an unconstrained one. A node where neither
bound decides, or where the search could raise the filter's error (an invalid pool, a selector failing on
a free device, an All request's checks, a constraint an All request may break, an All subrequest after the
first), is left to the allocator.
"""

from __future__ import annotations

from math import comb

import numpy as np

from gpufleet.scheduler.plugins.dynamicresources.structured import allocator
from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import (
    CLAIM_LIMIT,
    alternatives,
    claim_limit_error,
    constraints_on,
    late_all,
    requests_of,
)
from gpufleet.scheduler.plugins.dynamicresources.structured.counting import ERROR, PASS, Table

#: Subsets of slots tried for Hall's condition: at most 2^_HALL_SLOTS - 1.
_HALL_SLOTS = 6
USABLE_MAX = 64  # usable devices counted exactly in the step bound; more leave the node to the allocator
#: CHOOSE[u, c] = C(u, c); PARTIAL[u, c] = sum of C(u, j) for j < c.
CHOOSE = np.array([[float(comb(u, c)) for c in range(CLAIM_LIMIT + 2)] for u in range(USABLE_MAX + 1)])
PARTIAL = np.cumsum(np.concatenate((np.zeros((USABLE_MAX + 1, 1)), CHOOSE[:, :-1]), axis=1), axis=1)


class _Alt:
    """One alternative of one slot on the nodes asked about: which entries it may take, how many it needs."""

    def __init__(self, usable: np.ndarray, need: np.ndarray, feasible: np.ndarray, visits: np.ndarray,
                 hands: np.ndarray, names: tuple[str, ...], takes_all: bool, have: np.ndarray | None = None):
        self.usable, self.need, self.feasible = usable, need, feasible
        self.visits, self.hands, self.names, self.all, self.have = visits, hands, names, takes_all, have


def refuted(state, table: Table, free: np.ndarray, claims: list, positions: np.ndarray) -> np.ndarray:
    """Per node: True where the allocator's search surely fails with "cannot allocate all claims"."""
    return outcomes(state, table, free, claims, positions)[0]


def outcomes(state, table: Table, free: np.ndarray, claims: list,
             positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per node, (the search surely fails with "cannot allocate all claims", the search surely runs out of
    its step budget first: "timed out trying to allocate devices")."""
    k = len(positions)
    out = np.zeros(k, dtype=bool)
    if not claims or any(claim_limit_error(c) for c in claims):
        return out, out
    entries, local = table.at(positions)
    free = free[entries]
    size = table.size[positions].astype(np.float64)
    unsure = table.invalid[positions].copy()
    unbounded = np.zeros(k, dtype=bool)  # the steps may pass the budget
    slots: list[tuple[int, list[_Alt]]] = []
    reached = np.ones(k, dtype=bool)  # the search may reach this slot: no slot before it is infeasible
    for c, claim in enumerate(claims):
        for request in requests_of(claim):
            alts = []
            if late_all(alternatives(request)):  # the allocator's own rule for it (allocator.late_all)
                unsure |= reached
            for alt in alternatives(request):
                sel = table.selected(state, alt, claim)[entries]
                names = tuple(dict.fromkeys(name for _, name in constraints_on(claim, alt)))
                passing = sel == PASS
                if alt.all:  # checked before any search: complete pools, selectors that evaluate everywhere
                    unsure |= table.incomplete[positions] | (np.bincount(local[sel == ERROR], minlength=k) > 0)
                    matching = np.bincount(local[passing], minlength=k)
                    busy = 0 if alt.admin else np.bincount(local[passing & ~free], minlength=k)
                    feasible = (matching >= 1) & (busy == 0) & (matching <= CLAIM_LIMIT)
                    if names:  # taking them in order may break a constraint before a device in use (or the
                        # claim limit) ends the attempt: the filter's error, wherever one device matches
                        unsure |= reached & (matching >= 1)
                    alts.append(_Alt(passing, matching, feasible, np.zeros(k), feasible.astype(np.float64), names,
                                     True))
                    continue
                visible = np.ones(len(entries), dtype=bool) if alt.admin else free
                unsure |= reached & (np.bincount(local[visible & (sel == ERROR)], minlength=k) > 0)
                usable = visible & passing
                have = np.bincount(local[usable], minlength=k)
                unbounded |= have > USABLE_MAX
                have = np.minimum(have, USABLE_MAX)
                count = min(alt.count, CLAIM_LIMIT + 1)  # more: never filled (the claim limit), left alone
                unsure |= alt.count > CLAIM_LIMIT
                alts.append(_Alt(usable, np.full(k, count), have >= count, PARTIAL[have, count] * size,
                                 CHOOSE[have, count], names, False, have))
            slots.append((c, alts))
            reached &= np.logical_or.reduce([a.feasible for a in alts])
    # The search's steps: every slot reached, every alternative tried there.
    reach, steps = np.ones(k), np.zeros(k)
    for _, alts in slots:
        steps += reach * sum(a.visits for a in alts)
        reach = np.minimum(reach * sum(a.hands for a in alts), 1e30)
    unbounded |= steps > allocator.SEARCH_BUDGET  # read when asked (tests lower it)
    out |= _short(slots, local, k, np.arange(k))
    for c in range(len(claims)):
        out |= _no_shared_value(table, entries, local, k, [alts for owner, alts in slots if owner == c])
    out &= ~unsure
    return out & ~unbounded, out & (_fewest_steps(slots, size, k) > allocator.SEARCH_BUDGET)


def _fewest_steps(slots: list, size: np.ndarray, k: int) -> np.ndarray:
    """Per node, at least how many steps a search that fails takes: it tries every alternative at every
    visit of a slot, an ExactCount one passing over all the node's devices at least once (while the claim
    holds fewer than the claim limit), and hands the next slot at least C(usable - taken, count) choices of
    an unconstrained ExactCount alternative (however many devices the earlier slots took of its own)."""
    visits, steps, taken = np.ones(k), np.zeros(k), np.zeros(k, dtype=np.int64)
    held: dict[int, np.ndarray] = {}  # per claim, the most devices it may hold already
    for c, alts in slots:
        before = held.get(c, np.zeros(k, dtype=np.int64))
        scans = sum(1 for a in alts if not a.all)
        steps += np.where(before < CLAIM_LIMIT, visits * scans * size, 0.0)
        choices = np.zeros(k)
        for a in alts:
            if not a.all and not a.names:
                left = np.clip(a.have - taken, 0, USABLE_MAX)
                choices += np.where(before + a.need <= CLAIM_LIMIT, CHOOSE[left, a.need], 0.0)
        visits = np.minimum(visits * choices, 1e30)
        most = np.max([a.need for a in alts], axis=0)
        taken += most
        held[c] = before + most
    return steps


def _short(slots: list, group: np.ndarray, g: int, node: np.ndarray, only: np.ndarray | None = None) -> np.ndarray:
    """Per group of entries (a node, or a node's devices of one value): True where some set of slots needs
    more distinct devices than its alternatives offer there (a slot with no feasible alternative is the set
    of one). `group`: per entry its group, `node`: per group its node's index; `only`: the entries that may
    be taken at all."""
    out = np.zeros(g, dtype=bool)
    offers, needs = [], []
    for _, alts in slots:
        union = np.zeros(len(group), dtype=bool)
        fewest = np.full(g, np.inf)
        for a in alts:
            usable = a.usable if only is None else a.usable & only
            ok = a.feasible[node] & (np.bincount(group[usable], minlength=g) >= a.need[node])
            union |= usable & ok[group]
            fewest = np.where(ok, np.minimum(fewest, a.need[node]), fewest)
        offers.append(union)
        needs.append(fewest)
        out |= np.isinf(fewest)
    if len(slots) > _HALL_SLOTS:
        return out
    for subset in range(3, 2 ** len(slots)):
        members = [t for t in range(len(slots)) if subset >> t & 1]
        if len(members) < 2:
            continue
        union = np.zeros(len(group), dtype=bool)
        for t in members:
            union |= offers[t]
        out |= np.bincount(group[union], minlength=g) < sum(needs[t] for t in members)
    return out


def _no_shared_value(table: Table, entries: np.ndarray, local: np.ndarray, k: int, claim_slots: list) -> np.ndarray:
    """Per node: True where one claim's requests must all take devices of one value of the same constrained
    attributes, and no value's devices can serve them all."""
    names = {a.names for alts in claim_slots for a in alts}
    if len(names) != 1 or not next(iter(names)) or any(a.all for alts in claim_slots for a in alts):
        return np.zeros(k, dtype=bool)
    values = table.values(next(iter(names)))[entries]
    valued = values >= 0
    width = max(int(values.max()) + 1 if len(values) else 1, 1)
    pairs, group = np.unique(local * width + np.maximum(values, 0), return_inverse=True)
    group = group.reshape(-1)
    served = ~_short([(0, alts) for alts in claim_slots], group, len(pairs), pairs // width, only=valued)
    valued_groups = np.bincount(group[valued], minlength=len(pairs)) > 0
    return np.bincount((pairs // width)[served & valued_groups], minlength=k) == 0
