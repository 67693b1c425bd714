from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, gpu_container, job, node, pod, pod_spec


def test_identical_replicas_fit_exactly_up_to_the_floor_count():
    nodes = [node("a", 3), node("b", 3), node("c", 1)]
    assert check_workloads(nodes, [], [deployment("d", 2, pod_spec(gpu_container(2)))]).fits
    result = check_workloads(nodes, [], [deployment("d", 3, pod_spec(gpu_container(2)))])
    (u,) = result.unschedulable
    assert (u.workload, u.reason, u.pending) == ("Deployment/default/d", "pending", 1)
    assert u.message == "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."


def test_a_pod_never_spans_nodes():
    result = check_workloads([node("a", 1), node("b", 1)], [], [pod("p", pod_spec(gpu_container(2)))])
    assert result.unschedulable[0].message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def test_job_wants_parallelism_pods_at_once():
    assert not check_workloads([node("a", 2)], [], [job("j", 3)]).fits
    assert check_workloads([node("a", 2)], [], [job("j", 3, completions=2)]).fits


def test_statefulset_replicas_arriving_as_floats_are_counted():
    result = check_workloads([node("a", 2)], [], [deployment("s", 3.0, kind="StatefulSet")])
    assert result.unschedulable[0].pending == 1


def test_earlier_workloads_consume_capacity_in_input_order():
    result = check_workloads([node("a", 4)], [], [deployment("first", 3), deployment("second", 2)])
    assert [u.workload for u in result.unschedulable] == ["Deployment/default/second"]


def test_the_scheduler_spreads_small_pods_so_a_later_big_one_pends():
    # 2 pods of 1 GPU then 1 pod of 2 GPUs on two 2-GPU nodes: it would fit if the small pods were packed, but
    # LeastAllocated puts the second small pod on the emptier node. The real kube-scheduler v1.34.1 leaves
    # `big` Pending in 3 of 3 runs with this message.
    result = check_workloads([node("a", 2), node("b", 2)], [],
                             [deployment("small", 2), pod("big", pod_spec(gpu_container(2)))])
    assert result.warnings == []
    (u,) = result.unschedulable
    assert (u.workload, u.message) == ("Pod/default/big", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    assert sorted(n for w, n, _ in result.placements if w == "Deployment/default/small") == ["a", "b"]


def test_set_infeasible_under_every_placement_is_an_error():
    # 3 single-GPU pods on two 2-GPU nodes always leave at most 1 GPU per node for a 2-GPU pod.
    result = check_workloads([node("a", 2), node("b", 2)], [],
                             [deployment("small", 3), pod("big", pod_spec(gpu_container(2)))])
    assert [u.workload for u in result.unschedulable] == ["Pod/default/big"]


def test_sidecar_init_container_adds_to_the_pod_request():
    spec = pod_spec(gpu_container(1), initContainers=[{**gpu_container(1), "restartPolicy": "Always"}])
    assert not check_workloads([node("a", 1)], [], [pod("p", spec)]).fits
    assert check_workloads([node("a", 2)], [], [pod("p", spec)]).fits


def test_regular_init_container_counts_by_the_max_rule():
    spec = pod_spec(gpu_container(1), initContainers=[gpu_container(2)])
    assert not check_workloads([node("a", 1)], [], [pod("p", spec)]).fits
    assert check_workloads([node("a", 2)], [], [pod("p", spec)]).fits


def test_pod_overhead_is_added():
    spec = pod_spec(container(limits={"nvidia.com/gpu": 1, "cpu": "15"}), overhead={"cpu": "2"})
    assert check_workloads([node("a", 1)], [], [pod("p", spec)]).unschedulable[0].message.endswith("Insufficient cpu.")


def test_other_kinds_are_ignored_and_namespace_defaults():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    result = check_workloads([node("a", 1)], [], [cm, pod("p")])
    assert result.checked == ["Pod/default/p"]


def test_other_schedulers_are_not_checked_but_warned():
    result = check_workloads([node("a", 0)], [], [pod("p", pod_spec(gpu_container(1), schedulerName="hami-scheduler"))])
    assert result.fits and "hami-scheduler" in result.warnings[0].message


def test_expected_gpu_memory_over_mps_slice_is_reported_with_both_numbers():
    n = node("t4", 4, labels={"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4",
                              "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.memory": "15360"})
    d = deployment("infer", 1, annotations={"gpufleet.io/expected-gpu-memory-mib": "5000"})
    result = check_workloads([n], [], [d])
    assert result.memory[0].expected_mib == 5000 and result.memory[0].available_mib == 3840
    assert "5000 MiB" in result.warnings[0].message and "3840 MiB" in result.warnings[0].message
    d_ok = deployment("infer", 1, annotations={"gpufleet.io/expected-gpu-memory-mib": "3840"})
    assert check_workloads([n], [], [d_ok]).memory == []
