"""Nodes where the structured allocator surely succeeds at once, told without running it.

The allocator (.allocator) fills the slots, every request of every claim in order;
in a slot it tries the alternatives in order, and an ExactCount alternative takes the first `count` devices
that are free (or any, with admin access), not taken by an earlier slot, passed by its selectors and keep
the claim's `matchAttribute` constraints: under a constraint, the devices of the first value (in device
order) that has enough of them. An alternative that cannot be filled that way cannot be filled at all, and
the next is tried; an All alternative takes every device its selectors pass, if none is in use or taken.
When every slot is filled so, without going back to an earlier slot, that is the allocator's answer: the
node passes. This first descent is followed here for every node asked about at once (array operations). A
node where some slot cannot be filled (the search would go back), where the steps spent on alternatives
that fail could pass the budget, or where the search could raise the filter's error first (an invalid
pool, a selector failing on a device it may visit, an All request's checks, a constraint an All request
may break, an All subrequest after the first, which the allocator takes by a rule of its own) is left to
the allocator. Which devices are taken is the allocator's business, on the node
the scheduler picks.
"""

from __future__ import annotations

import numpy as np

from gpufleet.scheduler.plugins.dynamicresources.structured import allocator
from gpufleet.scheduler.plugins.dynamicresources.structured.allocator import (
    CLAIM_LIMIT,
    alternatives,
    claim_limit_error,
    constraints_on,
    requests_of,
)
from gpufleet.scheduler.plugins.dynamicresources.structured.counting import ERROR, PASS, Table
from gpufleet.scheduler.plugins.dynamicresources.structured.refuting import PARTIAL, USABLE_MAX


def passes(state, table: Table, free: np.ndarray, claims: list, positions: np.ndarray) -> np.ndarray:
    """Per node: True where the allocator's first descent fills every slot (the node passes)."""
    k = len(positions)
    if not claims or any(claim_limit_error(c) for c in claims):
        return np.zeros(k, dtype=bool)
    entries, local = table.at(positions)
    free = free[entries]
    size = table.size[positions].astype(np.float64)
    unsure = table.invalid[positions].copy()
    for claim in claims:  # every All request's checks, before any search
        for request in requests_of(claim):
            for alt in alternatives(request):
                if alt.all:
                    sel = table.selected(state, alt, claim)[entries]
                    unsure |= table.incomplete[positions] | (np.bincount(local[sel == ERROR], minlength=k) > 0)
    alive = ~unsure
    taken = np.zeros(len(entries), dtype=bool)
    steps = np.zeros(k)
    for claim in claims:
        picked = np.zeros(k, dtype=np.int64)
        fixed: dict[int, np.ndarray] = {}  # constraint index -> per node the value id it fixed (-1: none yet)
        for request in requests_of(claim):
            done = np.zeros(k, dtype=bool)
            for alt in alternatives(request):
                todo = alive & ~done
                if not todo.any():
                    break
                sel = table.selected(state, alt, claim)[entries]
                scope = constraints_on(claim, alt)
                passing = sel == PASS
                if alt.all:
                    # A constraint it may break (the filter's error), or an All subrequest after the first,
                    # which the allocator takes by a rule of its own: the allocator's to answer.
                    if scope or alt is not alternatives(request)[0]:
                        alive &= ~todo
                        continue
                    matching = np.bincount(local[passing], minlength=k)
                    held = passing & (taken | (False if alt.admin else ~free))
                    ok = (todo & (matching >= 1) & (np.bincount(local[held], minlength=k) == 0)
                          & (picked + matching <= CLAIM_LIMIT))
                    taken |= passing & ok[local]
                    picked += np.where(ok, matching, 0)
                    done |= ok
                    continue
                visible = free | alt.admin
                alive &= ~(todo & (np.bincount(local[visible & ~taken & (sel == ERROR)], minlength=k) > 0))
                todo &= alive
                usable = visible & ~taken & passing
                have = np.bincount(local[usable], minlength=k)
                if alt.count > CLAIM_LIMIT or bool((have[todo] > USABLE_MAX).any()):
                    alive &= ~todo
                    continue
                count = alt.count
                if scope:
                    names = tuple(dict.fromkeys(name for _, name in scope))
                    values = table.values(names)[entries]
                    usable &= values >= 0
                    for i, name in scope:
                        if i in fixed:
                            own = table.values((name,))[entries]
                            usable &= (fixed[i][local] < 0) | (own == fixed[i][local])
                    take = _first_of_a_value(usable, values, local, k, count)
                else:
                    cum = np.cumsum(usable)
                    before = np.concatenate(([0], cum))[_starts(table, positions)]
                    take = usable & (cum - before[local] <= count)
                got = np.bincount(local[take], minlength=k)
                ok = todo & (got >= count) & (picked + count <= CLAIM_LIMIT)
                take &= ok[local]
                bound = PARTIAL[np.minimum(have, USABLE_MAX), min(count, CLAIM_LIMIT + 1)] * size
                steps += np.where(todo, np.where(ok & (not scope), size, bound), 0.0)
                taken |= take
                picked += np.where(ok, count, 0)
                for i, name in scope:
                    own = table.values((name,))[entries]
                    first = np.full(k, -1, dtype=np.int64)
                    nodes, at = np.unique(local[take], return_index=True)  # each node's first taken device
                    first[nodes] = own[take][at]
                    known = fixed.setdefault(i, np.full(k, -1, dtype=np.int64))
                    fixed[i] = np.where(ok & (known < 0), first, known)
                done |= ok
            alive &= done
    return alive & (steps <= allocator.SEARCH_BUDGET)


def _starts(table: Table, positions: np.ndarray) -> np.ndarray:
    """Per node asked about, the index of its first entry in `table.at(positions)`."""
    return np.concatenate(([0], np.cumsum(table.size[positions])[:-1])).astype(np.int64)


def _first_of_a_value(usable: np.ndarray, values: np.ndarray, local: np.ndarray, k: int, count: int) -> np.ndarray:
    """Per entry: taken, where per node the value whose first usable device comes first among the values
    with at least `count` usable devices gives its first `count` devices."""
    take = np.zeros(len(usable), dtype=bool)
    at = np.flatnonzero(usable)
    if not len(at):
        return take
    width = int(values[at].max()) + 1
    group = local[at] * width + values[at]
    order = np.argsort(group, kind="stable")  # by node and value, devices in order within each
    grouped = group[order]
    starts = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
    sizes = np.diff(np.concatenate((starts, [len(grouped)])))
    firsts = at[order][starts]  # each group's first device (entry index)
    eligible = sizes >= count
    owner = local[firsts]
    best = np.full(k, np.iinfo(np.int64).max)
    np.minimum.at(best, owner[eligible], firsts[eligible])
    chosen = eligible & (firsts == best[owner])
    rank = np.arange(len(grouped)) - np.repeat(starts, sizes)
    take[at[order][np.repeat(chosen, sizes) & (rank < count)]] = True
    return take
