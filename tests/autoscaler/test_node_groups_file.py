"""`--node-groups FILE`: every mistake in the file exits 2, naming the file, the entry and field, the bad value
and what is allowed, all at once; nothing else crashes it."""

from __future__ import annotations

import json

import yaml
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.autoscaler.nodegroups import read_node_groups, sanitized
from gpufleet.capacity.kubectl import node_from_object
from gpufleet.errors import InputError
from tests.autoscaler.fleet import deployment, node, template, write
from tests.cli.run_inprocess import run


def errors_of(tmp_path, text: str, nodes=None) -> str:
    nodes_file, groups_file, app = write(tmp_path, nodes or [node("gpu-0")], text, [deployment("infer", 1)])
    out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app)
    assert out.code == 2, out
    assert "Traceback" not in out.err
    return out.err


def test_every_mistake_is_named_at_once_with_the_entry_the_field_and_what_is_allowed(tmp_path):
    text = yaml.safe_dump([
        {"name": "a", "maxsize": 3, "template": {"like": "gpu-0"}},
        {"name": "b", "minSize": 4, "maxSize": 2, "template": {"like": "gpu-0"}},
        {"name": "c", "maxSize": "ten", "template": {"like": "gpu-9"}},
        {"name": "Bad_Name", "maxSize": 1, "template": {"like": "gpu-0"}},
    ])
    err = errors_of(tmp_path, text)
    assert "groups.yaml: [0].maxsize: unknown field (did you mean maxSize?); allowed: name, minSize" in err
    assert "[1]: b: maxSize 2 is below minSize 4" in err
    assert "[2].maxSize: 'ten' is not an integer" in err
    assert "[2].template.like: no node 'gpu-9' in the fleet (nodes: gpu-0)" in err
    assert "[3].name: 'Bad_Name' is not a node group name" in err


def test_a_file_that_is_not_a_list_of_groups_is_refused_with_what_it_should_be(tmp_path):
    for text, words in (("", "empty: expected a list of node groups"), ("a: [", "not YAML"),
                        ("just text", "expected a list of node groups (name, minSize, maxSize, targetSize, "
                                      "template), got str"), ("- 3", "[0]: expected a mapping")):
        assert words in errors_of(tmp_path, text)


def test_a_template_that_holds_nothing_or_a_target_above_max_is_refused(tmp_path):
    text = yaml.safe_dump([{"name": "a", "maxSize": 1, "template": {"metadata": {"labels": {"x": "y"}}}},
                           {"name": "b", "maxSize": 1, "targetSize": 2, "template": template()},
                           {"name": "b", "maxSize": 1, "template": template()}])
    err = errors_of(tmp_path, text)
    assert "[0].template: the template has no status.allocatable or status.capacity" in err
    assert "[1].targetSize: 2 is above maxSize 1" in err
    assert "[2].name: 'b' is also node group [1]" in err


def test_options_that_need_node_groups_or_a_valid_value_exit_2(tmp_path):
    nodes_file, groups_file, app = write(tmp_path, [node("gpu-0")],
                                         [{"name": "a", "maxSize": 1, "template": {"like": "gpu-0"}}],
                                         [deployment("infer", 1)])
    out = run("check", "--nodes", nodes_file, app, "--expander", "most-pods")
    assert out.code == 2 and "--expander go(es) with --node-groups FILE" in out.err
    out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app, "--expander", "price")
    assert out.code == 2 and "'price' is not emulated" in out.err
    assert "allowed: least-waste, most-pods, least-nodes, priority, random" in out.err
    out = run("check", "--nodes", nodes_file, "--node-groups", groups_file, app, "--gpu-total", "8")
    assert out.code == 2 and "expected [TYPE:]MIN:MAX" in out.err
    out = run("check", "--nodes", nodes_file, "--node-groups", tmp_path / "missing.yaml", app)
    assert out.code == 2 and "missing.yaml: cannot read" in out.err


def test_a_template_copied_from_a_node_is_sanitized_as_the_autoscaler_does():
    live = node_from_object(node("gpu-7", labels={"kubernetes.io/hostname": "gpu-7", "pool": "a"}, taints=[
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"},
        {"key": "startup-taint.cluster-autoscaler.kubernetes.io/driver", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    t = sanitized(live, "a100")
    assert t.name == "template-node-for-a100" and t.labels["kubernetes.io/hostname"] == t.name
    assert t.labels["pool"] == "a" and [x.key for x in t.taints] == ["dedicated"]


def test_a_groups_nodes_are_those_with_its_label_or_its_pool_label_and_the_rest_of_target_is_upcoming(tmp_path):
    nodes = [node_from_object(n) for n in (
        node("a-1", labels={"kubernetes.azure.com/agentpool": "gpu"}),
        node("a-2", labels={"kubernetes.azure.com/agentpool": "gpu"}),
        node("b-1", labels={"gpufleet.dev/node-group": "other"}))]
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump([{"name": "gpu", "maxSize": 5, "targetSize": 3, "template": {"like": "a-1"}},
                                    {"name": "other", "maxSize": 5, "template": {"like": "b-1"}}]))
    gpu, other = read_node_groups(path, nodes)
    assert (gpu.members, gpu.target_size, gpu.upcoming) == (["a-1", "a-2"], 3, 1)
    assert (other.members, other.target_size, other.upcoming) == (["b-1"], 1, 0)


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=4), st.just("gpu-0"))
_value = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.sampled_from(
                                                           ["name", "minSize", "maxSize", "targetSize", "template",
                                                            "like", "status", "allocatable", "metadata", "x"]),
                                                           inner, max_size=4)), max_leaves=12)


@given(_value)
def test_no_node_groups_file_crashes_the_reader(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("g") / "groups.yaml"
    path.write_text(json.dumps(value))
    try:
        groups = read_node_groups(path, [node_from_object(node("gpu-0"))])
    except InputError as e:
        assert str(e) and "Traceback" not in str(e)
    else:
        assert groups and all(g.max_size >= g.min_size for g in groups)
