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

SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


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
