"""The LimitRanger admission plugin on pods: defaults injected into containers, then min, max and
maxLimitRequestRatio checked per Container and per Pod, in its own words.

Read at kubernetes/kubernetes v1.34:
- `pkg/apis/core/v1/defaults.go` SetDefaults_LimitRangeItem (v1.34.1 as vendored by
  kubernetes-sigs/cluster-capacity commit 3cb0ea289; also stored index commit e34b0935e09e): for a
  `Container` item a missing `default` is taken from `max`, then a missing `defaultRequest` from `default`,
  then from `min`. The API server applies this when the LimitRange is written, so a LimitRange read back from
  a cluster already carries it; applying it again changes nothing.
- `plugin/pkg/admission/limitranger/admission.go` (the v1.34 text, whose messages carry no trailing period;
  an older stored version at commit 8f672ecf2088 still has them): the mutating pass merges every LimitRange's
  Container defaults into each container and init container (only names the container does not set); the
  validating pass checks each LimitRange in turn and refuses the pod with the first one that fails, all of its
  messages joined as utilerrors.NewAggregate prints them (duplicates once; `[a, b]` when several). Values are
  compared as MilliValue. The Pod item sums containers (init containers by the max rule, sidecars added) and
  leaves `spec.overhead` out.

gpufleet walks a LimitRange's resources in name order (Go walks its maps at random, so when several
resources fail the upstream message lists them in varying order) and the LimitRanges of a namespace by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufleet.admission.model import Defaulted
from gpufleet.admission.pods import (
    containers,
    pod_limit_quantities,
    pod_request_quantities,
    quantities,
    requests_limits,
)
from gpufleet.admission.quantities import Q

CONTAINER, POD = "Container", "Pod"


@dataclass
class LimitItem:
    type: str
    min: dict[str, Q] = field(default_factory=dict)
    max: dict[str, Q] = field(default_factory=dict)
    default: dict[str, Q] = field(default_factory=dict)
    default_request: dict[str, Q] = field(default_factory=dict)
    ratio: dict[str, Q] = field(default_factory=dict)


@dataclass
class LimitRange:
    namespace: str
    name: str
    items: list[LimitItem]

    @property
    def ref(self) -> str:
        return f"LimitRange/{self.namespace}/{self.name}"


def limit_range(namespace: str, name: str, spec: object) -> LimitRange:
    """A LimitRange object's items, with the API server's defaulting of Container items applied."""
    raw = spec.get("limits") if isinstance(spec, dict) else None
    items = []
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            continue
        item = LimitItem(entry["type"], quantities(entry.get("min")), quantities(entry.get("max")),
                         quantities(entry.get("default")), quantities(entry.get("defaultRequest")),
                         quantities(entry.get("maxLimitRequestRatio")))
        if item.type == CONTAINER:
            for name_, value in item.max.items():
                item.default.setdefault(name_, value)
            for name_, value in item.default.items():
                item.default_request.setdefault(name_, value)
            for name_, value in item.min.items():
                item.default_request.setdefault(name_, value)
        items.append(item)
    return LimitRange(namespace, name, items)


def inject_defaults(spec: dict, ranges: list[LimitRange]) -> list[Defaulted]:
    """Merge each LimitRange's Container defaults into `spec` in place (a spec whose requests were already
    defaulted from limits); what was set, each with the LimitRange it came from (empty: nothing)."""
    changed: list[Defaulted] = []
    for lr in ranges:
        requests: dict[str, Q] = {}
        limits: dict[str, Q] = {}
        for item in lr.items:
            if item.type == CONTAINER:
                requests.update(item.default_request)
                limits.update(item.default)
        if not requests and not limits:
            continue
        for _, _, c in containers(spec):
            container = str(c.get("name") or "")
            resources = c.get("resources")
            if not isinstance(resources, dict):
                resources = c["resources"] = {}
            for part, defaults in (("limits", limits), ("requests", requests)):
                current = resources.get(part)
                if not isinstance(current, dict):
                    current = resources[part] = {}
                for name, value in defaults.items():
                    if name not in current:
                        current[name] = str(value)
                        changed.append(Defaulted(container, part, name, str(value), lr.ref))
    return changed


def _min(kind: str, name: str, enforced: Q, req: dict[str, Q], lim: dict[str, Q]) -> str | None:
    if name not in req:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if req[name].milli < enforced.milli:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    if name in lim and lim[name].milli < enforced.milli:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {lim[name]}"
    return None


def _max(kind: str, name: str, enforced: Q, req: dict[str, Q], lim: dict[str, Q]) -> str | None:
    if name not in lim:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if lim[name].milli > enforced.milli:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {lim[name]}"
    if name in req and req[name].milli > enforced.milli:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req[name]}"
    return None


def _ratio(kind: str, name: str, enforced: Q, req: dict[str, Q], lim: dict[str, Q]) -> str | None:
    head = f"{name} max limit to request ratio per {kind} is {enforced}"
    if name not in req or req[name].milli == 0:
        return f"{head}, but no request is specified or request is 0"
    if name not in lim or lim[name].milli == 0:
        return f"{head}, but no limit is specified or limit is 0"
    observed = lim[name].milli / req[name].milli
    if observed * 1000 > enforced.milli:
        return f"{head}, but provided ratio is {observed:f}"
    return None


def _item_errors(item: LimitItem, req: dict[str, Q], lim: dict[str, Q]) -> list[str]:
    errors = []
    for check, bounds in ((_min, item.min), (_max, item.max), (_ratio, item.ratio)):
        for name in sorted(bounds):
            message = check(item.type, name, bounds[name], req, lim)
            if message is not None:
                errors.append(message)
    return errors


def violations(spec: dict, lr: LimitRange) -> list[str]:
    """The LimitRanger's messages for a pod (after defaults) against one LimitRange, duplicates once."""
    errors: list[str] = []
    for item in lr.items:
        if item.type == CONTAINER:
            for key in ("containers", "initContainers"):
                for list_key, _, c in containers(spec):
                    if list_key == key:
                        errors += _item_errors(item, *requests_limits(c))
        elif item.type == POD:
            pod_req = pod_request_quantities(spec, overhead=False)
            errors += _item_errors(item, pod_req, pod_limit_quantities(spec, overhead=False))
    return list(dict.fromkeys(errors))


def aggregate(messages: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error()."""
    return messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
