"""The cache keys are built from what each plugin declares it reads, so a declaration must be complete: two
pods that differ in a field some plugin reads but does not declare would share a pod shape (and one
cached answer), two nodes that differ so would share a node class."""

from __future__ import annotations

import copy

import pytest

from gpufleet.capacity.kubectl import node_from_object
from gpufleet.scheduler.classes import NodeClasses
from gpufleet.scheduler.filters import default_framework
from gpufleet.scheduler.framework.interface import Plugin, Reads
from gpufleet.scheduler.plugins.default_plugins import PROFILE
from tests.scheduling.plugin_reads import NODES, SPEC, recorded_reads, undeclared_reads


@pytest.mark.parametrize("plugin", [p for p, _ in PROFILE], ids=[p.name for p, _ in PROFILE])
def test_each_plugin_reads_only_the_pod_and_node_fields_it_declares(plugin):
    assert undeclared_reads(plugin) == (set(), set())


@pytest.mark.parametrize("plugin", [p for p, _ in PROFILE], ids=[p.name for p, _ in PROFILE])
def test_each_plugin_reads_the_pod_fields_it_declares(plugin):
    """A declaration wider than the reads only costs sharing, but one that names a field the plugin never
    reads is a slip (a renamed path) that would hide a missing one."""
    seen = recorded_reads(plugin).pod
    unused = [d for d in plugin.reads.pod if not any(p == d or p.startswith(d + ".") for p in seen)]
    assert unused == []


@pytest.mark.parametrize("plugin", [p for p, _ in PROFILE], ids=[p.name for p, _ in PROFILE])
def test_each_plugin_reads_the_node_attributes_it_declares(plugin):
    """Node attributes count whether read from the node or through the snapshot's per-node arrays made of
    them (allocatable, labels by topology domain, images)."""
    seen = recorded_reads(plugin).node
    assert [a for a in (*plugin.reads.node, *plugin.reads.per_node) if a not in seen] == []


class _ReadsAllocatablePerNode(Plugin):
    name = "SneakyFit"
    reads = Reads(pod=("containers",))

    def filter_nodes(self, snap, shape, at):
        return {"too small": snap.alloc["cpu"][at] < 1}

    def fails_on(self, snap, shape, i):
        return bool(snap.alloc["cpu"][i] < 1)


def test_a_plugin_reading_a_per_node_array_it_does_not_declare_is_caught():
    assert undeclared_reads(_ReadsAllocatablePerNode()) == (set(), {"allocatable"})


class _ReadsTheSchedulerName(Plugin):
    name = "Sneaky"
    reads = Reads(pod=("tolerations",))

    def pre_score(self, shape):
        return len(shape.spec.get("schedulerName") or "") + len(shape.classes.nodes[0].kernel_version)


def test_a_plugin_reading_an_undeclared_field_is_caught():
    assert undeclared_reads(_ReadsTheSchedulerName()) == ({"schedulerName"}, {"kernel_version"})


def test_pods_differing_only_in_a_field_a_plugin_reads_do_not_share_a_signature():
    framework = default_framework()
    other = copy.deepcopy(SPEC)
    other["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] = 6
    assert framework.sign_pod(other) != framework.sign_pod(SPEC)
    other = copy.deepcopy(SPEC)
    other["containers"][0]["image"] = "registry/model:2"
    assert framework.sign_pod(other) != framework.sign_pod(SPEC)


def test_pods_differing_only_in_fields_no_plugin_reads_share_a_signature():
    framework = default_framework()
    other = copy.deepcopy(SPEC)
    other["containers"][0]["env"] = [{"name": "B", "value": "2"}]
    other["serviceAccountName"] = "other"
    assert framework.sign_pod(other) == framework.sign_pod(SPEC)


def test_nodes_differing_only_in_what_no_plugin_reads_share_a_class():
    twins = [node_from_object({"metadata": {"name": n, "labels": {"pool": "gpu", "rack": n}},
                               "status": {"allocatable": {"cpu": "8"}, "nodeInfo": {"kernelVersion": n}}})
             for n in ("x", "y")]
    classes = NodeClasses([*NODES, *twins], [{"nodeSelector": {"pool": "gpu"}}], default_framework())
    assert len(classes) == len(NODES) + 1 and classes.members[-1] == [3, 4]
