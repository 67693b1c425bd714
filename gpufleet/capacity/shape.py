"""Type checks of decoded JSON/YAML against the shape the API server decodes (what `check` reads).

The API server refuses to decode an object whose fields have the wrong JSON type (a list where an
object belongs, a string for an int32, text that is no quantity); `Shape` finds such fields and says
which, so a bad input is a one-line error instead of a crash deep in the engine. Only the fields gpufleet
reads are checked; `gpufleet validate` checks whole objects against the schemas.
"""

from __future__ import annotations

from typing import Any

from gpufleet.capacity.quantity import to_units
from gpufleet.errors import InputError

INT32 = (-(2**31), 2**31 - 1)
INT64_MAX = 2**63 - 1


def json_type(value: Any) -> str:
    """How a value reads in JSON terms, for messages: 'a string', 'a list', 'null', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) <= 40 else "a string"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


class Shape:
    """Collects `path: problem` lines while walking one object."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    def mapping(self, value: Any, path: str) -> dict:
        """An object (absent or null reads as empty); anything else is an error."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, not {json_type(value)}")
            return {}
        return value

    def items(self, value: Any, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"must be a list, not {json_type(value)}")
            return []
        return value

    def objects(self, value: Any, path: str) -> list[tuple[str, dict]]:
        """A list of objects, as (path, object) pairs for the objects that are objects."""
        out = []
        for i, item in enumerate(self.items(value, path)):
            if isinstance(item, dict):
                out.append((f"{path}[{i}]", item))
            else:
                self.fail(f"{path}[{i}]", f"must be an object, not {json_type(item)}")
        return out

    def string(self, value: Any, path: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(path, f"must be a string, not {json_type(value)}")
            return None
        return value

    def boolean(self, value: Any, path: str) -> None:
        if value is not None and not isinstance(value, bool):
            self.fail(path, f"must be true or false, not {json_type(value)}")

    def integer(self, value: Any, path: str, bounds: tuple[int, int] = INT32) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"must be an integer, not {json_type(value)}")
        elif not bounds[0] <= value <= bounds[1]:
            self.fail(path, f"{value} is out of range: must be between {bounds[0]} and {bounds[1]}, inclusive")

    def strings(self, value: Any, path: str) -> None:
        """A map of strings to strings (labels, nodeSelector, annotations)."""
        for key, item in self.mapping(value, path).items():
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, not {json_type(key)}")
            elif not isinstance(item, str):
                self.fail(f"{path}[{key}]", f"must be a string, not {json_type(item)}")

    def string_list(self, value: Any, path: str) -> None:
        for i, item in enumerate(self.items(value, path)):
            self.string(item, f"{path}[{i}]")

    def quantities(self, value: Any, path: str) -> dict[str, int]:
        """A ResourceList: resource name -> quantity; returns what parsed, in compared units."""
        out = {}
        for name, q in self.mapping(value, path).items():
            if not isinstance(name, str):
                self.fail(path, f"resource names must be strings, not {json_type(name)}")
                continue
            units = quantity_units(name, q)
            if isinstance(units, str):
                self.fail(f"{path}[{name}]", units)
            else:
                out[name] = units
        return out


def quantity_units(resource: str, value: Any) -> int | str:
    """The compared integer of a quantity, or a sentence saying why it is not one."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return f"must be a quantity (e.g. 2, 500m, 16Gi), not {json_type(value)}"
    try:
        units = to_units(resource, value)
    except (InputError, ArithmeticError, ValueError, TypeError):
        return f"{value!r} is not a Kubernetes quantity (e.g. 2, 500m, 16Gi)"
    if abs(units) > INT64_MAX:
        return f"{value!r} is too large: the scheduler compares 64-bit integers"
    return units


