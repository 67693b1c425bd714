"""What gpufleet passes to upstream charts and daemons must be what upstream accepts (the gpu-operator
chart has no values schema: an unknown key is silently ignored, so this test is the only guard)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import upstream_files
import yaml

from gpufleet.config.loading import load_stack
from gpufleet.nvidia import versions
from gpufleet.render import gpu_stack as r
from tests.conftest import ROOT

#: Every stack the repository ships (Pulumi.<stack>.yaml), aks and greed included.
SHIPPED_STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml"))



def operator_values() -> Path:
    return upstream_files.values_file(versions.GPU_OPERATOR_CHART, versions.GPU_OPERATOR_VERSION)


def plugin_values() -> Path:
    return upstream_files.values_file(versions.DEVICE_PLUGIN_CHART, versions.DEVICE_PLUGIN_VERSION)

#: Keys a chart accepts without declaring them in values.yaml: the NFD subchart's condition
#: (`condition: nfd.enabled,gfd.enabled` in nvidia-device-plugin's Chart.yaml).
UNDECLARED_BUT_ACCEPTED = {("nfd", "enabled")}


def key_paths(values: Any, prefix: tuple = ()) -> set[tuple]:
    """Every mapping key path in a values document, down to leaves, lists and empty maps."""
    paths = set()
    if isinstance(values, dict):
        for k, v in values.items():
            paths.add(prefix + (k,))
            paths |= key_paths(v, prefix + (k,))
    return paths


def unknown_paths(generated: dict, upstream_file: Path) -> list[str]:
    upstream = yaml.safe_load(upstream_file.read_text())
    allowed = key_paths(upstream)
    unknown = []
    for path in sorted(key_paths(generated)):
        if path in allowed or path in UNDECLARED_BUT_ACCEPTED:
            continue
        # Below a key upstream declares as a free-form map or list (e.g. annotations: {}, env: []) anything goes.
        parent_values = upstream
        free = False
        for i, k in enumerate(path):
            node = parent_values.get(k) if isinstance(parent_values, dict) else None
            if i < len(path) - 1 and (node == {} or isinstance(node, list)):
                free = True
                break
            parent_values = node
        if not free:
            unknown.append(".".join(path))
    return unknown


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_operator_values_use_only_keys_the_pinned_chart_declares(stack):
    cfg = load_stack(stack, ROOT).config
    assert unknown_paths(r.operator_values(cfg), operator_values()) == []


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_device_plugin_values_use_only_keys_the_pinned_chart_declares(stack):
    cfg = load_stack(stack, ROOT).config
    assert unknown_paths(r.device_plugin_values(cfg), plugin_values()) == []


def test_key_check_catches_a_removed_operator_key():
    assert unknown_paths({"operator": {"defaultRuntime": "containerd"}},
                         operator_values()) == ["operator.defaultRuntime"]


def test_operator_chart_version_matches_the_upstream_copy():
    cfg = load_stack("dev", ROOT).config
    assert cfg.operator.chart_version == "v26.7.0" and "v26.7.0" in operator_values().name


def test_operator_image_pins_match_upstream_values():
    upstream = yaml.safe_load(operator_values().read_text())
    from gpufleet.nvidia import versions

    assert upstream["driver"]["version"] == versions.DRIVER_VERSION
    mig = upstream["migManager"]
    assert f"{mig['repository']}/{mig['image']}:{mig['version']}" == versions.MIG_MANAGER_IMAGE


def test_generated_mig_config_parses_like_upstream_and_uses_known_profiles():
    cfg = load_stack("mig", ROOT).config
    doc = yaml.safe_load(r.mig_config_data(cfg)["config.yaml"])
    upstream_cm = yaml.safe_load(upstream_files.mig_parted_default_config(versions.GPU_OPERATOR_VERSION).read_text())
    upstream = yaml.safe_load(upstream_cm["data"]["config.yaml"])
    assert doc["version"] == upstream["version"] == "v1"
    assert doc["mig-configs"]["all-disabled"] == upstream["mig-configs"]["all-disabled"]
    known = {p for entries in upstream["mig-configs"].values() for e in entries for p in (e.get("mig-devices") or {})}
    used = {p for entries in doc["mig-configs"].values() for e in entries for p in (e.get("mig-devices") or {})}
    assert used and used <= known
    entry = doc["mig-configs"]["all-1g.5gb"][0]
    assert set(entry) == {"devices", "mig-enabled", "mig-devices"}  # mig-parted's own key spelling


def test_device_plugin_config_is_the_plugins_v1_format():
    cfg = load_stack("dev", ROOT).config
    data = r.sharing_config_data(cfg)
    doc = yaml.safe_load(data["t4-mps"])
    assert doc == {"version": "v1", "flags": {"migStrategy": "none"},
                   "sharing": {"mps": {"renameByDefault": False,
                                       "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}}}
