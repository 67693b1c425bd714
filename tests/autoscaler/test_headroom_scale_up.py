"""`gpufleet headroom --node-groups`: how many more fit now, and with every node group grown to its max size."""

from __future__ import annotations

import json

import pytest

from tests.autoscaler.fleet import deployment, node, template, write
from tests.cli.run_inprocess import run

A100 = {"gpufleet.dev/node-group": "a100"}


def test_headroom_answers_now_and_with_the_groups_grown_to_their_max(tmp_path):
    groups = [{"name": "a100", "maxSize": 3, "template": {"like": "gpu-0"}},
              {"name": "tainted", "maxSize": 4, "template": template(
                  taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])},
              {"name": "sick", "maxSize": 9, "targetSize": 2, "template": template(gpus=8)}]
    nodes_file, groups_file, probe = write(tmp_path, [node("gpu-0", labels=A100)], groups, [deployment("p", 1)])
    out = run("headroom", "--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file, "--json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert doc["instances"] == 4
    # a100 grows by 2 (8 more GPUs); the tainted group's nodes take none; the unhealthy group gets only the 2
    # nodes on their way (16 GPUs), not its max.
    assert doc["withScaleUp"]["nodesAdded"] == {"a100": 2, "tainted": 4, "sick": 2}
    assert doc["withScaleUp"]["instances"] == 4 + 8 + 16
    text = run("headroom", "--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file).out
    assert "With scale-up (every node group at its max size: a100 +2, tainted +4, sick +2): 28 more instance(s)." \
        in text


def test_headroom_refuses_a_broken_node_groups_file_like_check(tmp_path):
    nodes_file, groups_file, probe = write(tmp_path, [node("gpu-0")], "- {name: a}", [deployment("p", 1)])
    out = run("headroom", "--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file)
    assert out.code == 2 and "[0]: a: missing maxSize, template" in out.err


def _ten_nodes_and_groups(tmp_path, groups):
    """Ten 4-GPU nodes, the first of group a100 (so a100 at max 10 could add 9), and a 1-GPU probe."""
    nodes = [node(f"gpu-{i}", labels=A100 if i == 0 else {}) for i in range(10)]
    return write(tmp_path, nodes, groups, [deployment("p", 1)])


def _with_scale_up(*args):
    out = run("headroom", *args, "--json")
    assert out.code == 0, out.err
    return json.loads(out.out)["withScaleUp"]


def test_a_group_grows_only_as_far_as_the_cluster_node_cap_allows_and_the_cap_is_named(tmp_path):
    nodes_file, groups_file, probe = _ten_nodes_and_groups(
        tmp_path, [{"name": "a100", "maxSize": 10, "template": {"like": "gpu-0"}}])
    args = ("--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file, "--max-nodes-total", "12")
    doc = _with_scale_up(*args)
    assert doc["nodesAdded"] == {"a100": 2} and doc["nodesAtMaxSize"] == {"a100": 9}
    assert doc["cappedBy"] == ["--max-nodes-total 12"]
    assert doc["instances"] == 40 + 2 * 4
    text = run("headroom", *args).out
    assert "grown as far as --max-nodes-total 12 allow" in text and "a100 +2 of 9" in text
    assert "at most 48 more instance(s)" in text
    # a cap with room to spare binds nothing: the answer is the one without it
    assert _with_scale_up(*args[:-1], "40") == {**_with_scale_up(*args[:-2]), "cappedBy": []}


def test_the_capped_room_goes_first_to_the_group_whose_new_node_holds_the_most_copies(tmp_path):
    groups = [{"name": "a100", "maxSize": 10, "template": {"like": "gpu-0"}},
              {"name": "h100", "maxSize": 3, "template": template(gpus=8)}]
    nodes_file, groups_file, probe = _ten_nodes_and_groups(tmp_path, groups)
    doc = _with_scale_up("--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file,
                         "--max-nodes-total", "12")
    assert doc["nodesAdded"] == {"h100": 2}  # 8 copies a node against a100's 4, though a100 comes first
    assert doc["instances"] == 40 + 2 * 8


def test_the_gpu_limit_caps_the_gpus_the_groups_add_and_is_named(tmp_path):
    nodes_file, groups_file, probe = _ten_nodes_and_groups(
        tmp_path, [{"name": "a100", "maxSize": 10, "template": {"like": "gpu-0"}}])
    # 40 GPUs now: room for 8 more, two 4-GPU nodes
    doc = _with_scale_up("--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file,
                         "--gpu-total", "0:48")
    assert doc["nodesAdded"] == {"a100": 2} and doc["cappedBy"] == ["--gpu-total 0:48"]
    assert doc["instances"] == 48


def test_nodes_on_their_way_count_against_the_cap_and_stay_whatever_it_says(tmp_path):
    nodes_file, groups_file, probe = _ten_nodes_and_groups(
        tmp_path, [{"name": "a100", "maxSize": 10, "targetSize": 3, "template": {"like": "gpu-0"}}])
    doc = _with_scale_up("--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file,
                         "--max-nodes-total", "11")
    assert doc["nodesAdded"] == {"a100": 2}  # the 2 on their way, none more: the cluster is already at 12
    assert doc["cappedBy"] == ["--max-nodes-total 11"]


@pytest.mark.parametrize(("option", "words"), [
    (("--gpu-total", "8:4"), "--gpu-total '8:4': expected [TYPE:]MIN:MAX"),
    (("--gpu-total", "lots"), "--gpu-total 'lots': expected [TYPE:]MIN:MAX"),
    (("--max-nodes-total", "-1"), "-1 is not in the range x>=0"),
    (("--expander", "most-pods"), "No such option: --expander"),
])
def test_bad_cap_values_exit_2_naming_the_value(tmp_path, option, words):
    nodes_file, groups_file, probe = _ten_nodes_and_groups(
        tmp_path, [{"name": "a100", "maxSize": 10, "template": {"like": "gpu-0"}}])
    out = run("headroom", "--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file, *option)
    assert out.code == 2 and words in out.err and not out.out


def test_caps_without_node_groups_exit_2(tmp_path):
    nodes_file, _, probe = _ten_nodes_and_groups(tmp_path, [])
    out = run("headroom", "--probe", probe, "--nodes", nodes_file, "--max-nodes-total", "12")
    assert out.code == 2 and "--max-nodes-total go(es) with --node-groups FILE" in out.err


def test_a_group_max_size_of_millions_grows_no_further_than_the_largest_supported_cluster(tmp_path):
    # Built node by node, a max size of a billion never answered; the growth stops at 5,000 nodes added, and
    # the answer says "at most" and names that bound.
    groups = [{"name": "a100", "maxSize": 1_000_000_000, "template": template(gpus=8)}]
    nodes_file, groups_file, probe = write(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("p", 1)])
    out = run("headroom", "--probe", probe, "--nodes", nodes_file, "--node-groups", groups_file, "--json")
    assert out.code == 0, out.err
    grown = json.loads(out.out)["withScaleUp"]
    assert grown["nodesAdded"] == {"a100": 5000} and grown["instances"] == 5000 * 8
    assert grown["cappedBy"] == ["5,000 nodes added (Kubernetes' largest supported cluster)"]
