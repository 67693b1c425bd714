"""`gpufleet check --node-groups`: what runs now, after the autoscaler adds nodes, partly, or never."""

from __future__ import annotations

import json

import pytest

from tests.autoscaler.fleet import deployment, node, template, write
from tests.cli.run_inprocess import run

A100 = {"gpufleet.dev/node-group": "a100"}


def check(tmp_path, nodes, groups, workloads, *extra):
    nodes_file, groups_file, app = write(tmp_path, nodes, groups, workloads)
    return run("check", "--nodes", nodes_file, "--node-groups", groups_file, app, "--json", *extra)


def test_pods_that_fit_an_added_node_run_after_scale_up_and_the_check_passes(tmp_path):
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "minSize": 0, "maxSize": 3, "template": {"like": "gpu-0"}}],
                [deployment("infer", 6)])
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [{"nodeGroup": "a100", "from": 1, "to": 2}]
    assert doc["scaledFor"] == [{"workload": "Deployment/ml/infer",
                                 "scaleUp": [{"nodeGroup": "a100", "nodes": 1, "pods": 2}], "onExpendableRoom": 0}]
    assert doc["unschedulable"] == []


def test_binpacking_adds_as_many_nodes_as_the_pending_pods_need(tmp_path):
    # 4 run on gpu-0; 10 pending of 1 GPU each need 3 nodes of 4 GPUs (first fit).
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 10, "template": {"like": "gpu-0"}}], [deployment("infer", 14)])
    assert out.code == 0, out.err
    assert json.loads(out.out)["scaleUps"] == [{"nodeGroup": "a100", "from": 1, "to": 4}]


def test_a_group_at_its_max_size_stops_the_rest_and_names_the_cap(tmp_path):
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 2, "template": {"like": "gpu-0"}}], [deployment("infer", 12)])
    assert out.code == 1
    [u] = json.loads(out.out)["unschedulable"]
    assert u["reason"] == "partly" and u["pending"] == 4
    assert u["scaleUp"] == [{"nodeGroup": "a100", "pods": 4}]
    assert u["stoppedBy"] == "a100: max node group size reached"


def test_no_group_helps_a_pod_without_the_pools_toleration_and_every_groups_reason_is_named(tmp_path):
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    groups = [{"name": "tainted", "maxSize": 5, "template": template(taints=taint)},
              {"name": "cpu", "maxSize": 5, "template": template(gpus=0)}]
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", 2)])
    assert out.code == 1
    doc = json.loads(out.out)
    [u] = doc["unschedulable"]
    assert u["reason"] == "never" and doc["scaleUps"] == []
    assert u["groups"]["tainted"] == "node(s) had untolerated taint {dedicated: gpu}"
    assert u["groups"]["cpu"].startswith("Insufficient nvidia.com/gpu (its template declares no nvidia.com/gpu")


def test_least_waste_picks_by_cpu_and_memory_and_ignores_gpus(tmp_path):
    # Both groups hold the 2 pending pods on one node; the smaller node wastes less cpu and memory.
    groups = [{"name": "big", "maxSize": 3, "template": template(gpus=8, cpu="96", memory="1000Gi")},
              {"name": "small", "maxSize": 3, "template": template(gpus=2, cpu="8", memory="32Gi")}]
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", 2)])
    assert json.loads(out.out)["scaleUps"] == [{"nodeGroup": "small", "from": 0, "to": 1}]
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", 2)], "--expander", "most-pods")
    assert out.code == 0


def test_nodes_on_their_way_take_pending_pods_before_any_scale_up(tmp_path):
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 3, "targetSize": 2, "template": {"like": "gpu-0"}}],
                [deployment("infer", 6)])
    doc = json.loads(out.out)
    assert out.code == 0 and doc["scaleUps"] == []


def test_the_cluster_node_cap_and_the_gpu_limit_cap_the_scale_up(tmp_path):
    groups = [{"name": "a100", "maxSize": 10, "template": {"like": "gpu-0"}}]
    out = check(tmp_path, [node("gpu-0", labels=A100)], groups, [deployment("infer", 20)], "--max-nodes-total", "3")
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [{"nodeGroup": "a100", "from": 1, "to": 3}] and out.code == 1
    assert "--max-nodes-total" in doc["unschedulable"][0]["stoppedBy"]
    out = check(tmp_path, [node("gpu-0", labels=A100)], groups, [deployment("infer", 20)], "--gpu-total", "0:12")
    assert json.loads(out.out)["scaleUps"] == [{"nodeGroup": "a100", "from": 1, "to": 3}]


