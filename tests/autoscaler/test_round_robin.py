"""The simulator's walk over nodes: each pod goes to the next node with room after the one the last pod went
to, so equal pods spread one a node per round. `round_robin` answers it by counts; here it is held to the walk
itself, pod by pod."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.autoscaler.simulator import round_robin


def walk_pod_by_pod(rooms: list[int], pods: int) -> tuple[list[int], int | None]:
    take, last, left = [0] * len(rooms), None, pods
    while left and any(t < r for t, r in zip(take, rooms, strict=True)):
        for j, r in enumerate(rooms):
            if left and take[j] < r:
                take[j], left, last = take[j] + 1, left - 1, j
    return take, last


def test_equal_pods_spread_one_a_node_per_round():
    assert round_robin([3, 1, 2], 4) == ([2, 1, 1], 0)  # round one: all three; round two: the first
    assert round_robin([3, 1, 2], 9) == ([3, 1, 2], 0)  # more pods than room: every node filled
    assert round_robin([0, 0], 3) == ([0, 0], None)


@given(st.lists(st.integers(0, 7), max_size=10), st.integers(0, 60))
def test_counts_match_the_walk_pod_by_pod(rooms, pods):
    assert round_robin(rooms, pods) == walk_pod_by_pod(rooms, pods)
