"""`gpufleet:namespaces.<ns>.gpuQuota`: a GPU quota the plan deploys and every capacity check counts pods against,
as the API server's ResourceQuota admission does (only `requests.<resource>` limits an extended resource)."""

from __future__ import annotations

import pytest

from gpufleet.capacity import stack_capacity
from gpufleet.config.loading import parse_sections
from gpufleet.errors import ConfigError
from gpufleet.render.workloads import gpu_quotas, workload_objects
from gpufleet.scheduling import check_workloads

POOL = {"name": "a100", "nodes": ["a100-0"], "gpu": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8}}


def _cfg(quota: dict, replicas: int = 3):
    return parse_sections({"mode": "standalone", "nodePools": [POOL], "namespaces": {"ml": {"gpuQuota": quota}},
                           "workloads": [{"kind": "inference", "name": "infer", "namespace": "ml",
                                          "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "nodePool": "a100",
                                          "replicas": replicas, "gpu": {"count": 2}}]}, "t")


def test_the_quota_is_a_resource_quota_on_requests_of_the_gpu_resource():
    [quota] = gpu_quotas(_cfg({"nvidia.com/gpu": 4}))
    assert quota["kind"] == "ResourceQuota" and quota["metadata"]["namespace"] == "ml"
    assert quota["spec"]["hard"] == {"requests.nvidia.com/gpu": "4"}


def test_the_replica_that_crosses_the_quota_is_refused_and_the_others_scheduled():
    cfg = _cfg({"nvidia.com/gpu": 4})
    cap = stack_capacity(cfg)
    manifests = [*gpu_quotas(cfg), *(o for w in cfg.workloads for o in workload_objects(cfg, w))]
    result = check_workloads(cap.nodes, cap.pods, manifests)
    [refused] = result.unschedulable
    assert (refused.reason, refused.admitted, refused.pending) == ("rejected", 2, 1)
    assert refused.refused_by == "ResourceQuota/ml/gpufleet-gpu-quota"
    assert "exceeded quota: gpufleet-gpu-quota, requested: requests.nvidia.com/gpu=2, used: " \
           "requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4" in refused.message
    assert check_workloads(cap.nodes, cap.pods, [*gpu_quotas(_cfg({"nvidia.com/gpu": 6})), *manifests[1:]]).fits


@pytest.mark.parametrize("quota, words", [({"gpu": 4}, "gpuQuota"), ({"nvidia.com/gpu": -1}, "greater than or equal"),
                                          ({"nvidia.com/gpu": "four"}, "valid integer")])
def test_a_bad_quota_names_the_key_and_what_is_allowed(quota, words):
    with pytest.raises(ConfigError) as e:
        _cfg(quota)
    assert "gpufleet:namespaces.ml.gpuQuota" in str(e.value) and words in str(e.value)
