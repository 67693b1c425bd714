"""Kueue: a queued Job with no LocalQueue or needing more than any flavor can ever give is an error with Kueue's
reason; one that must wait for quota in use is a warning; an admitted one gets its flavor's labels and
tolerations."""

import pytest

from tests.admission.objects import (
    admitted,
    cluster_queue,
    container,
    in_ns,
    job,
    local_queue,
    pod_spec,
    queued,
    resource_flavor,
)

GPU = "nvidia.com/gpu"


def gpu_job(name, pods, per_pod=1, queue="team", **extra):
    return queued(in_ns(job(name, pods, pod_spec(container(limits={GPU: per_pod}), **extra))), queue)


def kueue(*cqs, flavors=("h100",)):
    return [resource_flavor(f, {"gpu.example.com/pool": f}) for f in flavors] + list(cqs) + [local_queue("team", "cq")]


def test_a_job_whose_local_queue_does_not_exist_is_never_admitted():
    result = admitted(*kueue(cluster_queue("cq", {"h100": {GPU: 16}})), gpu_job("train", 2, queue="missing"))
    [r] = result.rejections
    assert (r.workload, r.refused, r.by, r.source, r.reason) == (
        "Job/ml/train", 2, "LocalQueue/ml/missing", "Kueue", "LocalQueue missing doesn't exist")
    assert result.workloads[0].replicas == 0


def test_a_queue_label_with_no_kueue_objects_at_all_is_still_a_missing_local_queue():
    result = admitted(gpu_job("train", 2))
    assert result.rejections[0].reason == "LocalQueue team doesn't exist"


def test_a_local_queue_pointing_at_no_cluster_queue():
    result = admitted(resource_flavor("h100"), local_queue("team", "gone"), gpu_job("train", 1))
    assert (result.rejections[0].by, result.rejections[0].reason) == ("ClusterQueue/gone",
                                                                      "ClusterQueue gone doesn't exist")


def test_a_job_larger_than_the_nominal_quota_without_a_cohort_never_fits():
    result = admitted(*kueue(cluster_queue("cq", {"h100": {GPU: 16}})), gpu_job("train", 3, per_pod=8))
    [r] = result.rejections
    assert r.reason == ("couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
                        "h100, previously considered podsets requests (0) + current podset request (24) > maximum "
                        "capacity (16)")
    assert r.message == f'Job.batch "train" is never admitted by Kueue: {r.reason}'


def test_every_flavor_is_tried_and_named():
    cq = cluster_queue("cq", {"a100": {GPU: 8}, "h100": {GPU: 16}})
    result = admitted(*kueue(cq, flavors=("a100", "h100")), gpu_job("train", 3, per_pod=8))
    assert result.rejections[0].reason == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor a100, previously "
        "considered podsets requests (0) + current podset request (24) > maximum capacity (8), insufficient quota "
        "for nvidia.com/gpu in flavor h100, previously considered podsets requests (0) + current podset request (24) "
        "> maximum capacity (16)")


@pytest.mark.parametrize("borrowing, outcome", [
    pytest.param(None, "admitted", id="borrows the whole cohort"),
    pytest.param(4, "(16) > maximum capacity (12)", id="borrowing limit caps it"),
])
def test_borrowing_within_the_cohort(borrowing, outcome):
    cq = cluster_queue("cq", {"h100": {GPU: 8}}, cohort="all",
                       borrowing={"h100": {GPU: borrowing}} if borrowing is not None else None)
    other = cluster_queue("other", {"h100": {GPU: 8}}, cohort="all")
    result = admitted(*kueue(cq, other), gpu_job("train", 2, per_pod=8))
    if outcome == "admitted":
        assert result.rejections == [] and result.workloads[0].replicas == 2
    else:
        assert result.rejections[0].reason.endswith(f"current podset request {outcome}")


def test_a_lending_limit_keeps_part_of_the_other_queues_quota_out_of_reach():
    cq = cluster_queue("cq", {"h100": {GPU: 8}}, cohort="all")
    other = cluster_queue("other", {"h100": {GPU: 8}}, cohort="all", lending={"h100": {GPU: 2}})
    result = admitted(*kueue(cq, other), gpu_job("train", 2, per_pod=8))
    assert result.rejections[0].reason.endswith("current podset request (16) > maximum capacity (10)")


def test_a_job_that_must_wait_for_quota_in_use_is_a_warning_and_starts_no_pods():
    cq = cluster_queue("cq", {"h100": {GPU: 16}}, reserved={"h100": {GPU: 12}})
    result = admitted(*kueue(cq), gpu_job("train", 1, per_pod=8))
    assert result.rejections == []
    [w] = result.warnings
    assert (w.subject, w.kind) == ("Job/ml/train", "kueue-wait")
    assert w.message.endswith("couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
                              "in flavor h100, 4 more needed")
    assert result.workloads[0].replicas == 0


