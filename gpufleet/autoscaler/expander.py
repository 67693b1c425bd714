"""The expanders that pick one scale-up among the options (expander/, cluster-autoscaler-1.34.5), chained as
the autoscaler chains them: `--expander a,b,...` narrows the options with each in turn, stops as soon as one is
left, and picks at random among what the chain leaves tied (factory/chain.go).

- `least-waste` (the default): the least blended waste of cpu and memory on the nodes added, (capacity x
  nodes - the pods' requests) / (capacity x nodes), summed over cpu and memory. GPUs are not counted.
- `most-pods`: the most pods placed.
- `least-nodes`: the fewest nodes added.
- `priority`: the options whose group matches the highest priority of the priority expander's ConfigMap
  (`--priority-config`, gpufleet.autoscaler.priorities); every option when none matches.
- `random`: any option; it ends a chain.
Not emulated: `price` (it needs the cloud's prices) and `grpc` (an external service).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from gpufleet.capacity.quantity import CPU, MEMORY

EXPANDERS = ("least-waste", "most-pods", "least-nodes", "priority", "random")
NOT_EMULATED = {"price": "it needs the cloud provider's prices", "grpc": "it asks an external service"}


@dataclass
class Option:
    group: str
    nodes: int
    placed: dict[str, int]
    """Pods placed per workload."""
    requests: tuple[int, int] = (0, 0)
    """The placed pods' cpu (milli) and memory (bytes) requests, summed."""
    template: Node | None = field(default=None, repr=False)

    @property
    def pods(self) -> int:
        return sum(self.placed.values())


def waste(option: Option) -> float:
    node = option.template
    assert node is not None
    total = 0.0
    for k, resource in enumerate((CPU, MEMORY)):
        per_node = node.capacity.get(resource, node.allocatable.get(resource, 0))
        available = per_node * option.nodes
        total += (available - option.requests[k]) / available if available else 0.0
    return total


def chain_errors(expander: str) -> list[str]:
    """What is wrong with an `--expander` value (a comma-separated chain), as the autoscaler refuses it."""
    names = expander.split(",")
    errors = []
    for i, name in enumerate(names):
        if name in NOT_EMULATED:
            errors.append(f"{name!r} is not emulated ({NOT_EMULATED[name]})")
        elif name not in EXPANDERS:
            errors.append(f"{name!r} is no expander")
        elif name in names[:i]:
            errors.append(f"{name!r} is given more than once")
        elif "random" in names[:i]:
            errors.append(f"{name!r} comes after random, which always leaves one option")
    return errors


def narrowed(options: list[Option], expander: str, priorities=None) -> list[Option]:
    """The options one deterministic expander leaves (more than one where they tie)."""
    if expander == "least-waste":
        scores = [waste(o) for o in options]
        least = min(scores)
        return [o for o, s in zip(options, scores, strict=True) if s == least]
    if expander == "most-pods":
        most = max(o.pods for o in options)
        return [o for o in options if o.pods == most]
    if expander == "least-nodes":
        counted = [o for o in options if o.nodes]
        fewest = min((o.nodes for o in counted), default=0)
        return [o for o in counted if o.nodes == fewest]
    if expander == "priority":
        return priorities.best(options) if priorities is not None else options
    if expander == "random":
        return options
    raise ValueError(f"unknown expander {expander!r}")


def most_pods_or_least_waste(options: list[Option], expander: str) -> list[Option]:
    """The options least-waste or most-pods alone leaves (for the note on what another expander would pick)."""
    return narrowed(options, expander)


def best_option(options: list[Option], expander: str, rng: random.Random, priorities=None) -> Option:
    """The option the chain picks; ties it leaves are broken at random with the run's generator."""
    for name in expander.split(","):
        options = narrowed(options, name, priorities) or options
        if len(options) == 1:
            return options[0]
    return options[rng.randrange(len(options))]
