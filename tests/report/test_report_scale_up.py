"""`gpufleet report --node-groups`: the nodes cluster-autoscaler adds, drawn apart per node group with the
pods placed on them, and the workloads' verdicts after scale-up, as `check --node-groups` gives them."""

from __future__ import annotations

import re

import pytest

from tests.autoscaler.fleet import deployment, node, template, write
from tests.cli.run_inprocess import run

A100 = {"gpufleet.dev/node-group": "a100"}
T4 = {"nvidia.com/gpu.product": "Tesla-T4"}


def _inputs(tmp_path, groups=None):
    """gpu-0 (4 GPUs) of group a100, which may grow by one node; a T4 group from zero. `infer` wants 12 pods on
    a100 (4 now, 4 on the added node, 4 stopped by its max size); `small` 2 T4 pods (after scale-up); `huge`
    one 16-GPU pod (no group helps)."""
    groups = groups or [{"name": "a100", "maxSize": 2, "template": {"like": "gpu-0"}},
                        {"name": "t4", "maxSize": 3, "template": template(gpus=1, labels=T4)}]
    return write(tmp_path, [node("gpu-0", labels=A100)], groups,
                 [deployment("infer", 12, nodeSelector=A100), deployment("small", 2, nodeSelector=T4),
                  deployment("huge", 1, gpus=16)])


def _section(html: str, name: str) -> str:
    found = re.search(rf'<section id="{name}">(.*?)</section>', html, re.S)
    assert found is not None, f"no section {name}"
    return found.group(1)


def _verdicts(html: str) -> dict[str, str]:
    """workload -> the verdict cell of its row in the Workloads table."""
    rows = re.findall(r'</span>([^<]+)</td>\n<td>.*?\n<td class="verdict [^"]*">([^<]*)</td>',
                      _section(html, "workloads"), re.S)
    return dict(rows)



def test_report_draws_the_nodes_the_autoscaler_adds_apart_per_group_with_their_pods(tmp_path):
    nodes_file, groups_file, app = _inputs(tmp_path)
    page, summary = tmp_path / "r.html", tmp_path / "s.md"
    out = run("report", "--nodes", nodes_file, app, "--node-groups", groups_file, "--out", page,
              "--summary", summary)
    assert out.code == 0, out.err
    assert "1 node(s), 3 workload(s), 2 not running, 3 node(s) to be added by the autoscaler" in out.out
    html = page.read_text()
    added = _section(html, "scale-up")
    assert "Node group a100: 1 → 2 node(s)" in added and "Node group t4: 0 → 2 node(s)" in added
    # each group's new nodes under its heading, drawn as new, with the pods the scale-up puts there
    a100, t4 = added.split("Node group t4")
    assert "a100-new-0" in a100 and "4 pod(s) Deployment/ml/infer" in a100
    assert "t4-new-0, t4-new-1" in t4 and "1 pod(s) Deployment/ml/small" in t4 and "×2" in t4
    assert added.count('<svg class="node new"') == 2
    assert "scale-up: a100 1 -&gt; 2 (+1 node(s)), t4 0 -&gt; 2 (+2 node(s))" in added
    # the existing fleet's map holds the existing node only
    fleet = _section(html, "map")
    assert "gpu-0" in fleet and "-new-" not in fleet and 'class="node new"' not in fleet
    assert _verdicts(html) == {"Deployment/ml/infer": "partly (a100: max node group size reached)",
                               "Deployment/ml/small": "after scale-up", "Deployment/ml/huge": "never"}
    assert "4 / 12 <span" in html and "+4 after scale-up" in html
    running_later = html.split("Pending now, running after scale-up", 1)[1].split("</table>", 1)[0]
    assert "Deployment/ml/small" in running_later and "0 of 2 placed now, 2 more after scale-up" in running_later
    md = summary.read_text()
    assert "| a100 | 1 → 2 | 1 | 4 | 0 | `Deployment/ml/infer` 4 |" in md
    assert "| t4 | 0 → 2 | 2 | 2 | 0 | `Deployment/ml/small` 2 |" in md
    assert "- `Deployment/ml/infer` partly (a100: max node group size reached), 4 of 12 pod(s) placed, 4 more " \
           "after scale-up:" in md
    assert "- `Deployment/ml/huge` never, 0 of 1 pod(s) placed:" in md
    assert "- `Deployment/ml/small` 0 of 2 pod(s) placed now, 2 more after scale-up" in md


