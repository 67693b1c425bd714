"""`gpufleet plan --diff`: what a pull request changes, as reviewable Markdown."""

from __future__ import annotations

import shutil

from conftest import ROOT
from gpufleet.planning.diff import diff_markdown

NEW_SERVICE = """\
    - kind: inference
      name: my-infer4
      namespace: myasetest1
      image: mcr.microsoft.com/azureml/onnxruntime:v1.6.0-cuda10.2-cudnn8
      nodePool: edge
      gpu: {shared: true, memoryMiB: 3000}
      ports:
        - {port: 5002, name: http}
      service:
        type: ClusterIP
"""


def project(tmp_path, name: str, stack_text: str):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", d / "Pulumi.yaml")
    (d / "Pulumi.dev.yaml").write_text(stack_text)
    return d


def head_stack() -> str:
    base = (ROOT / "Pulumi.dev.yaml").read_text()
    base = base.replace("      name: my-infer2\n", "      name: my-infer2\n      replicas: 3\n", 1)
    return base.replace("  gpufleet:workloads:\n", "  gpufleet:workloads:\n" + NEW_SERVICE, 1)


def test_plan_diff_shows_changed_replicas_and_new_service(cli, tmp_path):
    base = project(tmp_path, "base", (ROOT / "Pulumi.dev.yaml").read_text())
    head = project(tmp_path, "head", head_stack())
    assert cli("plan", "--stack", "dev", "--project-dir", base, "--out", tmp_path / "base-plan").code == 0
    # The head adds GPU workloads beyond the T4's four MPS shares: the policy pack would (rightly) fail the
    # plan; this test is about the diff, so it runs without the pack.
    result = cli("plan", "--stack", "dev", "--project-dir", head, "--diff", tmp_path / "base-plan", "--no-policies")
    assert result.code == 0, result.err
    md = result.out
    assert "**3 to add, 1 to change, 0 to remove**" in md
    added = md.split("#### Added")[1].split("####")[0]
    assert "`kubernetes:core/v1:Service` **dev-myasetest1-my-infer4-service** (my-infer4)" in added
    assert "`kubernetes:apps/v1:Deployment` **dev-myasetest1-my-infer4-deployment** (my-infer4)" in added
    changed = md.split("#### Changed")[1]
    assert "**dev-myasetest1-my-infer2-deployment** (my-infer2)" in changed
    assert "  | `spec.replicas` | `1` | `3` |" in changed
    assert "#### Removed" not in md


def test_plan_diff_of_identical_plans_says_no_changes(cli, tmp_path):
    assert cli("plan", "--stack", "dev", "--project-dir", ROOT, "--out", tmp_path / "p").code == 0
    result = cli("plan", "--stack", "dev", "--project-dir", ROOT, "--diff", tmp_path / "p")
    assert result.code == 0
    assert "No changes." in result.out


def test_plan_diff_without_base_plan_exits_2(cli, tmp_path):
    assert cli("plan", "--stack", "dev", "--project-dir", ROOT, "--diff", tmp_path / "nothing").code == 2


def res(name: str, inputs: dict, type_: str = "kubernetes:core/v1:Secret") -> dict:
    return {"type": type_, "name": name, "urn": f"urn:pulumi:dev::gpufleet::{type_}::{name}", "parent": None,
            "inputs": inputs}


def test_diff_lists_removed_resources_and_keeps_secrets_masked():
    old = {"stack": "dev", "resources": [res("tok", {"stringData": {"token": "[secret]"}, "type": "Opaque"}),
                                         res("gone", {"data": {"a": "1"}}, "kubernetes:core/v1:ConfigMap")]}
    new = {"stack": "dev", "resources": [res("tok", {"stringData": {"token": "[secret]"}, "type": "kubernetes.io/basic-auth"})]}
    md = diff_markdown(old, new)
    assert "#### Removed\n\n- `kubernetes:core/v1:ConfigMap` **gone**" in md
    assert '| `type` | `"Opaque"` | `"kubernetes.io/basic-auth"` |' in md
    assert "token" not in md


def test_diff_orders_resources_and_fields_stably():
    old = {"stack": "dev", "resources": []}
    new = {"stack": "dev", "resources": [res("b", {}), res("a", {}), res("c", {}, "kubernetes:apps/v1:Deployment")]}
    md = diff_markdown(old, new)
    assert md.index("**c**") < md.index("**a**") < md.index("**b**")
    assert diff_markdown(old, new) == diff_markdown(old, {**new, "resources": list(reversed(new["resources"]))})
    changed = diff_markdown({"resources": [res("x", {"z": 1, "a": {"m": 1}})]},
                            {"resources": [res("x", {"z": 2, "a": {"m": 2, "n": 3}})]})
    assert changed.index("`a.m`") < changed.index("`a.n`") < changed.index("`z`")
    assert "| `a.n` | _(absent)_ | `3` |" in changed
