"""PodTopologySpread: the pod's own topologySpreadConstraints
(pkg/scheduler/framework/plugins/podtopologyspread, v1.34.1: plugin.go; the Filter in filtering.py, the Score
in scoring.py, each loaded when some pod of a check has constraints).

A pod without constraints of its own gets the system default ones instead when a Service, ReplicaSet or
StatefulSet selects it: those are in system_default.py, kept per workload by the simulation (their counts
change with every pod placed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpufleet.scheduler.framework.interface import Plugin, Reads

if TYPE_CHECKING:
    from gpufleet.scheduler.plugins.podtopologyspread.filtering import SpreadState


class PodTopologySpread(Plugin):
    """Its answers count other pods, so it runs per workload, never from a cache shared between pod shapes
    (upstream's SignPod is not implemented for it either)."""

    name = "PodTopologySpread"
    reads = Reads(pod=("topologySpreadConstraints",), per_node=("labels",))

    def pod_state(self, spec: dict, namespace: str, labels: dict[str, str],
                  affinity_ok: np.ndarray) -> SpreadState:
        from gpufleet.scheduler.plugins.podtopologyspread.filtering import SpreadState, constraints

        return SpreadState(constraints(spec, labels, "DoNotSchedule"),
                           constraints(spec, labels, "ScheduleAnyway"), namespace, affinity_ok)

    def pod_filter(self, state: SpreadState, snap) -> list[tuple[str, np.ndarray]]:
        if not state.hard:
            return []
        from gpufleet.scheduler.plugins.podtopologyspread.filtering import filter_failures

        return filter_failures(state.hard, snap.pods, snap.domains, state.affinity_ok, state.namespace)

    def pod_score(self, state: SpreadState, snap, window: np.ndarray) -> np.ndarray | None:
        if not state.soft:
            return None
        from gpufleet.scheduler.plugins.podtopologyspread.scoring import score

        return score(state.soft, snap.pods, snap.domains, state.affinity_ok, state.namespace, window)
