"""`gpufleet headroom --node-groups`: how many more fit now, and with every node group grown to its max size."""

from __future__ import annotations

import json

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
