"""Why a workload pends: who holds the nodes it could use, and the fix a user would make (`blockedBy`).

The L4 trap from the field, checked against the real kube-scheduler v1.34.1 (three runs): 75 untainted
single-GPU L4 nodes, 75 tainted 8-GPU H100 nodes and 150 cpu nodes. Deployments that select no product and do
not tolerate the GPU taint can only land on the L4s; a later Deployment that selects NVIDIA-L4 finds them
taken. Real, 3 of 3 runs: `l4-infer` 6 pods Pending, "0/300 nodes are available: 150 node(s) didn't match Pod's
node affinity/selector, 75 Insufficient nvidia.com/gpu, 75 node(s) had untolerated taint {nvidia.com/gpu:
present}."
"""

import json
import subprocess
import sys

import yaml

from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, node, pod_spec

GPU_TAINT = ("nvidia.com/gpu", "present", "NoSchedule")
L4 = {"nvidia.com/gpu.product": "NVIDIA-L4"}


def _fleet(h100_cpu="16", h100_memory="64Gi"):
    nodes = [node(f"l4-{i:03d}", 1, labels=L4, cpu="8", memory="32Gi") for i in range(75)]
    nodes += [node(f"h100-{i:03d}", 8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                   taints=[GPU_TAINT], cpu=h100_cpu, memory=h100_memory) for i in range(75)]
    nodes += [node(f"cpu-{i:03d}", 0, cpu="16") for i in range(150)]
    one_gpu = container(limits={"nvidia.com/gpu": 1}, requests={"cpu": "1", "memory": "2Gi"})
    workloads = [deployment(name, n, pod_spec(one_gpu), namespace="ml")
                 for name, n in (("batch-a", 30), ("batch-b", 25), ("etl", 14))]
    workloads.append(deployment("l4-infer", 12, pod_spec(one_gpu, nodeSelector=L4), namespace="ml"))
    return nodes, workloads


def test_l4_trap_names_the_unselective_deployments_that_took_the_l4_nodes():
    nodes, workloads = _fleet()
    result = check_workloads(nodes, [], workloads)
    (u,) = result.unschedulable
    assert (u.workload, u.pending) == ("Deployment/ml/l4-infer", 6)
    assert u.message == ("0/300 nodes are available: 150 node(s) didn't match Pod's node affinity/selector, "
                         "75 Insufficient nvidia.com/gpu, 75 node(s) had untolerated taint {nvidia.com/gpu: present}.")
    b = u.blocked
    assert b.summary == ("the 75 NVIDIA-L4 nodes it may use hold 69 pods of Deployment/ml/batch-a (30), "
                         "Deployment/ml/batch-b (25) and Deployment/ml/etl (14); none of them selects "
                         "nvidia.com/gpu.product")
    assert b.fix == ("if they need not run here, taint these nodes and tolerate the taint only in "
                     "Deployment/ml/l4-infer; else set spec.replicas of Deployment/ml/l4-infer to 6, or add nodes it "
                     "may use: 6 more pod(s) need nvidia.com/gpu 1, cpu 1, memory 2Gi each")
    assert [(x.workload, x.pods, x.elsewhere) for x in b.by] == [
        ("Deployment/ml/batch-a", 30, False), ("Deployment/ml/batch-b", 25, False), ("Deployment/ml/etl", 14, False)]


def test_blockers_that_could_run_elsewhere_are_told_to_keep_off(tmp_path):
    # The same, but the batch Deployments tolerate the GPU taint: they could have run on the H100s. Here the
    # H100 nodes have less cpu and memory than the L4s, so LeastAllocated (which scores cpu and memory, never
    # GPUs) still sends every batch pod to an L4. Real, 3 of 3 runs: l4-infer 6 Pending, the same message.
    nodes, workloads = _fleet(h100_cpu="4", h100_memory="16Gi")
    for w in workloads[:3]:
        w["spec"]["template"]["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": nodes}))
    (tmp_path / "w.yaml").write_text(yaml.safe_dump_all(workloads))
    run = subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "check", "--nodes",
                          str(tmp_path / "nodes.json"), str(tmp_path / "w.yaml")], capture_output=True, text=True)
    result = check_workloads(nodes, [], workloads)
    flagged = result.unschedulable + result.warnings
    assert [f.workload for f in flagged] == ["Deployment/ml/l4-infer"]
    b = flagged[0].blocked
    assert b.summary.endswith("; all of them could also run on other nodes, and select no nvidia.com/gpu.product")
    assert b.fix.startswith("keep them off these nodes: give them a nodeSelector")
    # The text output carries the same, under the scheduler's message.
    assert run.returncode in (0, 1), run.stderr
    assert "why: the 75 NVIDIA-L4 nodes it may use hold" in run.stdout
    assert "fix: keep them off these nodes" in run.stdout


