"""InterPodAffinity: required and preferred pod (anti-)affinity
(pkg/scheduler/framework/plugins/interpodaffinity, v1.34.1: plugin.go; the Filter in filtering.py, the Score in
scoring.py, each loaded when some pod of a check has pod (anti-)affinity or a running pod's terms count).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpufleet.scheduler.framework.interface import Plugin, Reads

if TYPE_CHECKING:
    from gpufleet.scheduler.plugins.interpodaffinity.filtering import AffinityState


class InterPodAffinity(Plugin):
    """Its answers count other pods, so it runs per workload, never from a cache shared between pod shapes."""

    name = "InterPodAffinity"
    reads = Reads(pod=("affinity.podAffinity", "affinity.podAntiAffinity"), per_node=("labels",))

    def pod_state(self, spec: dict, namespace: str, labels: dict[str, str],
                  affinity_ok: np.ndarray) -> AffinityState:
        from gpufleet.scheduler.plugins.interpodaffinity.filtering import AffinityState, terms_of

        return AffinityState(terms_of(spec, namespace), namespace, labels)

    def pod_filter(self, state: AffinityState, snap) -> list[tuple[str, np.ndarray]]:
        from gpufleet.scheduler.plugins.interpodaffinity.filtering import filter_failures

        return filter_failures(state.terms, state.namespace, state.labels, snap.pods, snap.domains,
                               snap.placed.required_anti)

    def pod_score(self, state: AffinityState, snap, window: np.ndarray) -> np.ndarray | None:
        from gpufleet.scheduler.plugins.interpodaffinity.scoring import score

        return score(state.terms, state.namespace, state.labels, snap.pods, snap.domains,
                     snap.placed.weighted, window)
