import pytest

from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, gpu_container, node, pod, pod_spec


def pending_message(nodes, manifest, running=(), **kw):
    result = check_workloads(nodes, list(running), [manifest], **kw)
    assert not result.fits, result.to_json()
    (u,) = result.unschedulable
    assert u.reason == "pending"
    return u.message


def test_pod_requesting_more_gpus_than_any_node_is_pending_with_scheduler_message():
    msg = pending_message([node("n", 8)], pod("big", pod_spec(gpu_container(101))))
    assert msg == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_node_without_the_resource_reports_insufficient():
    assert pending_message([node("cpu-only")], pod("p")) == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_request_equal_to_free_capacity_fits():
    assert check_workloads([node("n", 4)], [], [pod("p", pod_spec(gpu_container(4)))]).fits


def test_bound_running_pods_reduce_free_capacity():
    running = [pod("r", pod_spec(gpu_container(3)), node_name="n", phase="Running")]
    assert pending_message([node("n", 4)], pod("p", pod_spec(gpu_container(2))), running).endswith(
        "1 Insufficient nvidia.com/gpu.")


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_do_not_use_capacity(phase):
    running = [pod("done", pod_spec(gpu_container(4)), node_name="n", phase=phase)]
    assert check_workloads([node("n", 4)], running, [pod("p", pod_spec(gpu_container(4)))]).fits


def test_bound_pending_pods_use_capacity():
    running = [pod("bound", pod_spec(gpu_container(4)), node_name="n", phase="Pending")]
    assert not check_workloads([node("n", 4)], running, [pod("p")]).fits


def test_insufficient_cpu_is_reported_with_gpus_fitting():
    spec = pod_spec(container(limits={"nvidia.com/gpu": 1, "cpu": "32"}))
    assert pending_message([node("n", 4)], pod("p", spec)) == "0/1 nodes are available: 1 Insufficient cpu."


def test_every_failing_dimension_of_a_node_is_counted():
    spec = pod_spec(container(limits={"nvidia.com/gpu": 9, "memory": "128Gi"}))
    assert pending_message([node("n", 4)], pod("p", spec)) == (
        "0/1 nodes are available: 1 Insufficient memory, 1 Insufficient nvidia.com/gpu.")


def test_full_node_reports_too_many_pods():
    assert pending_message([node("n", 4, pods="0")], pod("p")) == "0/1 nodes are available: 1 Too many pods."


def test_untolerated_taint_is_reported_with_key_and_value():
    n = node("n", 4, taints=[("nvidia.com/gpu", "present", "NoSchedule")])
    assert pending_message([n], pod("p")) == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}.")


def test_tainted_node_without_gpus_reports_only_the_taint():
    n = node("n", 0, taints=[("dedicated", "infra", "NoExecute")])
    assert pending_message([n], pod("p")) == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}.")


def test_prefer_no_schedule_taint_does_not_filter():
    assert check_workloads([node("n", 1, taints=[("soft", "x", "PreferNoSchedule")])], [], [pod("p")]).fits