def test_a_pod_larger_than_any_node_is_told_to_ask_for_less():
    result = check_workloads([node("a", 8), node("b", 8)], [],
                             [deployment("big", 1, pod_spec(container(limits={"nvidia.com/gpu": 16})))])
    (u,) = result.unschedulable
    assert u.blocked.summary == ("one pod asks for nvidia.com/gpu 16; the largest node it may use has "
                                 "nvidia.com/gpu 8 allocatable")
    assert u.blocked.fix == ("ask for at most nvidia.com/gpu 8 per pod (split the work over more pods), or add nodes "
                             "with nvidia.com/gpu 16")


def test_capacity_shortage_among_workloads_that_need_these_nodes_suggests_fewer_pods_or_more_nodes():
    sel = {"nvidia.com/gpu.product": "NVIDIA-L4"}
    nodes = [node(f"l4-{i}", 1, labels=sel) for i in range(4)]
    spec = pod_spec(container(limits={"nvidia.com/gpu": 1}), nodeSelector=sel)
    result = check_workloads(nodes, [], [deployment("first", 3, spec), deployment("second", 3, spec)])
    (u,) = result.unschedulable
    assert u.blocked.summary == "the 4 NVIDIA-L4 nodes it may use hold 3 pods of Deployment/default/first (3)"
    assert u.blocked.fix == ("set spec.replicas of Deployment/default/second to 1, or add nodes it may use: 2 more "
                             "pod(s) need nvidia.com/gpu 1 each")
    assert u.to_json()["blockedBy"]["workloads"] == [
        {"workload": "Deployment/default/first", "pods": 3, "nodes": 3, "couldRunElsewhere": False}]


def test_the_same_input_gives_the_same_answer_whatever_the_hash_seed(tmp_path):
    # Ties are broken by seeded runs, never by set or dict order: two processes with different hash seeds agree.
    from tests.scheduling.oracle_fleets import generate, write

    files = write(generate(11, 150, "mixed"), tmp_path)
    outs = []
    for seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", "from gpufleet.cli import main; main()", "check", "--json",
                              "--nodes", str(files[0]), "--pods", str(files[1]), str(files[2])],
                             capture_output=True, text=True, env={**__import__("os").environ, "PYTHONHASHSEED": seed})
        assert run.returncode in (0, 1), run.stderr
        outs.append(run.stdout)
    assert outs[0] == outs[1] and json.loads(outs[0])["checked"]


def test_a_product_label_no_node_carries_is_named_with_the_spelling_the_nodes_use():
    nodes = [node(f"a100-{i}", 8, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}) for i in range(2)]
    nodes.append(node("t4-0", 1, labels={"nvidia.com/gpu.product": "Tesla-T4"}))
    spec = pod_spec(container(limits={"nvidia.com/gpu": 1}), nodeSelector={"nvidia.com/gpu.product": "A100-SXM4-40GB"})
    (u,) = check_workloads(nodes, [], [deployment("train", 1, spec)]).unschedulable
    assert u.message == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    assert u.blocked.summary == ("no node has nvidia.com/gpu.product=A100-SXM4-40GB; the nodes carry "
                                 "nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB, Tesla-T4")
    assert u.blocked.fix == "select nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB (the value the nodes carry)"
    # a key no node has at all
    spec = pod_spec(container(limits={"nvidia.com/gpu": 1}), nodeSelector={"pool": "gpu"})
    (u,) = check_workloads(nodes, [], [deployment("train", 1, spec)]).unschedulable
    assert u.blocked.summary == "no node has the label pool (asked: pool=gpu)"
