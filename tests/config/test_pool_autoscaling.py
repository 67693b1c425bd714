"""`nodePools[].autoscaling: {min, max}`: a pool the autoscaler grows from the nodes it has now (`count`, the listed
`nodes`, else min) up to max; every contradiction is an error naming the YAML path and what is allowed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.config.loading import parse_sections
from gpufleet.config.schema import stack_file_schema
from gpufleet.errors import ConfigError


def _pool(**fields) -> dict:
    return {"name": "a100", "gpu": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8}, **fields}


def _issues(*pools: dict) -> list[tuple[str, str]]:
    try:
        parse_sections({"mode": "standalone", "nodePools": list(pools)}, "Pulumi.test.yaml")
    except ConfigError as e:
        return [(i.path, i.message) for i in e.issues]
    return []


def test_pool_without_count_has_its_min_nodes_now_and_may_grow_to_max():
    cfg = parse_sections({"mode": "standalone", "nodePools": [_pool(autoscaling={"min": 1, "max": 4})]},
                         "Pulumi.test.yaml")
    [pool] = cfg.node_pools
    assert (pool.node_count(), pool.most_nodes()) == (1, 4)


def test_listed_nodes_are_the_nodes_the_pool_has_now():
    cfg = parse_sections({"mode": "standalone", "nodePools": [
        _pool(nodes=["gpu-a", "gpu-b"], autoscaling={"min": 0, "max": 5})]}, "Pulumi.test.yaml")
    assert (cfg.node_pools[0].node_count(), cfg.node_pools[0].most_nodes()) == (2, 5)


@pytest.mark.parametrize(("pool", "path", "words"), [
    pytest.param(_pool(autoscaling={"min": 3, "max": 2}), "gpufleet:nodePools[0].autoscaling",
                 ["min 3 is above max 2", "allowed: min <= max"], id="min above max"),
    pytest.param(_pool(autoscaling={"min": -1, "max": 2}), "gpufleet:nodePools[0].autoscaling.min",
                 ["greater than or equal to 0", "-1"], id="negative min"),
    pytest.param(_pool(autoscaling={"min": 0, "max": 0}), "gpufleet:nodePools[0].autoscaling.max",
                 ["greater than or equal to 1", "0"], id="max zero"),
    pytest.param(_pool(autoscaling={"min": 0, "max": 5001}), "gpufleet:nodePools[0].autoscaling.max",
                 ["less than or equal to 5000", "5001"], id="max past the largest cluster"),
    pytest.param(_pool(autoscaling={"min": 0}), "gpufleet:nodePools[0].autoscaling.max", ["required"],
                 id="max missing"),
    pytest.param(_pool(autoscaling={"min": 0, "max": 2, "maxSize": 3}), "gpufleet:nodePools[0].autoscaling.maxSize",
                 ["unknown key", "allowed: min, max"], id="node group file spelling"),
    pytest.param(_pool(count=5, autoscaling={"min": 0, "max": 4}), "gpufleet:nodePools[0].count",
                 ["5 node(s) now is above autoscaling.max 4", "allowed: 0 to 4"], id="count above max"),
    pytest.param(_pool(count=1, autoscaling={"min": 2, "max": 4}), "gpufleet:nodePools[0].count",
                 ["1 node(s) now is below autoscaling.min 2", "allowed: 2 to 4"], id="count below min"),
    pytest.param(_pool(nodes=["a", "b", "c"], autoscaling={"min": 0, "max": 2}), "gpufleet:nodePools[0].nodes",
                 ["3 node(s) now is above autoscaling.max 2"], id="more listed nodes than max"),
    pytest.param(_pool(nodes=["a", "b"], count=3, autoscaling={"min": 0, "max": 4}), "gpufleet:nodePools[0].count",
                 ["3 while `nodes` lists 2", "allowed: 2, or no count"], id="count and nodes disagree"),
])
def test_contradiction_is_an_error_at_its_path(pool, path, words):
    issues = _issues(pool)
    messages = [m for p, m in issues if p == path]
    assert messages, issues
    for word in words:
        assert any(word in m for m in messages), (word, messages)


def test_every_pools_contradictions_are_reported_at_once():
    issues = _issues(_pool(nodes=["a", "b", "c"], count=1, autoscaling={"min": 0, "max": 2}),
                     {**_pool(count=0, autoscaling={"min": 1, "max": 2}), "name": "b"})
    assert [p for p, _ in issues] == ["gpufleet:nodePools[0].count", "gpufleet:nodePools[0].nodes",
                                      "gpufleet:nodePools[1].count"]


@given(low=st.integers(-2, 6), high=st.integers(-1, 6), count=st.none() | st.integers(0, 7))
def test_bounds_and_count_pass_exactly_when_they_agree(low, high, count):
    fields = {"autoscaling": {"min": low, "max": high}, **({"count": count} if count is not None else {})}
    issues = _issues(_pool(**fields))
    valid = 0 <= low <= high and high >= 1 and (count is None or low <= count <= high)
    assert (issues == []) == valid, issues
    assert all(p.startswith("gpufleet:nodePools[0]") for p, _ in issues)


def test_schema_offers_the_autoscaling_bounds():
    schema = stack_file_schema()
    pool = schema["$defs"]["NodePool"]["properties"]
    bounds = schema["$defs"][pool["autoscaling"]["anyOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert set(bounds["properties"]) == {"min", "max"}
    assert (bounds["properties"]["min"]["minimum"], bounds["properties"]["max"]["minimum"]) == (0, 1)
    assert "autoscaling" in schema["$defs"]["GpuPool"]["properties"]
