"""A GPU has one set of media engines: a geometry may hold at most one `+me` instance per GPU."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.config.loading import parse_sections
from gpufleet.errors import ConfigError
from gpufleet.nvidia.mig_profiles import TABLES, check_geometry


def a30_stack(devices: dict[str, int]) -> dict:
    return {
        "mode": "operator",
        "devicePlugin": {"migStrategy": "mixed"},
        "mig": {"geometries": {"media": [{"devices": "all", "mig-enabled": True, "mig-devices": devices}]}},
        "nodePools": [{"name": "a30", "nodes": ["n0"], "gpu": {"product": "NVIDIA-A30", "count": 1},
                       "migGeometry": "media"}],
    }


def test_two_different_media_extension_profiles_on_one_gpu_are_rejected_with_path_and_profiles():
    with pytest.raises(ConfigError) as exc:
        parse_sections(a30_stack({"1g.6gb+me": 1, "2g.12gb+me": 1}), "Pulumi.t.yaml")
    lines = [f"{i.path}: {i.message}" for i in exc.value.issues]
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpufleet:mig.geometries.media[0].mig-devices: ")
    assert "'1g.6gb+me'" in lines[0] and "'2g.12gb+me'" in lines[0] and "at most 1" in lines[0]


def test_one_media_extension_instance_beside_plain_instances_is_accepted():
    cfg = parse_sections(a30_stack({"1g.6gb+me": 1, "1g.6gb": 1, "2g.12gb": 1}), "Pulumi.t.yaml")
    assert cfg.mig_profiles_of_pool(cfg.pool("a30")) == {"1g.6gb+me": 1, "1g.6gb": 1, "2g.12gb": 1}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_product_family_allows_one_media_extension_instance_and_no_second(table):
    me = sorted(p for p in TABLES[table].profiles if "+me" in p)
    assert me, f"{table} has a +me profile"
    assert check_geometry(TABLES[table], {me[0]: 1}) == []
    twice = check_geometry(TABLES[table], {me[0]: 2})
    assert twice and "at most 1" in twice[0]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_accepted_geometry_holds_more_than_one_media_extension_instance(data):
    table = TABLES[data.draw(st.sampled_from(sorted(TABLES)))]
    devices = {name: data.draw(st.integers(0, 2), label=name) for name in table.profiles}
    if not check_geometry(table, devices):
        assert sum(c for n, c in devices.items() if "+me" in n) <= 1