@pytest.mark.parametrize("toleration", [
    pytest.param({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, id="exists"),
    pytest.param({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}, id="equal any effect"),
    pytest.param({"operator": "Exists"}, id="empty key tolerates all"),
])
def test_tolerated_taint_lets_the_pod_schedule(toleration):
    n = node("n", 1, taints=[("nvidia.com/gpu", "present", "NoSchedule")])
    assert check_workloads([n], [], [pod("p", pod_spec(gpu_container(1), tolerations=[toleration]))]).fits


def test_toleration_with_other_value_does_not_match():
    n = node("n", 1, taints=[("nvidia.com/gpu", "present", "NoSchedule")])
    spec = pod_spec(gpu_container(1), tolerations=[{"key": "nvidia.com/gpu", "value": "absent"}])
    assert not check_workloads([n], [], [pod("p", spec)]).fits


def test_extended_resource_toleration_only_with_the_flag():
    n = node("n", 1, taints=[("nvidia.com/gpu", "", "NoSchedule")])
    assert not check_workloads([n], [], [pod("p")]).fits
    assert check_workloads([n], [], [pod("p")], extended_resource_toleration=True).fits


def test_extended_resource_toleration_does_not_cover_no_execute():
    n = node("n", 1, taints=[("nvidia.com/gpu", "", "NoExecute")])
    assert not check_workloads([n], [], [pod("p")], extended_resource_toleration=True).fits


def test_cordoned_node_is_reported_unschedulable_before_its_taints():
    n = node("n", 4, unschedulable=True, taints=[("a", "b", "NoSchedule")])
    assert pending_message([n], pod("p")) == "0/1 nodes are available: 1 node(s) were unschedulable."


def test_cordoned_node_accepts_pod_tolerating_the_unschedulable_taint():
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    tolerating = pod("p", pod_spec(gpu_container(1), tolerations=tol))
    assert check_workloads([node("n", 1, unschedulable=True)], [], [tolerating]).fits


def test_node_selector_mismatch_is_reported_as_affinity():
    spec = pod_spec(gpu_container(1), nodeSelector={"pool": "train"})
    assert pending_message([node("n", 4, labels={"pool": "infer"})], pod("p", spec)) == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.")


def _affinity(*exprs):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}}}


@pytest.mark.parametrize("expr, fits", [
    pytest.param({"key": "pool", "operator": "In", "values": ["train"]}, True, id="In match"),
    pytest.param({"key": "pool", "operator": "In", "values": ["infer"]}, False, id="In miss"),
    pytest.param({"key": "pool", "operator": "NotIn", "values": ["train"]}, False, id="NotIn miss"),
    pytest.param({"key": "zone", "operator": "NotIn", "values": ["a"]}, True, id="NotIn absent label"),
    pytest.param({"key": "pool", "operator": "Exists"}, True, id="Exists"),
    pytest.param({"key": "zone", "operator": "Exists"}, False, id="Exists absent"),
    pytest.param({"key": "zone", "operator": "DoesNotExist"}, True, id="DoesNotExist"),
    pytest.param({"key": "pool", "operator": "DoesNotExist"}, False, id="DoesNotExist present"),
    pytest.param({"key": "gpus", "operator": "Gt", "values": ["4"]}, True, id="Gt"),
    pytest.param({"key": "gpus", "operator": "Gt", "values": ["8"]}, False, id="Gt equal"),
    pytest.param({"key": "gpus", "operator": "Lt", "values": ["9"]}, True, id="Lt"),
    pytest.param({"key": "gpus", "operator": "Lt", "values": ["8"]}, False, id="Lt equal"),
])
def test_required_node_affinity_operators(expr, fits):
    n = node("n", 4, labels={"pool": "train", "gpus": "8"})
    spec = pod_spec(gpu_container(1), affinity=_affinity(expr))
    assert check_workloads([n], [], [pod("p", spec)]).fits is fits


def test_affinity_terms_are_ored():
    n = node("n", 4, labels={"pool": "train"})
    aff = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["x"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["train"]}]}]}}}
    assert check_workloads([n], [], [pod("p", pod_spec(gpu_container(1), affinity=aff))]).fits


def test_message_histogram_is_sorted_as_strings_over_all_nodes():
    spec = pod_spec(gpu_container(2), nodeSelector={"kubernetes.io/hostname": "x"})
    nodes = [node("a", 1), node("b", 0, taints=[("k", "v", "NoSchedule")]), node("c", 1, unschedulable=True),
             node("f", 1, labels={"kubernetes.io/hostname": "x"})]
    msg = pending_message(nodes, pod("p", spec))
    assert msg == ("0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node "
                   "affinity/selector, 1 node(s) had untolerated taint {k: v}, 1 node(s) were unschedulable.")