def test_without_node_groups_the_report_has_no_scale_up_and_draws_the_existing_nodes_alike(tmp_path):
    nodes_file, groups_file, app = _inputs(tmp_path)
    pages = {}
    for name, extra in (("plain", ()), ("grown", ("--node-groups", groups_file))):
        page = tmp_path / f"{name}.html"
        out = run("report", "--nodes", nodes_file, app, "--out", page, "--summary", tmp_path / f"{name}.md", *extra)
        assert out.code == 0, out.err
        pages[name] = page.read_text(), (tmp_path / f"{name}.md").read_text(), out.out
    html, md, said = pages["plain"]
    assert 'id="scale-up"' not in html and "to be added" not in html and "after-scale-up" not in html
    assert "Scale-up" not in md and "after scale-up" not in md and "to be added" not in said
    assert _verdicts(html) == {"Deployment/ml/infer": "partly", "Deployment/ml/small": "pending",
                               "Deployment/ml/huge": "pending"}
    # node groups add a section; the map of the nodes there are stays as it was
    assert _section(pages["grown"][0], "map") == _section(html, "map")


def test_nodes_on_their_way_are_drawn_with_those_the_scale_up_adds(tmp_path):
    groups = [{"name": "a100", "maxSize": 3, "targetSize": 2, "template": {"like": "gpu-0"}}]
    nodes_file, groups_file, app = _inputs(tmp_path, groups)
    page = tmp_path / "r.html"
    out = run("report", "--nodes", nodes_file, app, "--node-groups", groups_file, "--out", page)
    assert out.code == 0, out.err
    added = _section(page.read_text(), "scale-up")
    # 1 node registered, 1 on its way (target 2), 1 more added: 2 drawn, 8 of infer's pods on them
    assert "Node group a100: 2 → 3 node(s)" in added and "2 to be added" in added
    assert "1 added by this scale-up" in added and "1 already on their way" in added
    assert "a100-new-0, a100-new-1" in added and "4 pod(s) Deployment/ml/infer" in added


@pytest.mark.parametrize(("option", "words"), [
    (("--gpu-total", "8:4"), "--gpu-total '8:4': expected [TYPE:]MIN:MAX"),
    (("--expander", "cheapest"), "--expander 'cheapest'"),
    (("--max-nodes-total", "-2"), "-2 is not in the range x>=0"),
    (("--expendable-pods-priority-cutoff", "low"), "'low' is not a valid int"),
])
def test_bad_scale_up_options_exit_2_and_write_nothing(tmp_path, option, words):
    nodes_file, groups_file, app = _inputs(tmp_path)
    page = tmp_path / "r.html"
    out = run("report", "--nodes", nodes_file, app, "--node-groups", groups_file, "--out", page, *option)
    assert out.code == 2 and words in out.err
    assert not page.exists()


def test_scale_up_options_without_node_groups_or_a_broken_groups_file_exit_2(tmp_path):
    nodes_file, groups_file, app = _inputs(tmp_path)
    page = tmp_path / "r.html"
    out = run("report", "--nodes", nodes_file, app, "--out", page, "--max-nodes-total", "3")
    assert out.code == 2 and "--max-nodes-total go(es) with --node-groups FILE" in out.err
    groups_file.write_text("- {name: a100, maxSize: 2, template: {like: gpu-9}}\n")
    out = run("report", "--nodes", nodes_file, app, "--out", page, "--node-groups", groups_file)
    assert out.code == 2 and str(groups_file) in out.err and "gpu-9" in out.err
    assert not page.exists()


def test_the_cluster_caps_cap_the_report_as_they_cap_check(tmp_path):
    nodes_file, groups_file, app = _inputs(tmp_path)
    page = tmp_path / "r.html"
    out = run("report", "--nodes", nodes_file, app, "--node-groups", groups_file, "--out", page,
              "--max-nodes-total", "2")
    assert out.code == 0, out.err
    html = page.read_text()
    added = _section(html, "scale-up")
    assert "Node group a100: 1 → 2 node(s)" in added and "Node group t4" not in added
    assert _verdicts(html)["Deployment/ml/small"] == "never"


def test_a_stacks_autoscaled_pool_is_drawn_grown_and_options_without_any_group_exit_2(tmp_path):
    from tests.autoscaler.test_stack_node_groups import inference, pool, project

    root = project(tmp_path, [pool({"min": 1, "max": 3}, count=1)], [inference(3)])
    page = tmp_path / "r.html"
    out = run("report", "--stack", "small", "--project-dir", root, "--out", page)
    assert out.code == 0, out.err
    added = _section(page.read_text(), "scale-up")
    assert "Node group a100: 1 → 3 node(s)" in added and "a100-new-0, a100-new-1" in added
    assert _verdicts(page.read_text())["Deployment/ml/infer"] == "after scale-up"
    root = project(tmp_path, [pool()], [inference(3)])
    out = run("report", "--stack", "small", "--project-dir", root, "--out", page, "--force", "--gpu-total", "0:4")
    assert out.code == 2 and "stack small has no autoscaled node pool" in out.err
