"""Priority admission for pods: the class a pod names must exist; a pod naming none gets the globalDefault.

Read at kubernetes/kubernetes v1.34 `plugin/pkg/admission/priority/admission.go` (stored index commit
acd88a099d30): with no `priorityClassName` the pod gets the globalDefault class (the lowest value when
several claim it) or priority 0 and no class; a named class that does not exist forbids the pod (`no
PriorityClass with name X was found`); a `spec.priority` that differs from the class's value is forbidden
too. The two system classes exist in every cluster. gpufleet knows the classes only when PriorityClass
objects are given; without any, a named class is taken on trust.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.manifests.documents import SYSTEM_PRIORITY_CLASSES as SYSTEM_CLASSES


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False


@dataclass(frozen=True)
class Resolved:
    class_name: str
    """The pod's priorityClassName after admission (the default class's name when it named none)."""
    value: int | None
    """Its priority (None: the class is not known to gpufleet)."""
    error: str | None = None


def resolve(spec: dict, classes: dict[str, PriorityClass], known: bool) -> Resolved:
    name = spec.get("priorityClassName")
    name = name if isinstance(name, str) else ""
    if not name:
        defaults = sorted((c for c in classes.values() if c.global_default), key=lambda c: (c.value, c.name))
        resolved = Resolved(defaults[0].name, defaults[0].value) if defaults else Resolved("", 0)
    elif name in SYSTEM_CLASSES:
        resolved = Resolved(name, SYSTEM_CLASSES[name])
    elif name in classes:
        resolved = Resolved(name, classes[name].value)
    elif known:
        return Resolved(name, None, f"no PriorityClass with name {name} was found")
    else:
        return Resolved(name, None)
    given = spec.get("priority")
    if isinstance(given, int) and not isinstance(given, bool) and resolved.value is not None \
            and given != resolved.value and (known or name):
        return Resolved(resolved.class_name, resolved.value,
                        f"the integer value of priority ({given}) must not be provided in pod spec; priority "
                        f"admission controller computed {resolved.value} from the given PriorityClass name")
    return resolved


@dataclass(frozen=True)
class Priorities:
    """The PriorityClasses a check knows (the manifests', the two system classes): what the scheduler reads of a
    pod's priority once admission has resolved it."""

    values: dict[str, int]
    default: int = 0
    """The globalDefault class's value (the lowest when several claim it), else 0."""
    never: frozenset[str] = frozenset()
    """The classes whose preemptionPolicy is Never."""

    def of(self, spec: dict, class_name: str = "") -> int:
        """A pod's priority: spec.priority when set, else its class's value, else the globalDefault's, else 0
        (a class gpufleet does not know counts as 0, as admission takes it on trust)."""
        given = spec.get("priority")
        if isinstance(given, int) and not isinstance(given, bool):
            return given
        name = spec.get("priorityClassName") or class_name
        if isinstance(name, str) and name:
            return self.values.get(name, 0)
        return self.default

    def preempts(self, spec: dict) -> bool:
        """Whether the pod may preempt others: not when its preemptionPolicy (or its class's) is Never."""
        policy = spec.get("preemptionPolicy")
        if policy is not None:
            return policy != "Never"
        name = spec.get("priorityClassName")
        return not (isinstance(name, str) and name in self.never)


def priority_classes(objects: list[dict]) -> Priorities:
    """The PriorityClasses among `objects` (malformed ones skipped), with the system classes."""
    values = dict(SYSTEM_CLASSES)
    defaults: list[int] = []
    never: set[str] = set()
    for o in objects:
        if not isinstance(o, dict) or o.get("kind") != "PriorityClass":
            continue
        value, name = o.get("value"), (o.get("metadata") or {}).get("name") if isinstance(
            o.get("metadata"), dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or not isinstance(name, str):
            continue
        values[name] = value
        if o.get("globalDefault") is True:
            defaults.append(value)
        if o.get("preemptionPolicy") == "Never":
            never.add(name)
    return Priorities(values, min(defaults) if defaults else 0, frozenset(never))
