"""The structured allocator (k8s.io/dynamic-resource-allocation v0.34.1 structured/, `Allocate`; docs/dra.md):
every unallocated claim of a pod, on one node, at once.

Claims in pod order, requests in claim order, each request's alternatives (`exactly`, or `firstAvailable`
subrequests in order), device slots one by one over the node's pools and devices: the first device that
is free, passes the class's and the request's CEL selectors and keeps the claim's `matchAttribute`
constraints is taken, and the search backtracks over all claims of the pod on failure, stopping at the
first full solution. The search is bounded (SEARCH_BUDGET steps), like the scheduler's filter timeout.
`distinctAttribute` is behind the DRAConsumableCapacity gate (off in 1.34) and ignored, as there.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

from gpufleet.capacity.dra import Device
from gpufleet.scheduler.plugins.dynamicresources.cel import (
    CelError,
    compile_selector,
    device_activation,
    evaluate,
    projection,
    reads,
)
from gpufleet.scheduler.plugins.dynamicresources.structured.pools import Pool

CLAIM_LIMIT = 32
SEARCH_BUDGET = 20_000
_UNSEEN = object()


class FilterError(Exception):
    """The filter returns an error (not "unschedulable"): the whole scheduling attempt fails."""


class OutOfBudget(Exception):
    """The search took more than SEARCH_BUDGET steps (the scheduler's filter times out instead)."""


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    spec: dict
    """The ResourceClaimSpec."""

    @property
    def label(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Alternative:
    request: str
    """`req`, or `req/sub` for a firstAvailable subrequest (as allocation results name it)."""
    class_name: str
    selectors: tuple[str, ...]
    all: bool
    count: int
    admin: bool


_ALTERNATIVES: dict[int, tuple[dict, list[Alternative]]] = {}


def alternatives(request: dict) -> list[Alternative]:
    """A request's alternatives in order (read once per request object: specs never change in a check)."""
    found = _ALTERNATIVES.get(id(request))
    if found is None or found[0] is not request:
        if len(_ALTERNATIVES) > 65536:
            _ALTERNATIVES.clear()
        found = _ALTERNATIVES[id(request)] = (request, _alternatives(request))  # holds it: the id stays its own
    return found[1]


def _alternatives(request: dict) -> list[Alternative]:
    name = request.get("name") or ""
    if request.get("exactly") is not None:
        return [_alternative(name, request["exactly"])]
    return [_alternative(f"{name}/{sub.get('name')}", sub) for sub in request.get("firstAvailable") or ()]


def _alternative(name: str, r: dict) -> Alternative:
    mode_all = r.get("allocationMode") == "All"
    return Alternative(name, r.get("deviceClassName") or "", tuple((s.get("cel") or {}).get("expression") or ""
                                                                   for s in r.get("selectors") or ()),
                       mode_all, 0 if mode_all else int(r.get("count") or 1), bool(r.get("adminAccess")))


def late_all(alts: list[Alternative]) -> bool:
    """Whether an "All" subrequest follows a request's first one: the allocator takes it by a rule of its own
    (Allocator._take_all_then_first), which only the allocator itself follows."""
    return any(alt.all for alt in alts[1:])


def requests_of(claim: Claim) -> list[dict]:
    return list(((claim.spec.get("devices") or {}).get("requests")) or ())


def missing_class(claims: list[Claim], classes: dict[str, dict]) -> str | None:
    """PreFilter: the first request whose device class does not exist, in the scheduler's words."""
    for claim in claims:
        for request in requests_of(claim):
            for alt in alternatives(request):
                if alt.class_name not in classes:
                    return f"request {alt.request}: device class {alt.class_name} does not exist"
    return None


def constraints_on(claim: Claim, alt: Alternative) -> list[tuple[int, str]]:
    """The claim's `matchAttribute` constraints (index, attribute) that apply to this alternative: those
    naming no requests, its request, or (for a firstAvailable subrequest) its parent request."""
    parent = alt.request.split("/", 1)[0]
    found = []
    for i, constraint in enumerate((claim.spec.get("devices") or {}).get("constraints") or ()):
        scope = constraint.get("requests") or []
        name = constraint.get("matchAttribute")
        if name and (not scope or parent in scope or alt.request in scope):
            found.append((i, name))
    return found


def claim_limit_error(claim: Claim) -> str | None:
    wanted = sum(alt.count for r in requests_of(claim) for alt in alternatives(r)[:1] if not alt.all)
    if wanted > CLAIM_LIMIT:
        return f"claim {claim.label}: number of requested devices {wanted} exceeds the claim limit of {CLAIM_LIMIT}"
    return None


def lookup(device: Device, name: str):
    attrs = device.attributes
    value = attrs.get(name)
    if value is None:
        domain, _, ident = name.rpartition("/")
        if domain == device.driver:
            value = attrs.get(ident)
    return None if value is None else tuple(sorted(value.items()))


class Allocator:
    """One node's allocation state: its pools, the devices in use, the classes."""

    def __init__(self, classes: dict[str, dict], pools: list[Pool], in_use: set[tuple[str, str, str]],
                 selected: dict[tuple, bool] | None = None, activations: dict[tuple, dict] | None = None,
                 outcomes: dict[tuple, Any] | None = None, candidates: dict[tuple, tuple] | None = None):
        """`selected`, `activations` and `outcomes` may be shared between allocators (CEL is pure: a device
        passes the same selectors every time), which saves evaluating them per pod and node; `outcomes`
        holds one expression's result (or runtime error) per set of values it reads (`cel.reads`), so
        devices that agree on those share one evaluation; `candidates` holds, per pools and alternative, the
        devices its selectors let through (or fail on), so a search skips the others without asking again."""
        self.classes, self.pools, self.in_use = classes, pools, in_use
        self.devices = [d for p in pools for d in p.devices]
        self.keys = [d.key for d in self.devices]
        self._match: dict[tuple, bool] = {} if selected is None else selected
        self._activation: dict[tuple, dict] = {} if activations is None else activations
        # one cache for three kinds of answer, each under its own key shape: a selector's outcome (True, False
        # or the error text), a device field's value (`_fits`) and a projected value in a 1-tuple (`_seen`)
        self._outcome: dict[tuple, Any] = {} if outcomes is None else outcomes
        self._candidates: dict[tuple, tuple] = {} if candidates is None else candidates
        self.steps = 0
        self._scopes: dict[tuple[int, Alternative], list[tuple[int, str]]] = {}  # claims live as long as a search
        self._free_positions: dict[tuple, list[int]] = {}

    # -- selectors ------------------------------------------------------------------------------------------

    def _selected(self, device: Device, claim: Claim, alt: Alternative, device_key=None) -> bool:
        key = (device.key if device_key is None else device_key, alt.class_name, alt.selectors)
        found = self._match.get(key)
        if found is None:
            found = self._match[key] = self._evaluate(device, claim, alt)
        return found

    def _evaluate(self, device: Device, claim: Claim, alt: Alternative) -> bool:
        class_selectors = tuple((s.get("cel") or {}).get("expression") or ""
                                for s in self.classes[alt.class_name].get("selectors") or ())
        for who, selectors in ((f"class {alt.class_name}", class_selectors), (f"claim {claim.label}", alt.selectors)):
            for i, expression in enumerate(selectors):
                try:
                    program = compile_selector(expression)
                except CelError as e:
                    raise FilterError(f"{who}: selector #{i}: CEL compile error: {e}") from e
                outcome = self._run(expression, program, device)
                if isinstance(outcome, str):
                    raise FilterError(f"{who}: selector #{i}: CEL runtime error: {outcome}")
                if not outcome:
                    return False
        return True

    def _run(self, expression: str, program, device: Device) -> bool | str:
        """One compiled selector on one device: its result, or its runtime error's text."""
        try:
            activation = self._device_var(device)
        except CelError as e:  # an attribute that is no value of its type
            return str(e)
        paths = reads(expression)
        key = (expression, device.key if paths is None else self._seen(device, activation, paths))
        found = self._outcome.get(key)
        if found is None:
            try:
                found = evaluate(program, activation)
            except CelError as e:
                found = str(e)
            self._outcome[key] = found
        return found

    def _seen(self, device: Device, activation: dict, paths: tuple) -> tuple:
        """`cel.projection` of a device, from its fields read once each (kept with the outcomes, by
        (device, path): no expression is a tuple)."""
        out = [device.driver]
        for path in paths:
            field = (device.key, path)
            value = self._outcome.get(field)
            if value is None:
                value = self._outcome[field] = (projection(activation, (path,))[1],)
            out.append(value[0])
        return tuple(out)

    def _device_var(self, device: Device) -> dict:
        found = self._activation.get(device.key)
        if found is None:
            found = self._activation[device.key] = device_activation(device.driver, device.attributes,
                                                                     device.capacity)
        return found

    # -- search ---------------------------------------------------------------------------------------------

    def allocate(self, claims: list[Claim]) -> list[list[tuple[str, Device]]] | None:
        """Devices per claim as (request, device), or None when the claims cannot all be allocated here.

        Raises FilterError as the scheduler's filter errors (CEL errors, invalid pools, claim limit) and
        OutOfBudget when the search runs out of steps.
        """
        for claim in claims:
            problem = claim_limit_error(claim)
            if problem:
                raise FilterError(problem)
        for claim in claims:  # the allocator's validateDeviceRequest, every request and subrequest, first
            for request in requests_of(claim):
                for alt in alternatives(request):
                    if alt.all:
                        self._all_pools_usable(claim, alt)
        invalid = next((p for p in self.pools if p.invalid), None)
        if invalid is not None:
            raise FilterError(f"pool {invalid.name} is invalid: {invalid.invalid}")
        slots = [(c, r) for c, claim in enumerate(claims) for r in requests_of(claim)]
        picked: list[list[tuple[str, Device]]] = [[] for _ in claims]
        taken: set[tuple[str, str, str]] = set()
        fixed: list[dict[int, tuple]] = [{} for _ in claims]
        self.steps = 0
        return picked if self._slot(claims, slots, 0, picked, taken, fixed) else None

    def _slot(self, claims, slots, k, picked, taken, fixed) -> bool:
        if k == len(slots):
            return True
        c, request = slots[k]
        alts = alternatives(request)

        def rest() -> bool:
            return self._slot(claims, slots, k + 1, picked, taken, fixed)

        for i, alt in enumerate(alts):
            if alt.all and i > 0:
                if self._take_all_then_first(claims[c], alt, alts[0], c, picked, taken, fixed, rest):
                    return True
            elif alt.all:
                if self._take_all(claims[c], alt, c, picked, taken, fixed, rest):
                    return True
            elif self._take(claims[c], alt, c, alt.count, 0, picked, taken, fixed, rest):
                return True
        return False

    def _constraints(self, claim: Claim, alt: Alternative) -> list[tuple[int, str]]:
        key = (id(claim), alt)
        found = self._scopes.get(key)
        if found is None:
            found = self._scopes[key] = constraints_on(claim, alt)
        return found

    def _fits(self, device: Device, claim: Claim, alt: Alternative, c: int, fixed) -> list[tuple[int, object]] | None:
        """The constraints this device newly fixes, or None when it breaks one."""
        newly = []
        for i, name in self._constraints(claim, alt):
            key = ("matchAttribute", device.key, name)  # kept with the outcomes: no expression is a 3-tuple
            value = self._outcome.get(key, _UNSEEN)
            if value is _UNSEEN:
                value = self._outcome[key] = lookup(device, name)
            if value is None:
                return None
            have = fixed[c].get(i)
            if have is None:
                newly.append((i, value))
            elif have != value:
                return None
        return newly

    def _take(self, claim, alt, c, left, start, picked, taken, fixed, rest) -> bool:
        """Device slots one by one: the devices from `start` on, in order. Every device visited is a step
        of the budget; those the alternative's selectors reject are passed over in bulk (the same steps)."""
        if left == 0:
            return rest()
        if len(picked[c]) >= CLAIM_LIMIT:
            return False
        positions, failing = self._open(claim, alt)
        keys, last = self.keys, start
        for at in range(bisect_left(positions, start), len(positions)):
            pos = positions[at]
            self.steps += pos + 1 - last  # the devices in use before it were visited too
            if self.steps > SEARCH_BUDGET:
                raise OutOfBudget
            last = pos + 1
            key = keys[pos]
            if key in taken:
                continue
            device = self.devices[pos]
            if pos in failing:
                self._selected(device, claim, alt, key)  # raises the selector's error, in this claim's words
            newly = self._fits(device, claim, alt, c, fixed)
            if newly is None:
                continue
            taken.add(key)
            picked[c].append((alt.request, device))
            fixed[c].update(newly)
            if self._take(claim, alt, c, left - 1, pos + 1, picked, taken, fixed, rest):
                return True
            for i, _ in newly:
                del fixed[c][i]
            picked[c].pop()
            taken.discard(key)
        self._steps(len(self.devices) - last)
        return False

    def _steps(self, count: int) -> None:
        self.steps += count
        if self.steps > SEARCH_BUDGET:
            raise OutOfBudget

    def _open(self, claim: Claim, alt: Alternative) -> tuple[list[int], frozenset[int]]:
        """`_selectable`, less the devices in use (unless the alternative asks for admin access): those the
        search only steps over."""
        positions, failing = self._selectable(claim, alt)
        if alt.admin:
            return positions, failing
        key = (alt.class_name, alt.selectors)
        found = self._free_positions.get(key)
        if found is None:
            keys, in_use = self.keys, self.in_use
            found = self._free_positions[key] = [p for p in positions if keys[p] not in in_use]
        return found, failing

    def _selectable(self, claim: Claim, alt: Alternative) -> tuple[list[int], frozenset[int]]:
        """(positions of the devices the alternative's selectors pass or fail on, those they fail on)."""
        key = (id(self.pools), alt.class_name, alt.selectors)
        found = self._candidates.get(key)
        if found is None:
            positions, failing = [], set()
            for pos, device in enumerate(self.devices):
                try:
                    if self._selected(device, claim, alt, self.keys[pos]):
                        positions.append(pos)
                except FilterError:
                    positions.append(pos)
                    failing.add(pos)
            # holds the pools: the id stays theirs
            found = self._candidates[key] = (positions, frozenset(failing), self.pools)
        return found[0], found[1]

    def _all_pools_usable(self, claim: Claim, alt: Alternative) -> None:
        """An "All" request needs every pool on the node complete and valid, whatever devices they hold (the
        allocator checks this before it searches, even for an alternative it would never reach)."""
        name = alt.request.split("/", 1)[-1]
        for pool in self.pools:
            if not pool.complete or pool.invalid:
                state = "currently being updated" if not pool.complete else "currently invalid"
                raise FilterError(f"claim {claim.label}, request {name}: asks for all devices, but resource pool "
                                  f"{pool.driver}/{pool.name} is {state}")
            for device in pool.devices:
                self._selected(device, claim, alt)  # selector errors surface here too

    def _all_of(self, claim: Claim, alt: Alternative) -> list[Device]:
        """The devices an "All" alternative takes on this node: every one its selectors pass, pool by pool."""
        chosen = []
        for pool in self.pools:
            matching = [d for d in pool.devices if self._selected(d, claim, alt)]
            if matching and (not pool.complete or pool.invalid):
                state = "currently being updated" if not pool.complete else "currently invalid"
                raise FilterError(f"claim {claim.label}, request {alt.request}: asks for all devices, but resource "
                                  f"pool {pool.name} is {state}")
            chosen += matching
        return chosen

    def _take_all(self, claim, alt, c, picked, taken, fixed, rest) -> bool:
        chosen = self._all_of(claim, alt)
        if not chosen or len(picked[c]) + len(chosen) > CLAIM_LIMIT:
            return False
        return self._take_each(claim, alt, c, chosen, picked, taken, fixed, rest)

    def _take_all_then_first(self, claim, alt, first, c, picked, taken, fixed, rest) -> bool:
        """An "All" subrequest after a request's first one, as 1.34's allocator takes it: it takes the first
        device of the "All" and then carries on with the request's *first* subrequest from its second device
        slot (the subrequest's own index is lost on the way), so it ends with that device plus `count - 1`
        devices of the first subrequest (or the first subrequest's "All" devices after its first)."""
        chosen = self._all_of(claim, alt)
        if not chosen or len(picked[c]) + len(chosen) > CLAIM_LIMIT:
            return False

        def then_first() -> bool:
            if first.all:
                more = self._all_of(claim, first)
                if not more or len(picked[c]) + len(more) - 1 > CLAIM_LIMIT:
                    return False
                return self._take_each(claim, first, c, more[1:], picked, taken, fixed, rest)
            if len(picked[c]) + first.count - 1 > CLAIM_LIMIT:
                return False
            return self._take(claim, first, c, first.count - 1, 0, picked, taken, fixed, rest)

        return self._take_each(claim, alt, c, chosen[:1], picked, taken, fixed, then_first)

    def _take_each(self, claim, alt, c, devices, picked, taken, fixed, rest) -> bool:
        """Every one of `devices`, in order, as an "All" request takes them: one in use ends the attempt, one
        that breaks a constraint is the filter's error."""
        added: list[int] = []
        held = 0
        ok = True
        for d in devices:
            if d.key in taken or (d.key in self.in_use and not alt.admin):
                ok = False
                break
            newly = self._fits(d, claim, alt, c, fixed)
            if newly is None:
                raise FilterError(f"claim {claim.label}, request {alt.request.split('/', 1)[-1]}: cannot add device "
                                  f"{d.label} because a claim constraint would not be satisfied")
            fixed[c].update(newly)
            added += [i for i, _ in newly]
            taken.add(d.key)
            picked[c].append((alt.request, d))
            held += 1
        if ok and rest():
            return True
        for _ in range(held):
            taken.discard(picked[c].pop()[1].key)
        for i in added:
            del fixed[c][i]
        return False