def test_jobs_reserve_quota_in_manifest_order():
    result = admitted(*kueue(cluster_queue("cq", {"h100": {GPU: 16}})), gpu_job("first", 2, per_pod=6),
                      gpu_job("second", 1, per_pod=6))
    assert [w.replicas for w in result.workloads] == [2, 0]
    assert result.warnings[0].subject == "Job/ml/second"


def test_an_admitted_job_gets_the_flavors_node_labels_and_tolerations():
    toleration = {"key": "pool", "operator": "Equal", "value": "h100", "effect": "NoSchedule"}
    flavor = resource_flavor("h100", {"pool": "h100"},
                             taints=[{"key": "pool", "value": "h100", "effect": "NoSchedule"}],
                             tolerations=[toleration])
    original = gpu_job("train", 2, per_pod=4)
    result = admitted(flavor, cluster_queue("cq", {"h100": {GPU: 16}}), local_queue("team", "cq"), original)
    [w] = result.workloads
    assert w.replicas == 2
    assert w.spec["nodeSelector"] == {"pool": "h100"}
    assert w.spec["tolerations"] == [toleration]
    assert "nodeSelector" not in original["spec"]["template"]["spec"]


def test_a_flavor_whose_taint_the_job_does_not_tolerate_is_skipped():
    tainted = resource_flavor("spot", {"pool": "spot"},
                              taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}])
    cq = cluster_queue("cq", {"spot": {GPU: 16}, "h100": {GPU: 16}})
    result = admitted(tainted, resource_flavor("h100", {"pool": "h100"}), cq, local_queue("team", "cq"),
                      gpu_job("train", 1))
    assert result.workloads[0].spec["nodeSelector"] == {"pool": "h100"}


@pytest.mark.parametrize("order", [("a100", "h100"), ("h100", "a100")], ids=["a100 first", "h100 first"])
def test_a_flavor_that_contradicts_the_node_selector_is_skipped_and_named_in_sorted_reasons(order):
    # whichever flavor is tried first, the reasons come sorted, as Kueue's Status.Message sorts them
    cq = cluster_queue("cq", {name: {GPU: {"a100": 16, "h100": 4}[name]} for name in order})
    flavors = [resource_flavor(name, {"pool": name}) for name in order]
    result = admitted(*flavors, cq, local_queue("team", "cq"),
                      gpu_job("train", 1, per_pod=8, nodeSelector={"pool": "h100"}))
    assert result.rejections[0].reason == (
        "couldn't assign flavors to pod set main: flavor a100 doesn't match node affinity, insufficient quota for "
        "nvidia.com/gpu in flavor h100, previously considered podsets requests (0) + current podset request (8) > "
        "maximum capacity (4)")


def test_a_resource_the_cluster_queue_does_not_cover():
    cq = cluster_queue("cq", {"h100": {"cpu": 64}})
    result = admitted(resource_flavor("h100"), cq, local_queue("team", "cq"), gpu_job("train", 1))
    assert result.rejections[0].reason == ("couldn't assign flavors to pod set main: resource nvidia.com/gpu "
                                           "unavailable in ClusterQueue")


def test_a_namespace_the_cluster_queue_does_not_select():
    cq = cluster_queue("cq", {"h100": {GPU: 16}}, namespace_selector={"matchLabels": {"team": "research"}})
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml", "labels": {"team": "prod"}}}
    result = admitted(ns, resource_flavor("h100"), cq, local_queue("team", "cq"), gpu_job("train", 1))
    assert result.rejections[0].reason == "workload namespace doesn't match ClusterQueue selector"


def test_jobs_without_a_queue_name_are_untouched():
    plain = in_ns(job("plain", 4, pod_spec(container(limits={GPU: 8}))))
    result = admitted(*kueue(cluster_queue("cq", {"h100": {GPU: 1}})), plain)
    assert result.rejections == [] and result.workloads[0].spec is plain["spec"]["template"]["spec"]


def test_every_resource_of_a_flavor_is_checked_after_one_can_never_fit():
    cq = cluster_queue("cq", {"h100": {GPU: 4, "cpu": 2}})
    job_ = queued(in_ns(job("train", 1, pod_spec(container(limits={GPU: 8, "cpu": "4"})))), "team")
    result = admitted(*kueue(cq), job_)
    assert result.rejections[0].reason == (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor h100, previously considered "
        "podsets requests (0) + current podset request (4) > maximum capacity (2), insufficient quota for "
        "nvidia.com/gpu in flavor h100, previously considered podsets requests (0) + current podset request (8) > "
        "maximum capacity (4)")


def test_only_one_resource_the_cluster_queue_does_not_cover_is_named():
    cq = cluster_queue("cq", {"h100": {"memory": "64Gi"}})
    job_ = queued(in_ns(job("train", 1, pod_spec(container(limits={GPU: 1, "cpu": "1"})))), "team")
    result = admitted(resource_flavor("h100"), cq, local_queue("team", "cq"), job_)
    assert result.rejections[0].reason == ("couldn't assign flavors to pod set main: resource cpu unavailable in "
                                           "ClusterQueue")
