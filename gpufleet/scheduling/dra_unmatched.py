"""Why a pod's claims cannot be allocated even with every device free: which request, and which selector
passes no device of the nodes it may use (with the values those devices carry for what the selector reads),
or how many devices it asks for against the most one node offers.

The scheduler says only "cannot allocate all claims" per node; its message is kept as it is, and this is the
explanation beside it (gpufleet.scheduling.blocked). In-use devices do not count here: the question is
whether any allocation could exist on these nodes at all. Selectors are applied in the allocator's order,
the DeviceClass's first, then the request's; a CEL error counts as not passing (the scheduler reports
those errors in its own message). The work is done on the check's device table (.counting.Table), where
one device of each look answers for all devices that look alike, and is kept for every Pending pod.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from gpufleet.scheduler.plugins.dynamicresources.structured import (
    SELECTED,
    Alternative,
    Claim,
    alternatives,
    constraints_on,
    requests_of,
)
from gpufleet.scheduling.dra_offer import Selectors, attribute, class_expressions
from gpufleet.scheduling.unmet import GPU, most_known

_VALUES_SHOWN = 6
_LITERAL = r'("(?:[^"\\]|\\.)*")'
#: The selectors gpufleet renders for a stack config's claim shorthands (gpufleet.render.claims), and the key.
SHORTHANDS = (
    (re.compile(r'device\.attributes\["gpu\.nvidia\.com"\]\.productName == ' + _LITERAL), "product"),
    (re.compile(r'device\.attributes\["gpu\.nvidia\.com"\]\.profile == ' + _LITERAL), "profile"),
    (re.compile(r'device\.capacity\["gpu\.nvidia\.com"\]\.memory\.compareTo\(quantity\(' + _LITERAL
                + r'\)\) >= 0'), "minMemory"),
)


@dataclass(frozen=True)
class NoDevice:
    """No ResourceSlice publishes a device for the nodes."""


@dataclass(frozen=True)
class Unselected:
    """A selector passes none of the devices the earlier ones let through."""

    who: str
    expression: str
    entries: np.ndarray
    """The devices it was applied to (entries of the device table)."""
    what: str
    class_name: str
    classes: tuple[str, ...]
    """For a DeviceClass's selector: the classes that do select some of these devices."""

    @property
    def of_class(self) -> bool:
        return self.who.startswith("DeviceClass")


@dataclass(frozen=True)
class TooFew:
    """Fewer devices pass the selectors on every node than the request asks for."""

    wanted: int
    most: int
    node: str
    constrained: tuple[str, ...]
    entries: np.ndarray


def unmatched(state, namespace: str, pod: str, spec: dict, positions: np.ndarray) -> tuple[str, str] | None:
    """(summary, fix) when some request of the pod's claims that still need devices matches too few devices
    on every one of the nodes at `positions` (of the DraState's attached nodes, the check's node order);
    None when each could be allocated there."""
    needs = state.needs(namespace, pod, spec)
    if needs.gated or needs.prefilter or not needs.allocate:
        return None
    if state.explaining is None:
        state.explaining = Explaining(state)
    known = state.explaining
    where = f"the {len(positions)} node{'s' if len(positions) != 1 else ''} it may use"
    for (claim, _), name in zip(needs.allocate, _claim_names(state, namespace, spec), strict=False):
        for request in requests_of(claim):
            alts = alternatives(request)
            if not alts or any(known.fits_somewhere(claim, alt, positions) for alt in alts):
                continue
            problems = [known.problem(claim, alt, positions) for alt in alts]
            if any(p is None for p in problems):
                continue
            which = f"request {request.get('name')} of {name}"
            if len(alts) > 1:
                which += f" (and its {len(alts) - 1} other alternative(s): none matches either)"
            return _words(which, where, problems[0], state.table())
    return None


def _claim_names(state, namespace: str, spec: dict) -> list[str]:
    """How a user names each claim still to allocate, in the order `needs.allocate` holds them."""
    out = []
    for pc in spec.get("resourceClaims") or ():
        template, named = pc.get("resourceClaimTemplateName"), pc.get("resourceClaimName")
        if template is not None:
            out.append(f"ResourceClaimTemplate {namespace}/{template}")
        elif (namespace, named) not in state.shared:
            out.append(f"ResourceClaim {namespace}/{named}")
    return out


