"""What a fleet's DRA devices offer: per DeviceClass, the devices its selectors pass on each node, and what
those devices carry.

Two readers: the standard headroom shapes (one claim shape per class and GPU product or MIG profile, up to
the most devices of it one node reaches) and the explanation of a claim whose selectors pass no device (which
request and which selector, and the values the devices carry for what that selector reads).
A selector's result is worked out once per set of values it reads (`cel.reads`), as in the allocator; a
selector that fails on a device (a CEL error) does not pass it. CEL loads only when a selector is run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpufleet.capacity.dra import Device, DraObjects
from gpufleet.capacity.model import Node
from gpufleet.scheduler.plugins.dynamicresources.structured import node_pools

#: String attributes (in the device's driver domain) that name what a device is, most specific first:
#: a MIG device's profile, a GPU's product (the NVIDIA driver publishes both).
KIND_ATTRIBUTES = ("profile", "productName")


class Selectors:
    """CEL selectors on devices, each worked out once per set of values it reads."""

    def __init__(self):
        self._activations: dict[tuple, dict] = {}
        self._outcomes: dict[tuple, bool | str] = {}
        self._by_device: dict[tuple, bool | str] = {}

    def outcome(self, expression: str, device: Device) -> bool | str:
        """Whether the expression passes the device, or its CEL error's text."""
        found = self._by_device.get((expression, device.key))
        if found is None:
            found = self._by_device[(expression, device.key)] = self._outcome(expression, device)
        return found

    def _outcome(self, expression: str, device: Device) -> bool | str:
        from gpufleet.scheduler.plugins.dynamicresources.cel import (
            CelError,
            compile_selector,
            device_activation,
            evaluate,
            projection,
            reads,
        )

        try:
            activation = self._activations.get(device.key)
            if activation is None:
                activation = device_activation(device.driver, device.attributes, device.capacity)
                self._activations[device.key] = activation
        except CelError as e:
            return str(e)
        paths = reads(expression)
        key = (expression, device.key if paths is None else projection(activation, paths))
        found = self._outcomes.get(key)
        if found is None:
            try:
                found = evaluate(compile_selector(expression), activation)
            except CelError as e:
                found = str(e)
            self._outcomes[key] = found
        return found

    def passes(self, expressions: Sequence[str], device: Device) -> bool:
        return all(self.outcome(e, device) is True for e in expressions)


def class_expressions(objects: DraObjects, class_name: str) -> tuple[str, ...]:
    spec = objects.classes.get(class_name) or {}
    return tuple((s.get("cel") or {}).get("expression") or "" for s in spec.get("selectors") or ())


def node_devices(objects: DraObjects, nodes: Sequence[Node]) -> list[list[Device]]:
    """Per node, the devices it reaches (highest pool generation; not those that consume counters)."""
    by_node: dict[str, list[int]] = {}
    for i, spec in enumerate(objects.slices):  # slices by the node they name; those for many nodes under ""
        by_node.setdefault(spec.get("nodeName") or "", []).append(i)
    out = []
    for node in nodes:
        mine = sorted(by_node.get(node.name, []) + by_node.get("", []))
        out.append([d for pool in node_pools([objects.slices[i] for i in mine], node) for d in pool.devices])
    return out


def attribute(device: Device, name: str) -> str | None:
    """A string attribute of the device in its driver's domain (written bare or qualified), or None."""
    value = device.attributes.get(name) or device.attributes.get(f"{device.driver}/{name}")
    return value.get("string") if isinstance(value, dict) and isinstance(value.get("string"), str) else None


def kind_of(device: Device) -> tuple[str, str] | None:
    """(attribute, value) that says what the device is: its MIG profile, else its product; None without."""
    for name in KIND_ATTRIBUTES:
        value = attribute(device, name)
        if value:
            return name, value
    return None


@dataclass(frozen=True)
class Offered:
    """Devices of one kind (driver, attribute and value; no attribute: any) that a DeviceClass selects; the
    same devices selected by several classes are one Offered, with every class."""

    class_names: tuple[str, ...]
    driver: str
    attribute: str | None
    value: str | None
    most: int
    """The most of them one node reaches."""
    nodes: frozenset[str]
    """The nodes that reach any of them."""

    @property
    def class_name(self) -> str:
        """The class a claim for them names (the first by name)."""
        return self.class_names[0]

    def selector(self) -> str | None:
        """A request selector for devices of this kind (None when the class alone says it)."""
        if self.attribute is None:
            return None
        domain = f'device.attributes["{self.driver}"]'
        return (f'device.driver == "{self.driver}" && "{self.attribute}" in {domain} && '
                f'{domain}["{self.attribute}"] == "{self.value}"')


def offered(objects: DraObjects, nodes: Sequence[Node], selectors: Selectors | None = None) -> list[Offered]:
    """The devices of each DeviceClass by kind, in class name then kind order (classes that pass no device
    are left out; classes that select the very same devices of a kind share one entry)."""
    selectors = selectors or Selectors()
    devices = node_devices(objects, nodes)
    found: dict[tuple, list] = {}  # (kind, the devices) -> [classes, devices per node]
    for class_name in sorted(objects.classes):
        expressions = class_expressions(objects, class_name)
        picked: dict[tuple, list[tuple[str, tuple]]] = {}
        for node, reached in zip(nodes, devices, strict=True):
            for device in reached:
                if selectors.passes(expressions, device):
                    kind = kind_of(device)
                    picked.setdefault((device.driver, *(kind or (None, None))), []).append((node.name, device.key))
        for kind, members in sorted(picked.items(), key=lambda kv: tuple(map(str, kv[0]))):
            entry = found.setdefault((kind, frozenset(members)), [[], members])
            entry[0].append(class_name)
    out = []
    for ((driver, attr, value), _), (classes, members) in found.items():
        per_node: dict[str, int] = {}
        for node, _ in members:
            per_node[node] = per_node.get(node, 0) + 1
        out.append(Offered(tuple(classes), driver, attr, value, max(per_node.values()), frozenset(per_node)))
    return out
