"""admit() then gpufleet's kube-scheduler emulation on the pods as admission leaves them: GPUs a LimitRange
defaults into pods the scheduler then cannot place, replicas a quota refuses, flavors Kueue pins Jobs to."""

from gpufleet.scheduling import check_workloads
from tests.admission.objects import (
    admitted,
    as_manifests,
    cluster_queue,
    container,
    deployment,
    in_ns,
    limit_range,
    local_queue,
    pod_spec,
    queued,
    quota,
    resource_flavor,
)
from tests.scheduling.kube import job, node

GPU = "nvidia.com/gpu"
NODES = [node("gpu-0", 8), node("gpu-1", 8)]


def check(result):
    return check_workloads(NODES, [], as_manifests(result.workloads))


def test_limit_range_max_becomes_a_gpu_request_that_leaves_cpu_only_pods_pending():
    web = in_ns(deployment("web", 10, pod_spec(container(requests={"cpu": "100m"}, limits={"cpu": "100m"}))))
    assert check_workloads(NODES, [], [web]).fits  # what gpufleet said before admission was emulated
    result = admitted(limit_range({"type": "Container", "max": {GPU: 2}}), web)
    verdict = check(result)
    [u] = verdict.unschedulable
    assert (u.workload, u.reason, u.pending) == ("Deployment/ml/web", "pending", 2)
    assert u.message == "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def test_only_the_replicas_the_quota_lets_in_are_scheduled():
    train = in_ns(deployment("train", 3, pod_spec(container(limits={GPU: 2}))))
    result = admitted(quota({"requests.nvidia.com/gpu": 4}), train)
    verdict = check(result)
    assert verdict.fits
    assert sum(n for key, _, n in verdict.placements if key == "Deployment/ml/train") == 2
    assert result.rejections[0].refused == 1


def test_kueue_pins_an_admitted_job_to_its_flavors_nodes():
    nodes = [node("h100-0", 4, labels={"pool": "h100"}), node("a100-0", 8, labels={"pool": "a100"})]
    assert check_workloads(nodes, [], [in_ns(job("train", 2, pod_spec(container(limits={GPU: 4}))))]).fits
    train = queued(in_ns(job("train", 2, pod_spec(container(limits={GPU: 4})))), "team")
    result = admitted(resource_flavor("h100", {"pool": "h100"}), cluster_queue("cq", {"h100": {GPU: 16}}),
                      local_queue("team", "cq"), train)
    [u] = check_workloads(nodes, [], as_manifests(result.workloads)).unschedulable
    assert (u.workload, u.pending) == ("Job/ml/train", 1)
    assert u.message == ("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
                         "1 node(s) didn't match Pod's node affinity/selector.")