def _constrained(claim: Claim, alt: Alternative) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for _, name in constraints_on(claim, alt)))


class Explaining:
    """What the explanations of a check's Pending pods share: per alternative (class, selectors, constrained
    attributes), the most devices it could take on each node with every device free; per selector, the
    device table entries it passes; the problems found."""

    def __init__(self, state):
        self.state = state
        self.selectors = Selectors()
        self._most: dict[tuple, np.ndarray] = {}
        self._passes: dict[str, np.ndarray] = {}
        self._problems: dict[tuple, object] = {}

    def fits_somewhere(self, claim: Claim, alt: Alternative, positions: np.ndarray) -> bool:
        """Whether some of the nodes has as many devices as the alternative asks for that its selectors pass
        (sharing one value of each constrained attribute)."""
        constrained = _constrained(claim, alt)
        key = (alt.class_name, alt.selectors, constrained)
        most = self._most.get(key)
        if most is None:
            selected = self.state.table().selected(self.state, alt, claim) == SELECTED
            most = self._most[key] = self._most_per_node(selected, constrained)
        return bool(len(positions)) and int(most[positions].max()) >= (1 if alt.all else alt.count)

    def _most_per_node(self, passing: np.ndarray, constrained: tuple[str, ...]) -> np.ndarray:
        """Per node position, the most passing entries sharing their values of the constrained attributes."""
        table = self.state.table()
        values = table.values(constrained) if constrained else np.zeros(len(passing), dtype=np.int64)
        passing = passing & (values >= 0)
        width = int(values.max(initial=0)) + 1
        groups, counts = np.unique(table.owner[passing] * width + values[passing], return_counts=True)
        most = np.zeros(len(table.size), dtype=np.int64)
        np.maximum.at(most, groups // width, counts)
        return most

    def _passing(self, expression: str) -> np.ndarray:
        """Per table entry, whether one CEL expression passes its device (an error does not)."""
        found = self._passes.get(expression)
        if found is None:
            from gpufleet.scheduler.plugins.dynamicresources.cel import reads

            state, table = self.state, self.state.table()
            ask = state.selector_asker()
            paths = reads(expression)
            kinds = table.kinds(ask, paths if paths is None else tuple(sorted(paths)))
            looks, first = np.unique(kinds, return_index=True)
            outcome = self.selectors.outcome
            answers = np.array([outcome(expression, table.devices[i]) is True for i in first.tolist()],
                               dtype=bool)
            found = self._passes[expression] = answers[np.searchsorted(looks, kinds)]
        return found

    def problem(self, claim: Claim, alt: Alternative, positions: np.ndarray):
        """Why the alternative has no allocation on any of the nodes (NoDevice, Unselected or TooFew), or
        None when some node could allocate it; kept, since pods of many workloads ask alike."""
        constrained = _constrained(claim, alt)
        key = (alt.class_name, alt.selectors, alt.all, alt.count, constrained, positions.tobytes())
        if key not in self._problems:
            self._problems[key] = self._problem(claim, alt, positions, constrained)
        return self._problems[key]

    def _problem(self, claim: Claim, alt: Alternative, positions: np.ndarray, constrained):
        state, table = self.state, self.state.table()
        remaining = np.zeros(len(table.keys), dtype=bool)
        remaining[table.at(positions)[0]] = True
        if not remaining.any():
            return NoDevice()
        by_class = f"DeviceClass {alt.class_name}'s selector"
        steps = [(by_class, e) for e in class_expressions(state.objects, alt.class_name)]
        steps += [(f"its selector #{i}", e) for i, e in enumerate(alt.selectors)]
        for k, (who, expression) in enumerate(steps):
            what = ("the nodes publish" if k == 0 else f"DeviceClass {alt.class_name} selects"
                    if steps[k - 1][0] == by_class != who else "the selectors before it pass")
            passing = remaining & self._passing(expression)
            if not passing.any():
                return Unselected(who, expression, np.flatnonzero(remaining), what, alt.class_name,
                                  self._selecting(remaining, claim) if who == by_class else ())
            remaining = passing
        most = self._most_per_node(remaining, constrained)
        best = positions[int(np.argmax(most[positions]))]
        wanted = 1 if alt.all else alt.count
        if most[best] >= wanted:
            return None
        return TooFew(wanted, int(most[best]), state.nodes[best].name, constrained, np.flatnonzero(remaining))

    def _selecting(self, entries: np.ndarray, claim: Claim) -> tuple[str, ...]:
        """The DeviceClasses that select some of these entries' devices."""
        table = self.state.table()
        return tuple(c for c in sorted(self.state.objects.classes)
                     if (table.selected(self.state, Alternative("", c, (), False, 1, False), claim)[entries]
                         == SELECTED).any())


def _words(which: str, where: str, problem, table) -> tuple[str, str]:
    """The summary and the fix for an alternative's problem."""
    if isinstance(problem, NoDevice):
        return (f"{which} finds no device: no ResourceSlice publishes devices for {where}",
                "run the DRA driver on these nodes (its kubelet plugin publishes their ResourceSlices), or "
                "let the pod use nodes that have devices")
    if isinstance(problem, Unselected):
        carried = carried_values(problem.expression, table, problem.entries)
        summary = (f"{which} matches no device on {where}: {problem.who} `{problem.expression}`"
                   f"{_shorthand(problem.expression)} passes none of the {len(problem.entries)} device(s) "
                   f"{problem.what}")
        if carried:
            summary += f"; they carry {carried}"
        if problem.of_class:
            others = f" ({_listed(list(problem.classes))})" if problem.classes else ""
            return summary, (f"ask for a DeviceClass that selects these devices{others}, or add nodes with "
                             f"devices of DeviceClass {problem.class_name}")
        carry = f" ({carried})" if carried else ""
        return summary, f"select what the devices carry{carry}, or add nodes with devices that match"
    share = f" that share one {', '.join(problem.constrained)}" if problem.constrained else ""
    most = f"{problem.most} (node {problem.node})" if problem.most else "none"
    summary = (f"{which} asks for {problem.wanted} device(s){share}; the most that pass its selectors on one "
               f"node it may use is {most}")
    known = most_known(GPU, ())
    if (known is not None and problem.wanted > known[0]
            and all(attribute(table.devices[i], "type") == "gpu" for i in problem.entries.tolist())):
        return (f"{summary}; no node of a known GPU product holds {problem.wanted} GPUs (the most is "
                f"{known[1]})",
                f"ask for at most {problem.most} per claim and split the work over more pods: no node to add "
                f"holds {problem.wanted}")
    return summary, (f"ask for at most {problem.most} device(s){share} per claim, or add nodes with "
                     f"{problem.wanted} such devices")


def _shorthand(expression: str) -> str:
    """` (a stack config's `product: X`)` when gpufleet rendered the selector from a claim shorthand."""
    for pattern, key in SHORTHANDS:
        m = pattern.fullmatch(expression)
        if m:
            return f" (a stack config's `{key}: {json.loads(m.group(1))}`)"
    return ""


def carried_values(expression: str, table, entries: np.ndarray) -> str:
    """What the devices at these entries of the device table carry for the fields the expression reads:
    `productName: A, B; memory: 81559Mi` (a field a device lacks: `(not set)`)."""
    from gpufleet.scheduler.plugins.dynamicresources.cel import reads

    paths = reads(expression)
    if paths is None:
        return ""
    if not paths:
        return "driver: " + _listed(sorted({table.devices[i].driver for i in entries.tolist()}))
    fields = table._fields()
    parts = []
    for path in paths:
        seen = {fields[i].get(path) for i in entries.tolist()}
        parts.append(f"{path[2]}: {_listed(sorted(_shown(v) for v in seen))}")
    return "; ".join(parts)


def _shown(value) -> str:
    """A field as the table keeps it (the API's one-key map as pairs: (("string", "x"),)) in words."""
    if value is None:
        return "(not set)"
    if isinstance(value, tuple) and value and isinstance(value[0], tuple) and len(value[0]) == 2:
        return str(value[0][1])
    return str(value)


def _listed(values: list[str]) -> str:
    shown = ", ".join(values[:_VALUES_SHOWN])
    return shown + (f" and {len(values) - _VALUES_SHOWN} more" if len(values) > _VALUES_SHOWN else "")
