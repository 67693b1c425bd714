"""Every manifest gpufleet writes is schema-valid for the stack's Kubernetes version."""

from __future__ import annotations

from conftest import ROOT

from gpufleet.config.loading import load_stack
from gpufleet.validation import validate_paths


def test_plan_output_manifests_are_schema_valid(cli, tmp_path):
    """Includes the Node label patch (a Node with only metadata, valid as such) and skips the Helm
    release records, which describe a release rather than a Kubernetes object."""
    assert cli("plan", "--stack", "dev", "--project-dir", ROOT, "--out", tmp_path / "plan").code == 0
    assert (tmp_path / "plan" / "manifests" / "_cluster" / "node-ase-node-0.yaml").exists()
    version = load_stack("dev", ROOT).config.cluster.kubernetes_version
    problems = validate_paths([tmp_path / "plan" / "manifests"], version)
    assert problems == [], "\n".join(p.render() for p in problems)


def test_generated_gitops_manifests_pass_validation():
    """Argo CD Applications and Flux objects are custom resources gpufleet knows and skips by name."""
    problems = validate_paths([ROOT / "charts" / "dev" / "argocd", ROOT / "charts" / "dev" / "flux"], "1.34")
    assert problems == []
