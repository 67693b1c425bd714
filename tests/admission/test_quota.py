"""ResourceQuota: what a pod counts, the scopes, pods counted one by one in manifest order, live status.used, and
the API server's messages."""

import pytest

from tests.admission.objects import admitted, container, deployment, in_ns, job, pod, pod_spec, priority_class, quota

GPU = "nvidia.com/gpu"


def gpus(n, **extra):
    return pod_spec(container(limits={GPU: n}), **extra)


def test_the_replica_that_crosses_the_quota_is_forbidden_and_the_ones_before_get_in():
    result = admitted(quota({"requests.nvidia.com/gpu": 4}), in_ns(deployment("train", 3, gpus(2))))
    [r] = result.rejections
    assert (r.workload, r.admitted, r.refused, r.by) == ("Deployment/ml/train", 2, 1, "ResourceQuota/ml/gpu-quota")
    assert r.reason == ("exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=2, "
                        "used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4")
    assert result.workloads[0].replicas == 2


def test_workloads_share_the_quota_in_manifest_order():
    result = admitted(quota({"requests.nvidia.com/gpu": 5}), in_ns(deployment("a", 2, gpus(2))),
                      in_ns(deployment("b", 2, gpus(1))), in_ns(pod("c", gpus(1))))
    assert [w.replicas for w in result.workloads] == [2, 1, 0]
    assert [(r.workload, r.refused) for r in result.rejections] == [("Deployment/ml/b", 1), ("Pod/ml/c", 1)]
    assert result.rejections[1].message == (
        'pods "c" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=5, limited: requests.nvidia.com/gpu=5")


def test_a_new_quota_counts_from_zero():
    result = admitted(quota({"requests.nvidia.com/gpu": 4}), in_ns(pod("p", gpus(5))))
    assert result.rejections[0].reason == ("exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=5, "
                                           "used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=4")


def test_a_live_quota_starts_from_its_status_used():
    result = admitted(quota({"requests.nvidia.com/gpu": 4}, used={"requests.nvidia.com/gpu": "3"}),
                      in_ns(pod("p", gpus(2))))
    assert result.rejections[0].reason == ("exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=2, "
                                           "used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=4")


def test_a_live_quota_without_usage_for_an_item_refuses_until_its_controller_has_counted():
    result = admitted(quota({"requests.nvidia.com/gpu": 4, "pods": 10}, used={"pods": "1"}), in_ns(pod("p", gpus(1))))
    assert result.rejections[0].reason == "status unknown for quota: gpu-quota, resources: pods,requests.nvidia.com/gpu"


@pytest.mark.parametrize("item, works", [
    pytest.param("nvidia.com/gpu", "requests.nvidia.com/gpu", id="no prefix"),
    pytest.param("limits.nvidia.com/gpu", "requests.nvidia.com/gpu", id="limits prefix"),
    pytest.param("nvidia.com/mig-1g.10gb", "requests.nvidia.com/mig-1g.10gb", id="mig resource"),
])
def test_a_quota_item_that_limits_nothing_is_a_warning_naming_the_key_that_works(item, works):
    result = admitted(quota({item: 2}), in_ns(deployment("d", 4, gpus(1))))
    assert result.rejections == []
    assert result.workloads[0].replicas == 4
    [w] = result.warnings
    assert w.subject == "ResourceQuota/ml/gpu-quota"
    assert f"quota item {item} limits nothing" in w.message and f"write {works}: 2" in w.message


def test_items_for_other_objects_are_not_warned_about():
    result = admitted(quota({"count/deployments.apps": 2, "gold.storageclass.storage.k8s.io/requests.storage": "1Ti",
                             "services": 3, "requests.nvidia.com/gpu": 8}), in_ns(pod("p", gpus(1))))
    assert result.warnings == [] and result.rejections == []


def test_a_cpu_quota_requires_every_container_to_set_cpu():
    spec = pod_spec(container(limits={GPU: 1}), dict(container(requests={"cpu": "1"}), name="side"))
    result = admitted(quota({"requests.cpu": "10", "limits.cpu": "10"}), in_ns(pod("p", spec)))
    assert result.rejections[0].reason == ("failed quota: gpu-quota: must specify limits.cpu for: main,side; "
                                           "requests.cpu for: main")


def test_several_items_crossed_are_listed_in_name_order():
    spec = pod_spec(container(requests={"cpu": "3", "memory": "3Gi"}, limits={"cpu": "3", "memory": "3Gi"}))
    result = admitted(quota({"requests.memory": "4Gi", "requests.cpu": "4", "pods": 10}),
                      in_ns(deployment("d", 2, spec)))
    assert result.rejections[0].reason == (
        "exceeded quota: gpu-quota, requested: requests.cpu=3,requests.memory=3Gi, "
        "used: requests.cpu=3,requests.memory=3Gi, limited: requests.cpu=4,requests.memory=4Gi")


def test_pod_count_quota():
    result = admitted(quota({"pods": 2}, name="pod-count"), in_ns(deployment("d", 3, gpus(1))))
    assert result.rejections[0].reason == "exceeded quota: pod-count, requested: pods=1, used: pods=2, limited: pods=2"


def test_priority_class_scope_counts_only_the_pods_of_that_class():
    high = quota({"requests.nvidia.com/gpu": 2}, name="high-gpus",
                 selector=[{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}])
    result = admitted(high, priority_class("high", 1000), priority_class("low", 10),
                      in_ns(deployment("a", 2, gpus(2, priorityClassName="high"))),
                      in_ns(deployment("b", 4, gpus(2, priorityClassName="low"))))
    assert [(r.workload, r.admitted, r.refused) for r in result.rejections] == [("Deployment/ml/a", 1, 1)]
    assert [w.replicas for w in result.workloads] == [1, 4]


def test_the_global_default_class_counts_for_pods_that_name_none():
    high = quota({"requests.nvidia.com/gpu": 1}, selector=[{"scopeName": "PriorityClass", "operator": "In",
                                                            "values": ["batch"]}])
    result = admitted(high, priority_class("batch", 100, default=True), in_ns(deployment("a", 2, gpus(1))))
    assert [w.replicas for w in result.workloads] == [1]


def test_best_effort_scope_sees_a_gpu_only_pod_as_best_effort():
    best = quota({"pods": 1}, name="be", scopes=["BestEffort"])
    result = admitted(best, in_ns(deployment("gpu-only", 2, gpus(1))),
                      in_ns(deployment("burst", 2, pod_spec(container(requests={"cpu": "1"})))))
    assert [w.replicas for w in result.workloads] == [1, 2]


def test_terminating_scope_counts_pods_with_an_active_deadline():
    term = quota({"requests.nvidia.com/gpu": 2}, name="batch", scopes=["Terminating"])
    j = in_ns(job("train", 3, gpus(1, activeDeadlineSeconds=3600)))
    result = admitted(term, j, in_ns(deployment("serve", 3, gpus(1))))
    assert [w.replicas for w in result.workloads] == [2, 3]
    assert result.rejections[0].message.startswith('pods "train-" is forbidden: exceeded quota: batch')


def test_not_terminating_and_not_best_effort_scopes():
    q = quota({"requests.nvidia.com/gpu": 1}, name="long", scopes=["NotTerminating", "NotBestEffort"])
    cpu_and_gpu = pod_spec(container(limits={GPU: 1, "cpu": "1"}))
    result = admitted(q, in_ns(deployment("a", 3, gpus(1))), in_ns(deployment("b", 3, cpu_and_gpu)))
    assert [w.replicas for w in result.workloads] == [3, 1]


def test_extended_resources_count_from_requests_with_overhead_and_init_containers_by_the_max_rule():
    spec = pod_spec(container(limits={GPU: 1}), initContainers=[dict(container(limits={GPU: 3}), name="warm")])
    result = admitted(quota({"requests.nvidia.com/gpu": 5}), in_ns(deployment("d", 2, spec)))
    assert result.rejections[0].reason.startswith("exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=3, "
                                                  "used: requests.nvidia.com/gpu=3,")


def test_a_quota_in_another_namespace_changes_nothing():
    d = deployment("d", 3, gpus(2))
    result = admitted(quota({"requests.nvidia.com/gpu": 1}), d)
    assert result.rejections == [] and result.workloads[0].replicas == 3
