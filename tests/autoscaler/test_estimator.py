"""The binpacking estimator: largest pods first onto copies of a template, the nodes added so far walked round
robin, within the limiter's count; packing by counts (pods without host ports or anti-affinity) gives the
same answer as placing pod by pod."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.autoscaler.estimator import PodGroup, _by_pods, estimate
from gpufleet.autoscaler.simulator import FreshNode, pending_pod
from gpufleet.capacity.model import Node

TEMPLATE = Node("t", allocatable={"cpu": 16000, "memory": 64 << 30, "pods": 110, "nvidia.com/gpu": 4})


def group(name: str, count: int, gpus: int = 1, cpu: str = "2", memory: str = "8Gi") -> PodGroup:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory},
                                                       "limits": {"nvidia.com/gpu": gpus} if gpus else {}}}]}
    return PodGroup(name, spec, pending_pod(spec, "ml", {"app": name}), count)


def fresh() -> FreshNode:
    return FreshNode(TEMPLATE)


def test_pods_go_onto_as_few_nodes_as_their_largest_resource_needs():
    assert estimate([group("a", 10)], fresh, 100) == (3, {"a": 10})  # 4 GPUs a node
    assert estimate([group("a", 10, gpus=0, cpu="5")], fresh, 100) == (4, {"a": 10})  # 3 per node by cpu


def test_the_limit_caps_the_nodes_and_the_pods_placed():
    assert estimate([group("a", 10)], fresh, 2) == (2, {"a": 8})
    assert estimate([group("a", 1, gpus=8)], fresh, 5) == (0, {})  # fits no empty node: no node counted


def test_larger_pods_are_packed_first_and_smaller_ones_fill_the_gaps():
    # The 10-cpu pods go first, one a node; the 6-cpu ones fill the 6 cpu left on each, then share a third.
    # Smaller first would take 4 nodes (two 6-cpu pods a node leave no room for a 10-cpu one).
    groups = [group("small", 4, gpus=0, cpu="6", memory="1Gi"), group("big", 2, gpus=0, cpu="10", memory="1Gi")]
    assert estimate(groups, fresh, 10) == (3, {"big": 2, "small": 4})


def test_pods_on_the_nodes_added_so_far_spread_round_robin_as_the_autoscaler_walks_them():
    # cluster-autoscaler 1.34.5, recorded on this case (template 10 cpu, 8 GPUs; 2 pods of 6 cpu and 2 GPUs,
    # then 2 of 2 cpu and 3 GPUs, then 1 of 1 cpu and 4 GPUs): one scale-up of 3 nodes, every run. The two
    # middle pods go one to each node the big ones opened, so neither keeps 4 GPUs for the last pod. First fit
    # would put both on the first node and the last pod on the second: 2 nodes.
    template = Node("t", allocatable={"cpu": 10000, "memory": 64 << 30, "pods": 110, "nvidia.com/gpu": 8})
    groups = [group("a", 2, gpus=2, cpu="6", memory="1Gi"), group("b", 2, gpus=3, cpu="2", memory="1Gi"),
              group("c", 1, gpus=4, cpu="1", memory="1Gi")]
    assert estimate(groups, lambda: FreshNode(template), 5) == (3, {"a": 2, "b": 2, "c": 1})


@given(st.lists(st.tuples(st.integers(1, 12), st.integers(0, 5), st.sampled_from(["1", "3", "7", "17"]),
                          st.sampled_from(["1Gi", "20Gi", "70Gi"])), min_size=1, max_size=4),
       st.integers(0, 12))
def test_packing_by_counts_places_what_packing_pod_by_pod_places(shapes, limit):
    groups = [group(f"w{i}", n, g, c, m) for i, (n, g, c, m) in enumerate(shapes)]
    assert estimate(groups, fresh, limit) == _by_pods(sorted(groups, key=lambda x: -_share(x)), fresh, limit)


def _share(g: PodGroup) -> float:
    from gpufleet.autoscaler.estimator import _size

    return _size(g, fresh())
