"""Documented defaults are pinned, and `gpufleet schema` checks stack files the way the loader does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from gpufleet.config.loading import parse_sections
from gpufleet.config.schema import stack_file_schema
from tests.conftest import ROOT, SHIPPED_STACKS


def test_documented_defaults():
    cfg = parse_sections({}, "Pulumi.t.yaml")
    assert cfg.version == "v1alpha1" and cfg.mode == "operator"
    assert cfg.operator.chart_version == "v26.7.0" and cfg.operator.namespace == "gpu-operator"
    assert cfg.operator.driver.enabled is True and cfg.operator.driver.version == "595.91.07"
    assert cfg.operator.timeout_seconds == 900 and cfg.operator.cdi is True and cfg.operator.nfd is True
    assert cfg.operator.dcgm_exporter.enabled is True and cfg.operator.dcgm_exporter.service_monitor is False
    assert cfg.device_plugin.mig_strategy == "none" and cfg.device_plugin.chart_version == "0.20.0"
    assert cfg.device_plugin.namespace == "nvidia-device-plugin"
    assert cfg.mig.default == "all-disabled"
    assert cfg.cluster.runtime.preset == "containerd" and cfg.cluster.runtime.runtime_class == "nvidia"
    assert cfg.cluster.extended_resource_toleration is False


@pytest.mark.parametrize("preset, env", [
    ("containerd", []),
    ("k3s", [{"name": "CONTAINERD_CONFIG", "value": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"},
             {"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"}]),
    ("rke2", [{"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"}]),
    ("k0s", [{"name": "CONTAINERD_CONFIG", "value": "/etc/k0s/containerd.d/nvidia.toml"},
             {"name": "CONTAINERD_SOCKET", "value": "/run/k0s/containerd.sock"}]),
    ("microk8s", [{"name": "CONTAINERD_CONFIG", "value": "/var/snap/microk8s/current/args/containerd-template.toml"},
                  {"name": "CONTAINERD_SOCKET", "value": "/var/snap/microk8s/common/run/containerd.sock"},
                  {"name": "RUNTIME_CONFIG_SOURCE", "value": "file=/var/snap/microk8s/current/args/containerd.toml"}]),
])
def test_runtime_preset_sets_the_toolkit_env_of_its_distribution(preset, env):
    cfg = parse_sections({"cluster": {"runtime": {"preset": preset}}}, "Pulumi.t.yaml")
    assert cfg.cluster.runtime.toolkit_env() == env


def test_custom_runtime_paths_override_the_preset():
    cfg = parse_sections({"cluster": {"runtime": {"preset": "k3s", "socket": "/x.sock", "setAsDefault": True}}},
                         "Pulumi.t.yaml")
    env = {e["name"]: e["value"] for e in cfg.cluster.runtime.toolkit_env()}
    assert env["CONTAINERD_SOCKET"] == "/x.sock" and env["NVIDIA_RUNTIME_SET_AS_DEFAULT"] == "true"
    assert env["CONTAINERD_CONFIG"].startswith("/var/lib/rancher/k3s")


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_schema_accepts_every_shipped_stack_file(stack):
    doc = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    jsonschema.Draft202012Validator(stack_file_schema()).validate(doc)


def test_schema_rejects_a_misspelt_key_and_a_bad_enum():
    validator = jsonschema.Draft202012Validator(stack_file_schema())
    doc = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    doc["config"]["gpufleet:devicePlugin"]["migStrategy"] = "dual"
    doc["config"]["gpufleet:workloads"][0]["replica"] = 2
    messages = [e.message for e in validator.iter_errors(doc)]
    assert any("dual" in m for m in messages)
    assert any("replica" in m for m in messages)


def test_schema_command_prints_json_schema():
    out = subprocess.run([str(Path(sys.executable).parent / "gpufleet"), "schema"], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0
    schema = json.loads(out.stdout)
    assert "gpufleet:workloads" in schema["properties"]["config"]["properties"]
