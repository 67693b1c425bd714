"""The default profile: the plugins kube-scheduler v1.34 enables, in its order, with its score weights
(pkg/scheduler/apis/config/v1/default_plugins.go). The one place where a plugin joins the profile.

Not listed: plugins whose answers a check cannot change (SchedulingGates, PrioritySort, NodeName, the volume
plugins, DefaultPreemption, DefaultBinder). DynamicResources runs last among the filters, for pods with
claims, through the check's own allocator (gpufleet.scheduling.dra), handed to the cycle by the simulation.
"""

from __future__ import annotations

from gpufleet.scheduling.framework.interface import Plugin
from gpufleet.scheduling.plugins.imagelocality import ImageLocality
from gpufleet.scheduling.plugins.interpodaffinity import InterPodAffinity
from gpufleet.scheduling.plugins.nodeaffinity import NodeAffinity
from gpufleet.scheduling.plugins.nodeports import NodePorts
from gpufleet.scheduling.plugins.noderesources import BalancedAllocation, Fit
from gpufleet.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from gpufleet.scheduling.plugins.podtopologyspread import PodTopologySpread
from gpufleet.scheduling.plugins.tainttoleration import TaintToleration

#: (plugin, score weight or None for a plugin that does not score), in the order the filters run.
PROFILE: list[tuple[Plugin, int | None]] = [
    (NodeUnschedulable(), None),
    (TaintToleration(), 3),
    (NodeAffinity(), 2),
    (NodePorts(), None),
    (Fit(), 1),
    (PodTopologySpread(), 2),
    (InterPodAffinity(), 2),
    (BalancedAllocation(), 1),
    (ImageLocality(), 1),
]
