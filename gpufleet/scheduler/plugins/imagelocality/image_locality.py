"""ImageLocality (pkg/scheduler/framework/plugins/imagelocality/image_locality.go, v1.34.1): the pod's images
a node already holds, weighted by how many nodes hold them.

Per container image (normalised: ":latest" added when no tag), a node holding it adds size x (nodes that
hold it / all nodes); the sum is clamped to [23 MiB, 1000 MiB x containers] and scaled to 0..100. Not
normalised. Nodes that publish no status.images score 0, as do all nodes for a pod whose images none hold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpufleet.capacity.model import Node
from gpufleet.scheduler.framework.interface import MAX_NODE_SCORE, Plugin, Reads

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    return name + ":latest" if name.rfind(":") <= name.rfind("/") else name


class ImageStates:
    """The images of all nodes: size and how many nodes hold each (the cache's imageStates)."""

    def __init__(self, nodes: Sequence[Node]):
        self.total = len(nodes)
        self.size: dict[str, int] = {}
        self.holders: dict[str, int] = {}
        self.sets: list[frozenset[str]] = []
        group: dict[frozenset[str], int] = {}
        of = []
        for node in nodes:
            names = set()
            for image_names, size in node.images:
                for name in image_names:
                    names.add(name)
                    self.size[name] = size
            for name in names:
                self.holders[name] = self.holders.get(name, 0) + 1
            held = frozenset(names)
            if held not in group:
                group[held] = len(self.sets)
                self.sets.append(held)
            of.append(group[held])
        self.group_of = np.array(of, dtype=np.int64)
        """Per node, the index of its set of images in `sets`."""

    def __bool__(self) -> bool:
        return bool(self.size)

    def scores(self, images: tuple[str, ...], containers: int) -> np.ndarray | None:
        """Per node, the pod's score; None when it is the same on every node."""
        per_set = np.array([self.score(held, images, containers) for held in self.sets], dtype=np.int64)
        if not len(per_set) or per_set.min() == per_set.max():
            return None
        return per_set[self.group_of]

    def score(self, held: frozenset[str], images: tuple[str, ...], containers: int) -> int:
        total = 0
        for image in images:
            name = normalized_image_name(image)
            if name in held:
                total += int(self.size[name] * (self.holders[name] / self.total))
        top = MAX_CONTAINER_THRESHOLD * containers
        total = min(max(total, MIN_THRESHOLD), top)
        return MAX_NODE_SCORE * (total - MIN_THRESHOLD) // (top - MIN_THRESHOLD)


class ImageLocality(Plugin):
    name = "ImageLocality"
    reads = Reads(pod=("containers.image", "initContainers.image"), per_node=("images",))

    def pre_score(self, shape) -> np.ndarray | None:
        """Per node, the pod's score (it does not change as pods land); None when it is the same on all."""
        images = shape.images
        if not images:
            return None
        spec = shape.spec
        containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or ()
                      if isinstance(c, dict)]
        if not containers:
            return None
        names = tuple(str(c.get("image") or "") for c in containers)
        return shape.classes.shared(("images", names), lambda: images.scores(names, len(containers)))

    def score(self, snap, state: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        return state[nodes]

    def score_one(self, snap, state: np.ndarray, i: int) -> int:
        return int(state[i])
