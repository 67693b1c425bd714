"""The default profile: the plugins kube-scheduler v1.34 enables, in its order, with its score weights
(pkg/scheduler/apis/config/v1/default_plugins.go). The one place where a plugin joins the profile.

Not listed: plugins whose answers a check cannot change (SchedulingGates, PrioritySort, NodeName, the volume
plugins, DefaultBinder). DynamicResources stands where v1.34's applyDynamicResources puts it, just before
DefaultPreemption: its Filter runs last, and its PostFilter (deallocating an idle claim) comes before
preemption's.
"""

from __future__ import annotations

from gpufleet.scheduler.framework.interface import Plugin
from gpufleet.scheduler.plugins.defaultpreemption import DefaultPreemption
from gpufleet.scheduler.plugins.dynamicresources import DynamicResources
from gpufleet.scheduler.plugins.imagelocality import ImageLocality
from gpufleet.scheduler.plugins.interpodaffinity import InterPodAffinity
from gpufleet.scheduler.plugins.nodeaffinity import NodeAffinity
from gpufleet.scheduler.plugins.nodeports import NodePorts
from gpufleet.scheduler.plugins.noderesources import BalancedAllocation, Fit
from gpufleet.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from gpufleet.scheduler.plugins.podtopologyspread import PodTopologySpread
from gpufleet.scheduler.plugins.tainttoleration import TaintToleration

#: (plugin, score weight or None for a plugin that does not score), in the order the filters run.
PROFILE: list[tuple[Plugin, int | None]] = [
    (NodeUnschedulable(), None),
    (TaintToleration(), 3),
    (NodeAffinity(), 2),
    (NodePorts(), None),
    (Fit(), 1),
    (PodTopologySpread(), 2),
    (InterPodAffinity(), 2),
    (DynamicResources(), None),
    (DefaultPreemption(), None),
    (BalancedAllocation(), 1),
    (ImageLocality(), 1),
]
