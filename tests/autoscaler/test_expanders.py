"""`--expander` as cluster-autoscaler takes it: one expander or a chain (each narrows the options, the first to
leave one decides, random breaks what is left), with the priority expander's ConfigMap (`--priority-config`).
The behaviour was compared with cluster-autoscaler 1.34.5 on generated scenarios (docs/autoscaling.md)."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.autoscaler.fleet import deployment, node, template, write
from tests.cli.run_inprocess import run

# Both groups can hold the 2 pending pods: "small" on one node with the least waste, "big" on one node too.
GROUPS = [{"name": "gpu-big", "maxSize": 3, "template": template(gpus=8, cpu="96", memory="1000Gi")},
          {"name": "gpu-small", "maxSize": 3, "template": template(gpus=2, cpu="8", memory="32Gi")}]


def check(tmp_path, *extra, groups=GROUPS, replicas=2):
    nodes_file, groups_file, app = write(tmp_path, [node("cpu-0", gpus=0)], groups, [deployment("infer", replicas)])
    return run("check", "--nodes", nodes_file, "--node-groups", groups_file, app, "--json", *extra)


def grown(out) -> list[str]:
    assert out.code in (0, 1), out.err
    return [s["nodeGroup"] for s in json.loads(out.out)["scaleUps"]]


def configmap(tmp_path, priorities: dict | str, name: str = "cluster-autoscaler-priority-expander"):
    path = tmp_path / "prio.yaml"
    value = priorities if isinstance(priorities, str) else yaml.safe_dump(priorities)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "namespace": "kube-system"},
                                    "data": {"priorities": value}}))
    return path


def test_the_priority_expander_picks_the_group_of_the_highest_priority_over_least_waste(tmp_path):
    prio = configmap(tmp_path, {10: ["small"], 50: ["^gpu-big$"]})
    assert grown(check(tmp_path, "--expander", "priority,least-waste", "--priority-config", prio)) == ["gpu-big"]
    assert grown(check(tmp_path)) == ["gpu-small"]


def test_a_priority_expression_matches_anywhere_in_the_name_and_groups_matched_by_none_are_left_out(tmp_path):
    # "big" matches gpu-big unanchored; gpu-small matches no expression, so it is not used while another is.
    prio = tmp_path / "value.yaml"
    prio.write_text("5:\n  - big\n")
    assert grown(check(tmp_path, "--expander", "priority", "--priority-config", prio)) == ["gpu-big"]


def test_when_no_group_matches_the_priorities_the_next_expander_decides(tmp_path):
    prio = configmap(tmp_path, {10: ["^h100"]})
    assert grown(check(tmp_path, "--expander", "priority,least-waste", "--priority-config", prio)) == ["gpu-small"]


def test_least_nodes_picks_the_option_adding_fewest_nodes(tmp_path):
    # 6 pods of 1 GPU: gpu-big holds them on 1 node, gpu-small needs 3; least-waste prefers the small ones.
    assert grown(check(tmp_path, "--expander", "least-nodes", replicas=6)) == ["gpu-big"]
    assert grown(check(tmp_path, replicas=6)) == ["gpu-small"]


@pytest.mark.parametrize(("expander", "words"), [
    ("price", "'price' is not emulated"),
    ("least-wast", "'least-wast' is no expander"),
    ("random,least-waste", "'least-waste' comes after random"),
    ("most-pods,most-pods", "'most-pods' is given more than once"),
    ("priority", "needs --priority-config FILE"),
])
def test_an_expander_chain_the_autoscaler_refuses_exits_2_naming_why(tmp_path, expander, words):
    out = check(tmp_path, "--expander", expander)
    assert out.code == 2 and words in out.err, out.err


def test_a_priority_config_the_autoscaler_would_ignore_exits_2_naming_every_problem(tmp_path):
    prio = configmap(tmp_path, "10: ['(?=lookahead)', 7]\nhigh: [x]\n20: gpu\n")
    out = check(tmp_path, "--expander", "priority", "--priority-config", prio)
    assert out.code == 2
    assert "data.priorities.10[0]: '(?=lookahead)' is not a regular expression the autoscaler accepts" in out.err
    assert "10[1]: 7 is not a string" in out.err and "'high': a priority is an integer" in out.err
    assert "data.priorities.20: expected a list of regular expressions, got str" in out.err
    other = configmap(tmp_path, {1: ["x"]}, name="my-priorities")
    out = check(tmp_path, "--expander", "priority", "--priority-config", other)
    assert out.code == 2 and "reads only the ConfigMap named cluster-autoscaler-priority-expander" in out.err
    out = check(tmp_path, "--priority-config", other)
    assert out.code == 2 and "--priority-config goes with --expander priority" in out.err


@given(st.text(max_size=40))
def test_any_priority_config_text_is_read_or_refused_with_exit_2(tmp_path_factory, text):
    tmp_path = tmp_path_factory.mktemp("prio")
    prio = tmp_path / "prio.yaml"
    prio.write_text(text)
    out = check(tmp_path, "--expander", "priority,least-waste", "--priority-config", prio)
    assert out.code in (0, 2), out.err
    assert "Traceback" not in out.err