def test_a_gpu_limit_of_one_type_caps_only_the_nodes_labelled_with_that_type(tmp_path):
    # As cluster-autoscaler's --gpu-total TYPE:MIN:MAX: the type is the value of the cloud provider's GPU label.
    accel = "cloud.google.com/gke-accelerator"
    groups = [{"name": "h100", "maxSize": 5, "template": template(gpus=8, labels={accel: "nvidia-h100-80gb"})},
              {"name": "t4", "maxSize": 5, "template": template(gpus=4, labels={accel: "nvidia-tesla-t4"})}]
    workloads = [deployment("big", 16, nodeSelector={accel: "nvidia-h100-80gb"}),
                 deployment("small", 8, nodeSelector={accel: "nvidia-tesla-t4"})]
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, workloads, "--gpu-total", "nvidia-h100-80gb:0:8")
    doc = json.loads(out.out)
    assert out.code == 1
    assert {s["nodeGroup"]: s["to"] for s in doc["scaleUps"]} == {"h100": 1, "t4": 2}
    [u] = doc["unschedulable"]
    assert (u["workload"], u["reason"], u["pending"]) == ("Deployment/ml/big", "partly", 8)
    assert "--gpu-total" in u["stoppedBy"]
    # Without a type the limit counts every GPU: 8 in all, so one H100 node or two T4 nodes, not both.
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, workloads, "--gpu-total", "0:8")
    assert sum(s["to"] - s["from"] for s in json.loads(out.out)["scaleUps"]) in (1, 2)


@pytest.mark.parametrize(("value", "words"), [
    ("a:b:c:d", "expected [TYPE:]MIN:MAX"), (":0:8", "expected [TYPE:]MIN:MAX"), ("t4:9:8", "MIN <= MAX")])
def test_a_gpu_limit_the_autoscaler_would_refuse_exits_2(tmp_path, value, words):
    out = check(tmp_path, [node("cpu-0", gpus=0)], [{"name": "a", "maxSize": 2, "template": template()}],
                [deployment("infer", 1)], "--gpu-total", value)
    assert out.code == 2 and words in out.err
    out = check(tmp_path, [node("cpu-0", gpus=0)], [{"name": "a", "maxSize": 2, "template": template()}],
                [deployment("infer", 1)], "--gpu-total", "t4:0:8", "--gpu-total", "t4:0:9")
    assert out.code == 2 and "'t4' is limited twice" in out.err


def test_pods_below_the_expendable_cutoff_are_not_scaled_for(tmp_path):
    low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "scavenger"},
           "value": -100}
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 3, "template": {"like": "gpu-0"}}],
                [low, deployment("batch", 6, priorityClassName="scavenger")])
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [] and doc["unschedulable"][0]["reason"] == "never"
    assert "expendable" in doc["unschedulable"][0]["groups"]["a100"]


def test_the_daemonset_pods_a_new_node_runs_count_on_its_template(tmp_path):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
              "containers": [{"name": "a", "image": "a", "resources": {"requests": {"cpu": "12"}}}]}}}}
    # A group scaled from zero: its template's 16 cpu hold the agent's 12 first, so two 2-cpu pods fit a new
    # node, and 4 pods need two nodes where GPUs alone would need one.
    out = check(tmp_path, [node("cpu-0", gpus=0)], [{"name": "a100", "maxSize": 10, "template": template(
        gpus=4, cpu="16", memory="64Gi")}], [ds, deployment("infer", 4, cpu="2")])
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [{"nodeGroup": "a100", "from": 0, "to": 2}]
    assert out.code == 0


def test_a_group_with_a_node_is_templated_from_that_node_not_its_declared_template(tmp_path):
    # The declared template says 8 GPUs; the group's node has 4, and the autoscaler copies the node.
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 10, "template": template(gpus=8)}], [deployment("infer", 12)])
    assert json.loads(out.out)["scaleUps"] == [{"nodeGroup": "a100", "from": 1, "to": 3}]


def test_text_output_says_what_the_autoscaler_adds_and_what_runs_after(tmp_path):
    nodes_file, groups_file, app = write(tmp_path, [node("gpu-0", labels=A100)],
                                         [{"name": "a100", "maxSize": 3, "template": {"like": "gpu-0"}}],
                                         [deployment("infer", 6)])
    out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app)
    assert out.code == 0
    assert "scale-up: a100 1 -> 2 (+1 node(s))" in out.out
    assert "after scale-up: Deployment/ml/infer runs (a100: 2 pod(s) on 1 new node(s))" in out.out


def test_pods_placed_at_first_stay_where_they_are_when_the_pending_ones_are_placed_again(tmp_path):
    # 8 run on two nodes; only the 2 Pending ones go to the added node (not all 10 spread again).
    out = check(tmp_path, [node("gpu-0", labels=A100), node("gpu-1", labels=A100)],
                [{"name": "a100", "maxSize": 5, "template": {"like": "gpu-0"}}], [deployment("infer", 10)])
    doc = json.loads(out.out)
    assert out.code == 0 and doc["scaleUps"] == [{"nodeGroup": "a100", "from": 2, "to": 3}]
    assert doc["scaledFor"][0]["scaleUp"] == [{"nodeGroup": "a100", "nodes": 1, "pods": 2}]