def pod_spec(shape: Shape, spec: Any, path: str) -> None:
    """The pod-spec fields gpufleet's capacity check reads."""
    spec = shape.mapping(spec, path)
    for field in ("containers", "initContainers"):
        for cpath, container in shape.objects(spec.get(field), f"{path}.{field}"):
            shape.string(container.get("name"), f"{cpath}.name")
            shape.string(container.get("restartPolicy"), f"{cpath}.restartPolicy")
            resources = shape.mapping(container.get("resources"), f"{cpath}.resources")
            for part in ("limits", "requests"):
                shape.quantities(resources.get(part), f"{cpath}.resources.{part}")
            for ppath, port in shape.objects(container.get("ports"), f"{cpath}.ports"):
                shape.integer(port.get("containerPort"), f"{ppath}.containerPort")
                shape.integer(port.get("hostPort"), f"{ppath}.hostPort")
                shape.string(port.get("protocol"), f"{ppath}.protocol")
                shape.string(port.get("hostIP"), f"{ppath}.hostIP")
    shape.boolean(spec.get("hostNetwork"), f"{path}.hostNetwork")
    shape.quantities(spec.get("overhead"), f"{path}.overhead")
    shape.string(spec.get("schedulerName"), f"{path}.schedulerName")
    shape.string(spec.get("nodeName"), f"{path}.nodeName")
    shape.strings(spec.get("nodeSelector"), f"{path}.nodeSelector")
    for tpath, toleration in shape.objects(spec.get("tolerations"), f"{path}.tolerations"):
        for name in ("key", "operator", "value", "effect"):
            shape.string(toleration.get(name), f"{tpath}.{name}")
        shape.integer(toleration.get("tolerationSeconds"), f"{tpath}.tolerationSeconds", (-(2**63), INT64_MAX))
    affinity = shape.mapping(spec.get("affinity"), f"{path}.affinity")
    node_affinity = shape.mapping(affinity.get("nodeAffinity"), f"{path}.affinity.nodeAffinity")
    rpath = f"{path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = shape.mapping(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), rpath)
    for term_path, term in shape.objects(required.get("nodeSelectorTerms"), f"{rpath}.nodeSelectorTerms"):
        for part in ("matchExpressions", "matchFields"):
            for epath, expr in shape.objects(term.get(part), f"{term_path}.{part}"):
                shape.string(expr.get("key"), f"{epath}.key")
                shape.string(expr.get("operator"), f"{epath}.operator")
                shape.string_list(expr.get("values"), f"{epath}.values")
    ppath = f"{path}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
    for wpath, weighted in shape.objects(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"), ppath):
        shape.integer(weighted.get("weight"), f"{wpath}.weight")
        preference = shape.mapping(weighted.get("preference"), f"{wpath}.preference")
        for part in ("matchExpressions", "matchFields"):
            for epath, expr in shape.objects(preference.get(part), f"{wpath}.preference.{part}"):
                shape.string(expr.get("key"), f"{epath}.key")
                shape.string(expr.get("operator"), f"{epath}.operator")
                shape.string_list(expr.get("values"), f"{epath}.values")
    for kind in ("podAffinity", "podAntiAffinity"):
        block = shape.mapping(affinity.get(kind), f"{path}.affinity.{kind}")
        rpath = f"{path}.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
        for tpath, term in shape.objects(block.get("requiredDuringSchedulingIgnoredDuringExecution"), rpath):
            _pod_affinity_term(shape, term, tpath)
        ppath = f"{path}.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution"
        for wpath, weighted in shape.objects(block.get("preferredDuringSchedulingIgnoredDuringExecution"), ppath):
            shape.integer(weighted.get("weight"), f"{wpath}.weight")
            _pod_affinity_term(shape, shape.mapping(weighted.get("podAffinityTerm"), f"{wpath}.podAffinityTerm"),
                               f"{wpath}.podAffinityTerm")
    for cpath, constraint in shape.objects(spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints"):
        shape.integer(constraint.get("maxSkew"), f"{cpath}.maxSkew")
        shape.integer(constraint.get("minDomains"), f"{cpath}.minDomains")
        shape.string(constraint.get("topologyKey"), f"{cpath}.topologyKey")
        shape.string(constraint.get("whenUnsatisfiable"), f"{cpath}.whenUnsatisfiable")
        shape.string_list(constraint.get("matchLabelKeys"), f"{cpath}.matchLabelKeys")
        label_selector(shape, constraint.get("labelSelector"), f"{cpath}.labelSelector")


def _pod_affinity_term(shape: Shape, term: dict, path: str) -> None:
    shape.string(term.get("topologyKey"), f"{path}.topologyKey")
    shape.string_list(term.get("namespaces"), f"{path}.namespaces")
    label_selector(shape, term.get("labelSelector"), f"{path}.labelSelector")
    label_selector(shape, term.get("namespaceSelector"), f"{path}.namespaceSelector")


def label_selector(shape: Shape, value: Any, path: str) -> None:
    """A metav1.LabelSelector: matchLabels (strings) and matchExpressions (key, operator, values)."""
    selector = shape.mapping(value, path)
    shape.strings(selector.get("matchLabels"), f"{path}.matchLabels")
    for epath, expr in shape.objects(selector.get("matchExpressions"), f"{path}.matchExpressions"):
        shape.string(expr.get("key"), f"{epath}.key")
        shape.string(expr.get("operator"), f"{epath}.operator")
        shape.string_list(expr.get("values"), f"{epath}.values")
