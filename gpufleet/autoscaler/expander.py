"""The expanders that pick one scale-up among the options (expander/, cluster-autoscaler-1.34.5), each followed
by a random pick among the options it leaves tied, as the autoscaler chains them.

- `least-waste` (the default): the least blended waste of cpu and memory on the nodes added, (capacity x
  nodes - the pods' requests) / (capacity x nodes), summed over cpu and memory. GPUs are not counted.
- `most-pods`: the most pods placed.
- `random`: any option.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from gpufleet.capacity.quantity import CPU, MEMORY

EXPANDERS = ("least-waste", "most-pods", "random")


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


def most_pods_or_least_waste(options: list[Option], expander: str) -> list[Option]:
    """The options a deterministic expander leaves (more than one where they tie)."""
    if expander == "least-waste":
        scores = [waste(o) for o in options]
        least = min(scores)
        return [o for o, s in zip(options, scores, strict=True) if s == least]
    if expander == "most-pods":
        most = max(o.pods for o in options)
        return [o for o in options if o.pods == most]
    raise ValueError(f"unknown expander {expander!r}")


def best_option(options: list[Option], expander: str, rng: random.Random) -> Option:
    """The option the expander picks (ties broken at random with the run's generator)."""
    if expander != "random":
        options = most_pods_or_least_waste(options, expander)
    return options[rng.randrange(len(options))] if len(options) > 1 else options[0]
