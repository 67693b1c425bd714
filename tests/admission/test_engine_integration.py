"""`gpufleet.scheduling.check_workloads` running admission itself (the engine integration of issue 22): a
rejection is `reason: "rejected"` with how many pods got in and which object refused the rest; only the pods
let in are scheduled. Skipped until the engine runs admit()."""

import dataclasses

import pytest

from gpufleet.scheduling import check_workloads
from gpufleet.scheduling.result import Unschedulable
from tests.admission.objects import container, deployment, in_ns, limit_range, pod_spec, quota
from tests.scheduling.kube import node

pytestmark = pytest.mark.skipif("refused_by" not in {f.name for f in dataclasses.fields(Unschedulable)},
                                reason="engine.check_workloads does not run admission yet (issue 22 integration)")
GPU = "nvidia.com/gpu"


def test_a_quota_crossed_partway_is_a_rejection_with_the_replicas_let_in_and_the_quota_named():
    objs = [quota({"requests.nvidia.com/gpu": 4, GPU: 1}),
            in_ns(deployment("train", 3, pod_spec(container(limits={GPU: 2}))))]
    result = check_workloads([node("a", 8)], [], objs)
    assert result.to_json()["unschedulable"] == [{
        "workload": "Deployment/ml/train", "reason": "rejected", "pending": 1, "admitted": 2,
        "refusedBy": "ResourceQuota/ml/gpu-quota",
        "message": 'pods "train-<pod-template-hash>-" is forbidden: exceeded quota: gpu-quota, requested: '
                   "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4"}]
    assert [w.workload for w in result.warnings] == ["ResourceQuota/ml/gpu-quota"]
    assert sum(n for _, _, n in result.placements) == 2


def test_gpus_a_limit_range_defaults_into_cpu_pods_leave_some_pending():
    objs = [limit_range({"type": "Container", "max": {GPU: 2}}),
            in_ns(deployment("web", 10, pod_spec(container(requests={"cpu": "100m"}))))]
    result = check_workloads([node("a", 8), node("b", 8)], [], objs)
    assert [(u.reason, u.pending, u.message) for u in result.unschedulable] == [
        ("pending", 2, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")]


def test_namespaces_without_admission_objects_check_as_before():
    objs = [quota({"requests.nvidia.com/gpu": 1}, namespace="elsewhere"), deployment("d", 2, pod_spec())]
    assert check_workloads([node("a", 8)], [], objs).to_json()["unschedulable"] == []


def test_a_gpu_a_limit_range_defaults_into_a_cpu_deployment_names_that_limit_range():
    objs = [limit_range({"type": "Container", "default": {GPU: 1}}, name="gpu-defaults"),
            in_ns(deployment("web", 2, pod_spec(container(requests={"cpu": "100m"}))))]
    [u] = check_workloads([node("cpu-only")], [], objs).to_json()["unschedulable"]
    assert (u["workload"], u["reason"]) == ("Deployment/ml/web", "pending")
    assert u["defaultedBy"] == [
        {"container": "main", "part": part, "resource": GPU, "value": "1", "limitRange": "LimitRange/ml/gpu-defaults"}
        for part in ("limits", "requests")]


def test_requests_the_template_makes_itself_name_no_limit_range():
    objs = [limit_range({"type": "Container", "default": {GPU: 1}}),
            in_ns(deployment("web", 2, pod_spec(container(limits={GPU: 1}))))]
    [u] = check_workloads([node("cpu-only")], [], objs).to_json()["unschedulable"]
    assert "defaultedBy" not in u


def test_check_prints_which_limit_range_put_the_gpu_in(cli, tmp_path):
    import json

    import yaml

    objs = [limit_range({"type": "Container", "default": {GPU: 1}}, name="gpu-defaults"),
            in_ns(deployment("web", 2, pod_spec(container(requests={"cpu": "100m"}))))]
    (tmp_path / "app.yaml").write_text(yaml.safe_dump_all(objs))
    (tmp_path / "nodes.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("cpu-only")]}))
    r = cli("check", "--nodes", tmp_path / "nodes.json", tmp_path / "app.yaml")
    assert r.code == 1
    assert ("  defaults: nvidia.com/gpu 1 (requests and limits of container main) comes from "
            "LimitRange/ml/gpu-defaults's default: the template sets none") in r.out