def test_a_group_whose_nodes_are_still_on_their_way_unasked_is_not_scaled_up_but_its_nodes_take_pods(tmp_path):
    # h100 has one node on its way and none registered: the autoscaler counts it unhealthy. Its coming node
    # takes 8 of the 10 pods; the other 2 stay Pending, and the group says why it does not grow.
    groups = [{"name": "h100", "maxSize": 5, "targetSize": 1, "template": template(gpus=8)}]
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", 10)])
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [] and out.code == 1
    [u] = doc["unschedulable"]
    assert u["scaleUp"] == [{"nodeGroup": "h100", "pods": 8}] and u["stoppedBy"] == "h100: not ready for scale-up"


def test_the_room_of_expendable_pods_counts_as_free_as_the_autoscaler_counts_it(tmp_path):
    low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "scavenger"},
           "value": -100}
    # The scavenger's 4 pods fill gpu-0; the autoscaler counts them preemptible, so the 4 inference pods need
    # no new node, and the group stays as it is.
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 3, "template": {"like": "gpu-0"}}],
                [low, deployment("batch", 4, priorityClassName="scavenger"), deployment("infer", 4)])
    doc = json.loads(out.out)
    assert doc["scaleUps"] == []
    assert [u["workload"] for u in doc["unschedulable"]] == []
    assert doc["scaledFor"] == [{"workload": "Deployment/ml/infer", "scaleUp": [], "onExpendableRoom": 4}]


def test_a_workload_placed_only_in_part_on_expendable_room_reads_partly_with_the_pods_placed_there(tmp_path):
    low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "scavenger"},
           "value": -100}
    # The scavenger's 4 pods fill gpu-0 and the group is at its max: 4 of the 6 inference pods run where the
    # scavenger is preempted, the other 2 stay Pending; the verdict is partly, not never.
    out = check(tmp_path, [node("gpu-0", labels=A100)],
                [{"name": "a100", "maxSize": 1, "template": {"like": "gpu-0"}}],
                [low, deployment("batch", 4, priorityClassName="scavenger"), deployment("infer", 6)])
    assert out.code == 1
    [u] = json.loads(out.out)["unschedulable"]
    assert (u["reason"], u["pending"], u["scaleUp"], u["onExpendableRoom"]) == ("partly", 2, [], 4)
    assert u["stoppedBy"] == "a100: max node group size reached"
    text = run("check", "--nodes", tmp_path / "nodes.json", "--node-groups", tmp_path / "groups.yaml",
               tmp_path / "app.yaml").out
    assert "Scale-up places 4 of its 6 Pending pod(s)" in text and "partly" in text


def test_a_note_says_where_another_expander_would_pick_another_group(tmp_path):
    groups = [{"name": "big", "maxSize": 3, "template": template(gpus=8, cpu="96", memory="1000Gi")},
              {"name": "small", "maxSize": 1, "template": template(gpus=2, cpu="8", memory="32Gi")}]
    out = check(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", 6)])
    doc = json.loads(out.out)
    # least-waste takes the small node first (2 pods, little waste); most-pods would take the big one (6 pods).
    assert doc["scaleUps"][0] == {"nodeGroup": "small", "from": 0, "to": 1}
    assert doc["otherExpanders"][0] == {"picked": "small", "expander": "most-pods", "wouldPick": "big"}
    nodes_file, groups_file, app = write(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", 6)])
    text = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app).out
    assert "note: --expander most-pods would pick big where least-waste picked small" in text


def test_nodes_on_their_way_take_pods_one_a_node_per_round_as_the_autoscaler_walks_them(tmp_path):
    # Two 32-cpu / 128 GiB nodes on their way (the group's one node is full). The memory-heavy pair spreads one
    # a node, which leaves both nodes room for the cpu-heavy pods; filling one node first would strand one.
    cpu = {"gpufleet.dev/node-group": "cpu"}
    groups = [{"name": "cpu", "maxSize": 3, "targetSize": 3, "template": {"like": "cpu-0"}}]
    heavy = deployment("heavy", 2, gpus=0, cpu="8", memory="64Gi")
    many = deployment("many", 9, gpus=0, cpu="4", memory="4Gi")
    filler = deployment("filler", 1, gpus=0, cpu="32", memory="128Gi")
    out = check(tmp_path, [node("cpu-0", gpus=0, cpu="32", memory="128Gi", labels=cpu)], groups,
                [filler, heavy, many])
    doc = json.loads(out.out)
    assert doc["unschedulable"] == [] and doc["scaleUps"] == [] and out.code == 0


def test_millions_of_pending_pods_stop_at_the_largest_supported_cluster_and_say_so(tmp_path):
    # 10 million one-GPU pods on a group of max size a billion: the simulation adds 5,000 nodes of 8 GPUs and
    # names that bound, instead of adding nodes by the million.
    out = check(tmp_path, [node("cpu-0", gpus=0)],
                [{"name": "a100", "maxSize": 1_000_000_000, "template": template(gpus=8)}],
                [deployment("many", 10_000_000)])
    assert out.code == 1
    doc = json.loads(out.out)
    assert doc["scaleUps"] == [{"nodeGroup": "a100", "from": 0, "to": 5000}]
    [u] = doc["unschedulable"]
    assert (u["reason"], u["pending"]) == ("partly", 10_000_000 - 40_000)
    assert "at most 5,000 nodes" in u["stoppedBy"]
