"""A stack's autoscaled node pools are node groups: `check --stack` says what runs now, after the autoscaler grows
a pool (up to its max), or only partly; a `--node-groups` file adds groups beside them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from gpufleet.autoscaler.stack_groups import stack_node_groups
from gpufleet.config.loading import parse_sections
from tests.cli.run_inprocess import run
from tests.conftest import ROOT

A100 = {"product": "NVIDIA-A100-SXM4-80GB", "count": 1}
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def pool(autoscaling: dict | None = None, **fields) -> dict:
    return {"name": "a100", "gpu": dict(A100), "taints": [dict(TAINT)], "resources": {"cpu": "16", "memory": "64Gi"},
            **({"autoscaling": autoscaling} if autoscaling else {}), **fields}


def inference(replicas: int, name: str = "infer") -> dict:
    return {"kind": "inference", "name": name, "namespace": "ml", "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
            "nodePool": "a100", "replicas": replicas, "gpu": {"count": 1}, "ports": [{"port": 8000}],
            "service": {"type": "ClusterIP"}}


def sections(pools: list[dict], workloads: list[dict]) -> dict:
    return {"mode": "standalone", "nodePools": pools, "workloads": workloads}


def project(tmp_path: Path, pools: list[dict], workloads: list[dict]) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    config = {f"gpufleet:{k}": v for k, v in sections(pools, workloads).items()}
    (tmp_path / "Pulumi.small.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def check(tmp_path: Path, pools: list[dict], workloads: list[dict], *extra: object):
    return run("check", "--stack", "small", "--project-dir", project(tmp_path, pools, workloads), "--json", *extra)


def test_an_autoscaled_pool_is_a_group_templated_from_its_planned_node():
    cfg = parse_sections(sections([pool({"min": 1, "max": 3}, count=2), {**pool(), "name": "fixed"}], []),
                         "Pulumi.test.yaml")
    [group] = stack_node_groups(cfg)
    assert (group.name, group.min_size, group.max_size, group.target_size) == ("a100", 1, 3, 2)
    assert group.members == ["a100-0", "a100-1"]
    t = group.template
    assert t.allocatable["nvidia.com/gpu"] == 1 and t.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert [(x.key, x.value, x.effect) for x in t.taints] == [("dedicated", "gpu", "NoSchedule")]
    assert t.labels["cluster-autoscaler.kubernetes.io/template-node"] == "true"


def test_a_pool_of_min_zero_has_no_node_now_and_still_a_template_with_its_gpus():
    cfg = parse_sections(sections([pool({"min": 0, "max": 2})], []), "Pulumi.test.yaml")
    [group] = stack_node_groups(cfg)
    assert (group.members, group.target_size, group.template.allocatable["nvidia.com/gpu"]) == ([], 0, 1)


def test_an_aks_pool_with_autoscale_bounds_is_a_group_at_its_initial_size():
    cfg = parse_sections({"cluster": {"aks": {"resourceGroup": {"name": "rg"}, "gpuPools": [
        {"name": "t4", "vmSize": "Standard_NC4as_T4_v3", "autoscale": {"minCount": 1, "maxCount": 3}}]}},
        "operator": {"driver": {"enabled": False}}}, "Pulumi.test.yaml")
    [group] = stack_node_groups(cfg)
    assert (group.name, group.min_size, group.max_size, group.members) == ("t4", 1, 3, ["t4-0"])
    assert group.template.labels["kubernetes.azure.com/agentpool"] == "t4"


def test_no_autoscaled_pool_no_group():
    assert stack_node_groups(parse_sections(sections([pool(count=2)], []), "Pulumi.test.yaml")) == []


def test_a_workload_pending_now_runs_after_the_pool_scales_up(tmp_path):
    out = check(tmp_path, [pool({"min": 1, "max": 3})], [inference(3)])
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [{"nodeGroup": "a100", "from": 1, "to": 3}]
    assert [(s["workload"], s["scaleUp"]) for s in doc["scaledFor"]] == [
        ("Deployment/ml/infer", [{"nodeGroup": "a100", "nodes": 2, "pods": 2}])]
    assert doc["unschedulable"] == []


def test_the_text_verdict_reads_after_scale_up(tmp_path):
    project(tmp_path, [pool({"min": 1, "max": 3})], [inference(3)])
    out = run("check", "--stack", "small", "--project-dir", tmp_path)
    assert out.code == 0, out.err
    assert "after scale-up: Deployment/ml/infer runs (a100: 2 pod(s) on 2 new node(s))" in out.out


def test_a_workload_past_the_pools_max_runs_only_partly_and_names_the_cap(tmp_path):
    out = check(tmp_path, [pool({"min": 1, "max": 3})], [inference(4)])
    assert out.code == 1
    [u] = json.loads(out.out)["unschedulable"]
    assert (u["pending"], u["scaleUp"], u["stoppedBy"]) == (
        1, [{"nodeGroup": "a100", "pods": 2}], "a100: max node group size reached")
    assert "Scale-up places 2 of its 3 Pending pod(s)" in u["message"]


def test_a_fixed_pool_is_not_grown(tmp_path):
    out = check(tmp_path, [pool(count=1)], [inference(2)])
    assert out.code == 1
    assert "scaleUps" not in json.loads(out.out)


def test_the_autoscalers_options_apply_to_the_stacks_groups(tmp_path):
    out = check(tmp_path, [pool({"min": 1, "max": 3})], [inference(3)], "--max-nodes-total", "2")
    assert out.code == 1, out.err
    [u] = json.loads(out.out)["unschedulable"]
    assert (u["pending"], u["stoppedBy"]) == (1, "a100: max cluster size reached (--max-nodes-total)")


def test_the_autoscalers_options_without_any_group_are_refused(tmp_path):
    out = check(tmp_path, [pool(count=1)], [inference(1)], "--expander", "most-pods")
    assert out.code == 2
    assert "no autoscaled node pool" in out.err and "--node-groups FILE" in out.err


def test_a_node_groups_file_adds_groups_beside_the_stacks(tmp_path):
    groups = tmp_path / "groups.yaml"
    groups.write_text(yaml.safe_dump([{"name": "spare", "maxSize": 2, "template": {"like": "a100-0"}}]))
    out = check(tmp_path, [pool({"min": 1, "max": 1})], [inference(2)], "--node-groups", groups)
    assert out.code == 0, out.err
    assert json.loads(out.out)["scaleUps"] == [{"nodeGroup": "spare", "from": 0, "to": 1}]


def test_a_file_group_named_like_an_autoscaled_pool_is_refused_naming_both(tmp_path):
    groups = tmp_path / "groups.yaml"
    groups.write_text(yaml.safe_dump([{"name": "a100", "maxSize": 2, "template": {"like": "a100-0"}}]))
    out = check(tmp_path, [pool({"min": 1, "max": 3})], [inference(2)], "--node-groups", groups)
    assert out.code == 2
    assert f"{groups}: node group 'a100' is also the stack's autoscaled node pool a100" in out.err


def test_stack_and_nodes_are_two_sources(tmp_path):
    out = check(tmp_path, [pool({"min": 1, "max": 3})], [inference(1)], "--nodes", tmp_path / "nodes.json")
    assert out.code == 2 and "do not also give --nodes" in out.err


def test_check_without_manifests_or_stack_says_what_to_give():
    out = run("check")
    assert out.code == 2 and "give MANIFEST files or directories to check, or --stack NAME" in out.err


def test_plan_passes_a_workload_that_runs_once_the_pool_grows(tmp_path):
    out = run("plan", "--stack", "small", "--project-dir", project(tmp_path, [pool({"min": 1, "max": 3})],
                                                                   [inference(2)]))
    assert out.code == 0, out.out + out.err
    assert "no violations" in out.out


def test_plan_stops_a_workload_past_the_pools_max_in_the_verdicts_words(tmp_path):
    out = run("plan", "--stack", "small", "--project-dir", project(tmp_path, [pool({"min": 1, "max": 3})],
                                                                   [inference(4)]))
    assert out.code == 1, out.out + out.err
    assert "[mandatory] gpu-capacity-fit" in out.out
    assert "the rest stay Pending: a100: max node group size reached" in out.out
    assert "Expected it to fit the stack capacity (1 node(s) now; after scale-up of a100 up to 3)" in out.out
