"""The fleet report's model: what is drawn on which GPU, slice or share, and how a big fleet collapses."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.capacity.model import Node
from gpufleet.config.loading import load_stack
from gpufleet.report import report_of, stack_report
from gpufleet.report.devices import node_gpus
from tests.report.fleet import ROOT, write_big_fleet


def _stack(name: str, project_dir: Path = ROOT):
    return stack_report(name, load_stack(name, project_dir).config)


def test_mig_stack_has_seven_1g5gb_slices_side_by_side_and_both_jobs_on_them():
    report = _stack("mig")
    [pool] = report.pools
    [row] = pool.rows
    [gpu] = row.gpus
    assert [uv.unit.mig_profile for uv in gpu.units] == ["1g.5gb"] * 7
    assert [round(uv.unit.x * 8) for uv in gpu.units] == [0, 1, 2, 3, 4, 5, 6]  # memory slices 0-6 of 8
    assert all(round(uv.unit.height * 7) == 1 for uv in gpu.units)  # one of seven compute slices each
    keys = [report.workloads[uv.workload].key for uv in gpu.units if uv.workload is not None]
    assert keys == ["Job/default/vectoradd-1", "Job/default/vectoradd-2"]
    assert (pool.mig_slices, pool.mig_slices_used) == (7, 2)


def test_dev_stack_splits_the_t4_four_ways_by_mps_with_a_quarter_of_its_memory_each():
    report = _stack("dev")
    [gpu] = report.pools[0].rows[0].gpus
    assert gpu.product == "Tesla-T4"
    assert [(uv.unit.kind, uv.unit.memory_mib) for uv in gpu.units] == [("mps", 3840)] * 4
    used = [report.workloads[uv.workload].key.split("/")[-1] for uv in gpu.units if uv.workload is not None]
    assert used == ["my-infer2", "my-infer3", "tf-notebook"]
    notebook = next(w for w in report.workloads if w.key.endswith("tf-notebook"))
    assert (notebook.expected_mib, notebook.budget_mib) == (3500, 3840)


def test_greedy_workload_is_listed_as_pending_with_the_scheduler_message():
    report = _stack("greed")
    [pending] = report.not_running
    assert pending.key == "Deployment/greed/greedy-trainer"
    assert pending.verdict == "pending" and pending.placed == 0
    assert pending.message == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_identical_nodes_collapse_into_one_row_and_nodes_with_other_pods_stay_apart(tmp_path):
    report = _stack(write_big_fleet(tmp_path), tmp_path)
    assert report.nodes == 1000
    rows = {p.name: [(r.count, sorted(r.pods.values())) for r in p.rows] for p in report.pools}
    assert rows["h100"] == [(250, [1]), (350, [])]          # 250 pods of 8 GPUs take 250 whole nodes
    # Planned nodes have no cpu or memory: every node scores the same and the scheduler picks at random, so
    # the one-slice pods scatter; rows group the nodes that ended up alike, busiest first.
    mig = rows["a100-mig"]
    assert sum(n * sum(p) for n, p in mig) == 700 and sum(n for n, _ in mig) == 300
    assert all(sum(p) <= 7 for _, p in mig) and mig == sorted(mig, key=lambda r: -sum(r[1]))
    t4 = next(p for p in report.pools if p.name == "t4")
    assert (t4.shares_used, t4.shares) == (130, 400)        # 130 pods on 4 time-sliced shares per T4
    assert sum(r.count for r in t4.rows) == 100 and 33 <= t4.gpus_used <= 100


def _node(name: str, labels: dict, allocatable: dict) -> Node:
    base = {"kubernetes.io/hostname": name}
    return Node(name=name, labels={**base, **labels}, taints=(), allocatable={"pods": 110, **allocatable},
                capacity={"pods": 110, **allocatable}, unknown=frozenset({"cpu", "memory", "ephemeral-storage"}))


def test_mixed_mig_node_places_instances_without_overlap_and_keeps_whole_gpus():
    node = _node("dgx", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "3",
                         "nvidia.com/mig.strategy": "mixed"},
                 {"nvidia.com/gpu": 1, "nvidia.com/mig-3g.20gb": 2, "nvidia.com/mig-2g.10gb": 2,
                  "nvidia.com/mig-1g.5gb": 3})
    gpus = node_gpus(node)
    assert len(gpus) == 3
    assert [u.kind for u in gpus[0].units] == ["whole"]
    for gpu in gpus[1:]:
        spans = sorted((round(u.x * 8), round((u.x + u.width) * 8)) for u in gpu.units)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False)), spans
        assert sum(round(u.height * 7) for u in gpu.units) <= 7
    profiles = sorted(u.mig_profile for g in gpus[1:] for u in g.units)
    assert profiles == ["1g.5gb"] * 3 + ["2g.10gb"] * 2 + ["3g.20gb"] * 2


def _deployment(name: str, replicas: int, gpus: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}}}


@settings(max_examples=40, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 2, 4])), min_size=1, max_size=6),
       workloads=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 3)), min_size=1, max_size=4))
def test_units_drawn_per_node_match_the_pods_the_check_placed_there(nodes, workloads):
    fleet = [_node(f"n{i}", {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.replicas": str(r),
                             "nvidia.com/gpu.sharing-strategy": "mps" if r > 1 else "none"},
                   {"nvidia.com/gpu": g * r}) for i, (g, r) in enumerate(nodes)]
    manifests = [_deployment(f"w{i}", n, k) for i, (n, k) in enumerate(workloads)]
    report = report_of("t", fleet, [], manifests)
    drawn: dict[str, int] = {}
    for row in (r for p in report.pools for r in p.rows):
        for uv in (uv for g in row.gpus for uv in g.units if uv.workload is not None):
            key = report.workloads[uv.workload].key
            drawn[key] = drawn.get(key, 0) + row.count  # a row stands for `count` identical nodes
    for w in report.workloads:
        per_pod = dict(w.gpu_request).get("nvidia.com/gpu", 0)
        assert drawn.get(w.key, 0) == w.placed * per_pod
    assert report.nodes == len(fleet)
    assert sum(len(g.units) for p in report.pools for r in p.rows for g in r.gpus for _ in range(r.count)) == \
        sum(g * r for g, r in nodes)


def test_workload_for_another_scheduler_is_marked_not_checked_and_takes_no_gpu():
    node = _node("n0", {"nvidia.com/gpu.product": "Tesla-T4"}, {"nvidia.com/gpu": 2})
    other = _deployment("volcano-job", 1, 1)
    other["spec"]["template"]["spec"]["schedulerName"] = "volcano"
    report = report_of("t", [node], [], [other, _deployment("mine", 1, 1)])
    assert [(w.key, w.verdict, w.placed) for w in report.workloads] == [
        ("Deployment/default/volcano-job", "not checked", 0), ("Deployment/default/mine", "placed", 1)]
    [gpu0, gpu1] = report.pools[0].rows[0].gpus
    assert (gpu0.units[0].workload, gpu1.units[0].workload) == (1, None)


def test_pending_workload_is_counted_in_the_pools_its_selector_allows():
    fleet = [_node(f"{pool}-{i}", {"agentpool": pool, "nvidia.com/gpu.product": "Tesla-T4"}, {"nvidia.com/gpu": 1})
             for pool in ("a", "b") for i in range(2)]
    greedy = _deployment("greedy", 3, 1)
    greedy["spec"]["template"]["spec"]["nodeSelector"] = {"agentpool": "b"}
    report = report_of("t", fleet, [], [greedy])
    [w] = report.not_running
    assert (w.verdict, w.placed, w.pools) == ("partly", 2, ("b",))
    assert [x.key for x in report.pending_in("b")] == ["Deployment/default/greedy"] and report.pending_in("a") == []
    assert w.message == ("0/4 nodes are available: 2 Insufficient nvidia.com/gpu, "
                         "2 node(s) didn't match Pod's node affinity/selector.")
