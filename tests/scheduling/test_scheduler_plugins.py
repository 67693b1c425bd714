"""The pieces of kube-scheduler's node choice, each against upstream's own arithmetic and rules."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.capacity.model import Node
from gpufleet.scheduler.node_tree import tree_order, zone_key
from gpufleet.scheduler.plugins.helper import default_normalize_score
from gpufleet.scheduler.plugins.imagelocality import ImageStates, normalized_image_name
from gpufleet.scheduler.plugins.noderesources import (
    balanced_allocation,
    balanced_allocation_one,
    least_allocated,
    least_allocated_one,
)
from gpufleet.scheduler.schedule_one import num_feasible_nodes_to_find

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"


def test_percentage_of_nodes_to_score_is_adaptive_with_floors():
    # schedule_one.go numFeasibleNodesToFind with percentageOfNodesToScore unset
    assert num_feasible_nodes_to_find(50) == 50          # fewer than 100 nodes: all of them
    assert num_feasible_nodes_to_find(150) == 100        # 150 x 49% = 73, raised to 100
    assert num_feasible_nodes_to_find(1000) == 420       # 50 - 1000/125 = 42%
    assert num_feasible_nodes_to_find(5000) == 500       # 50 - 40 = 10%
    assert num_feasible_nodes_to_find(10000) == 500      # 50 - 80 < 5: 5%


def test_nodes_are_walked_zone_by_zone_each_zone_sorted_by_name():
    nodes = [Node(name=n, labels={ZONE: z, REGION: "r"}) for n, z in
             [("c", "z2"), ("a", "z1"), ("e", "z1"), ("b", "z2"), ("d", "z3"), ("f", "z1")]]
    order = [nodes[i].name for i in tree_order(nodes)]
    # zones in the order their first node (by name) arrives: z1 (a), z2 (b), z3 (d)
    assert order == ["a", "b", "d", "e", "c", "f"]
    assert zone_key(Node(name="x")) == "" and zone_key(nodes[0]) == "r:\x00:z2"


def test_default_normalize_score_scales_by_the_highest_and_reverses():
    assert default_normalize_score(np.array([0, 1, 2]), reverse=True).tolist() == [100, 50, 0]
    assert default_normalize_score(np.array([1, 3]), reverse=False).tolist() == [33, 100]
    assert default_normalize_score(np.array([0, 0]), reverse=True).tolist() == [100, 100]
    assert default_normalize_score(np.array([0, 0]), reverse=False).tolist() == [0, 0]


def test_least_allocated_and_balanced_allocation_follow_the_go_arithmetic():
    # 4 cores / 8 GiB node with 1 core / 2 GiB requested: each resource (4-1)*100/4 = 75 -> 75
    gib = 2**30
    score = least_allocated(np.array([4000]), np.array([1000]), np.array([8 * gib]), np.array([2 * gib]))
    assert score.tolist() == [75]
    # over-requested resource scores 0; an unknown (0) allocatable is left out of the mean
    assert least_allocated(np.array([4000]), np.array([5000]), np.array([8 * gib]), np.array([0])).tolist() == [50]
    assert least_allocated(np.array([0]), np.array([5000]), np.array([8 * gib]), np.array([0])).tolist() == [100]
    # fractions 0.5 and 0.25: std = |0.5 - 0.25| / 2 = 0.125 -> (1 - 0.125) * 100 = 87
    score = balanced_allocation(np.array([4000]), np.array([2000]), np.array([8 * gib]), np.array([2 * gib]))
    assert score.tolist() == [87]


@given(st.integers(0, 10**6), st.integers(0, 2 * 10**6), st.integers(0, 10**12), st.integers(0, 2 * 10**12))
def test_the_one_node_scores_equal_the_array_scores(alloc_cpu, cpu, alloc_mem, mem):
    arrays = [np.array([v]) for v in (alloc_cpu, cpu, alloc_mem, mem)]
    assert least_allocated_one(alloc_cpu, cpu, alloc_mem, mem) == least_allocated(*arrays)[0]
    assert balanced_allocation_one(alloc_cpu, cpu, alloc_mem, mem) == balanced_allocation(*arrays)[0]


def test_image_locality_counts_images_by_how_many_nodes_hold_them():
    big = 900 * 2**20
    nodes = [Node(name="a", images=((("nvcr.io/triton:25.01",), big),)), Node(name="b"),
             Node(name="c", images=((("nvcr.io/triton:25.01", "nvcr.io/triton@sha256:x"), big),))]
    states = ImageStates(nodes)
    # 900 MiB x 2/3 of the nodes = 600 MiB, between 23 MiB and 1000 MiB: (600 - 23) x 100 / (1000 - 23) = 59
    assert states.scores(("nvcr.io/triton:25.01",), 1).tolist() == [59, 0, 59]
    assert states.scores(("busybox",), 1) is None  # nobody holds it: the same 0 everywhere
    assert normalized_image_name("busybox") == "busybox:latest"
    assert normalized_image_name("a:5000/b") == "a:5000/b:latest"
