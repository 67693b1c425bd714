"""Argo CD and Flux install the stack's chart and the pinned NVIDIA chart with gpufleet's values."""

from __future__ import annotations

import yaml
from conftest import ROOT

from gpufleet.config.loading import load_stack
from gpufleet.nvidia import versions
from gpufleet.render.gpu_stack import operator_values

OUT = ROOT / "charts" / "dev"


def docs(rel: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((OUT / rel).read_text()) if d]


def test_argocd_installs_chart_first_then_pinned_gpu_operator_with_plan_values():
    own, operator = docs("argocd/applications.yaml")
    assert own["spec"]["source"]["path"] == "charts/dev/gpufleet-dev"
    assert own["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "0"
    src = operator["spec"]["source"]
    assert (src["chart"], src["targetRevision"], src["repoURL"]) == (
        "gpu-operator", versions.GPU_OPERATOR_VERSION, versions.GPU_OPERATOR_REPO)
    assert src["helm"]["valuesObject"] == operator_values(load_stack("dev", ROOT).config)
    assert operator["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "1"


def test_flux_gpu_operator_release_is_pinned_and_depends_on_the_chart():
    own, operator = docs("flux/releases.yaml")
    spec = operator["spec"]["chart"]["spec"]
    assert (spec["chart"], spec["version"]) == ("gpu-operator", versions.GPU_OPERATOR_VERSION)
    assert operator["spec"]["dependsOn"] == [{"name": own["metadata"]["name"]}]
    assert operator["spec"]["values"] == yaml.safe_load((OUT / "values" / "gpu-operator.yaml").read_text())
    kinds = {d["kind"]: d for d in docs("flux/sources.yaml")}
    assert kinds["HelmRepository"]["spec"]["url"] == versions.GPU_OPERATOR_REPO
    assert own["spec"]["chart"]["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "gpufleet"}
