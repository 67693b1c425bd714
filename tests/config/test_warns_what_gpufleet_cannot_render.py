"""Warnings for what gpufleet can neither check offline nor fix by rendering: nvidia as containerd's default
runtime without CDI (any CUDA image sees every GPU), a runtime it cannot know, and pool taints that a GPU
daemon gpufleet does not deploy must tolerate. Each names the YAML path, what happens on the cluster, what
to verify there and the fix; `plan` prints them and still succeeds. Good fixtures raise none."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpufleet.config.loading import load_stack, parse_sections
from gpufleet.config.stack_warnings import stack_warnings
from tests.conftest import ROOT, SHIPPED_STACKS

POOL = {"name": "t4", "nodes": ["t4-0"], "gpu": {"product": "Tesla-T4", "count": 1}}
DEDICATED = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
GPU_JOB = {"kind": "job", "name": "train", "image": "nvcr.io/nvidia/pytorch:24.08-py3", "nodePool": "t4",
           "gpu": {"count": 1}}


def sections(**over) -> dict:
    out = {"mode": "operator", "nodePools": [copy.deepcopy(POOL)], "workloads": [copy.deepcopy(GPU_JOB)]}
    out.update(over)
    return out


def tainted(*taints: dict, **over) -> dict:
    return sections(nodePools=[{**POOL, "taints": list(taints)}], **over)


def warnings_of(s: dict) -> list[str]:
    return [f"{i.path}: {i.message}" for i in stack_warnings(parse_sections(s, "Pulumi.t.yaml"))]


BAD = [
    pytest.param(sections(cluster={"runtime": {"setAsDefault": True}}, operator={"cdi": False}),
                 "gpufleet:cluster.runtime.setAsDefault: setAsDefault true with operator.cdi false",
                 ["NVIDIA_VISIBLE_DEVICES=all", "sees every GPU", "fix: operator.cdi: true"],
                 id="setAsDefault without CDI"),
    pytest.param(sections(operator={"cdi": False}),
                 "gpufleet:operator.cdi: operator.cdi false with cluster.runtime.setAsDefault unset",
                 ["toolkit then makes nvidia containerd's default runtime", "without requesting one"],
                 id="CDI off, toolkit's own default"),
    pytest.param(sections(operator={"cdi": False, "toolkit": {"enabled": False}}),
                 "gpufleet:operator.toolkit.enabled: false with operator.cdi false",
                 ["cannot tell whether nvidia is containerd's default", "run under runc and see no GPU",
                  "`crictl info`", "runtimeClassName nvidia"], id="host toolkit, CDI off, default unknown"),
    pytest.param(tainted(DEDICATED, operator={"nfd": False}),
                 "gpufleet:nodePools[0].taints[0]: 'dedicated=gpu:NoSchedule' on node pool 't4': operator.nfd false",
                 ["feature.node.kubernetes.io/pci-10de.present", "advertise no GPU", "stay Pending",
                  "spec.template.spec.tolerations", "operator.nfd: true"], id="operator, NFD not gpufleet's"),
    pytest.param(tainted(DEDICATED, mode="standalone", devicePlugin={"nfd": False}),
                 "gpufleet:nodePools[0].taints[0]: 'dedicated=gpu:NoSchedule' on node pool 't4': "
                 "devicePlugin.nfd false",
                 ["device plugin and GFD DaemonSets require", "devicePlugin.nfd: true"],
                 id="standalone, NFD not gpufleet's"),
    pytest.param(tainted({"key": "team", "effect": "NoExecute"}, mode="platform-managed"),
                 "gpufleet:nodePools[0].taints[0]: 'team:NoExecute' on node pool 't4': mode platform-managed",
                 ["the platform's GPU DaemonSets", "advertise no GPU"], id="platform-managed stack"),
]


@pytest.mark.parametrize("s, start, words", BAD)
def test_each_mistake_is_warned_at_its_path_with_cause_effect_and_fix(s, start, words):
    (warning,) = warnings_of(s)
    assert warning.startswith(start), warning
    for w in words:
        assert w in warning, (w, warning)


GOOD = [
    pytest.param(sections(), id="defaults: CDI on"),
    pytest.param(sections(cluster={"runtime": {"setAsDefault": True}}), id="setAsDefault with CDI on"),
    pytest.param(sections(cluster={"runtime": {"setAsDefault": False}}, operator={"cdi": False}),
                 id="CDI off, nvidia not default: gpufleet names the RuntimeClass"),
    pytest.param(sections(operator={"cdi": False, "toolkit": {"enabled": False}}, workloads=[]),
                 id="host toolkit, CDI off, no GPU workload"),
    pytest.param(sections(mode="standalone", cluster={"runtime": {"setAsDefault": True}}),
                 id="standalone: the toolkit is not gpufleet's"),
    pytest.param(tainted(DEDICATED), id="operator with its NFD: gpufleet renders the tolerations"),
    pytest.param(tainted(DEDICATED, mode="standalone"), id="standalone with its NFD"),
    pytest.param(tainted({**DEDICATED, "effect": "PreferNoSchedule"}, operator={"nfd": False}),
                 id="PreferNoSchedule keeps no daemon off"),
]


@pytest.mark.parametrize("s", GOOD)
def test_correct_configs_get_no_warning(s):
    assert warnings_of(s) == []


def test_an_aks_pool_taint_is_reported_at_the_aks_pool():
    from tests.aks.conftest import base_sections

    s = base_sections(mode="platform-managed")
    s["cluster"]["aks"]["gpuPools"][0]["driver"] = "aks"
    (warning,) = warnings_of(s)
    assert warning.startswith("gpufleet:cluster.aks.gpuPools[0].taints[0]: 'sku=gpu:NoSchedule' on node pool 't4'")


@pytest.mark.parametrize("stack", SHIPPED_STACKS + ["aks", "llm", "greed"])
def test_no_shipped_stack_gets_one(stack):
    assert stack_warnings(load_stack(stack, ROOT).config) == []


def test_plan_prints_the_warning_with_the_file_name_and_succeeds(tmp_path, cli):
    doc = {"config": {f"gpufleet:{k}": v for k, v in sections(cluster={"runtime": {"setAsDefault": True}},
                                                                operator={"cdi": False}).items()}}
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.t.yaml").write_text(yaml.safe_dump(doc))
    result = cli("plan", "--stack", "t", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.code == 0, result.err
    assert "warning: Pulumi.t.yaml: gpufleet:cluster.runtime.setAsDefault: setAsDefault true with operator.cdi false" \
        in result.err
    assert load_stack("t", tmp_path).warnings == [
        f"Pulumi.t.yaml: {w}" for w in warnings_of(sections(cluster={"runtime": {"setAsDefault": True}},
                                                              operator={"cdi": False}))]
