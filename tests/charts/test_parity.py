"""The chart installs the same Kubernetes objects as `pulumi up` for the same stack.

Normalised, because they legitimately differ:
- `app.kubernetes.io/managed-by` (Helm vs pulumi) and `helm.sh/chart` (Helm's chart label);
- secret values: plan masks them as "[secret]", the chart gets a test token at install time;
- Node label patches and the NVIDIA Helm release are Pulumi-only here: the chart never owns Nodes
  (NOTES.txt prints the `kubectl label` commands) and the NVIDIA chart is installed by its own
  Application / HelmRelease (compared in test_gitops.py).
"""

from __future__ import annotations

import copy
import shutil
from typing import Any

from chart_support import generated_files, helm_template, plan_objects, write_chart
from conftest import ROOT

NOT_IN_CHART = {"Node", "HelmRelease"}


def normalise(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for meta in (doc.get("metadata", {}), doc.get("spec", {}).get("template", {}).get("metadata", {})):
        labels = meta.get("labels") or {}
        labels.pop("app.kubernetes.io/managed-by", None)
        labels.pop("helm.sh/chart", None)
    if doc.get("kind") == "Secret":
        doc["stringData"] = {k: "[secret]" for k in doc.get("stringData", {})}
    return doc


def by_identity(docs: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {}
    for d in docs:
        key = (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])
        assert key not in out, f"{key} appears twice"
        out[key] = normalise(d)
    return out


def chart_objects_for(stack_dir, stack, tmp_path, tokens: list[str]) -> dict:
    chart = write_chart(tmp_path / "out", generated_files(stack_dir, stack))
    args = [a for t in tokens for a in ("--set", f"notebooks.{t}.token=test-token")]
    return by_identity(helm_template(chart, *args))


def pulumi_objects_for(stack_dir, stack) -> dict:
    return by_identity([d for d in plan_objects(stack_dir, stack) if d["kind"] not in NOT_IN_CHART])


def test_dev_chart_objects_equal_the_pulumi_programs(tmp_path):
    chart = chart_objects_for(ROOT, "dev", tmp_path, ["tf-notebook"])
    pulumi = pulumi_objects_for(ROOT, "dev")
    assert sorted(chart) == sorted(pulumi)
    for key in pulumi:
        assert chart[key] == pulumi[key], key


STANDALONE_MIG = """\
config:
  gpufleet:mode: standalone
  gpufleet:devicePlugin:
    migStrategy: mixed
    sharingProfiles:
      slices: {strategy: timeSlicing, replicas: 2}
  gpufleet:mig:
    geometries:
      halves:
        - {devices: all, mig-enabled: true, mig-devices: {3g.40gb: 2}}
  gpufleet:nodePools:
    - name: a100
      nodes: [gpu-0, gpu-1]
      gpu: {product: NVIDIA-A100-SXM4-80GB, count: 8}
      migGeometry: halves
  gpufleet:workloads:
    - kind: job
      name: train
      namespace: ml
      image: "nvcr.io/nvidia/pytorch:24.08-py3"
      nodePool: a100
      gpu: {profile: 3g.40gb}
      env: {TEMPLATE: "{{ not a helm template }}"}
      ttlSecondsAfterFinished: 600
"""


def test_standalone_mig_chart_objects_equal_the_pulumi_programs(tmp_path):
    """Standalone mode adds the MIG ConfigMap and mig-manager; `{{` in an env value stays literal."""
    stack_dir = tmp_path / "project"
    stack_dir.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", stack_dir / "Pulumi.yaml")
    (stack_dir / "Pulumi.mig.yaml").write_text(STANDALONE_MIG)
    chart = chart_objects_for(stack_dir, "mig", tmp_path, [])
    pulumi = pulumi_objects_for(stack_dir, "mig")
    assert {k[0] for k in pulumi} >= {"ConfigMap", "DaemonSet", "ClusterRole", "Job"}
    assert sorted(chart) == sorted(pulumi)
    for key in pulumi:
        assert chart[key] == pulumi[key], key
    job = chart[("Job", "ml", "train")]
    assert job["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "TEMPLATE", "value": "{{ not a helm template }}"}]


def test_dra_chart_holds_the_same_claims_claim_templates_and_workloads_as_the_pulumi_program(tmp_path):
    chart = chart_objects_for(ROOT, "dra", tmp_path, ["explore"])
    pulumi = pulumi_objects_for(ROOT, "dra")
    assert {k for k in pulumi if k[0] in ("ResourceClaim", "ResourceClaimTemplate")} == {
        ("ResourceClaim", "research", "shared-h100"), ("ResourceClaimTemplate", "serving", "llm-gpu"),
        ("ResourceClaimTemplate", "research", "train-gpu")}
    assert sorted(chart) == sorted(pulumi)
    for key in pulumi:
        assert chart[key] == pulumi[key], key
