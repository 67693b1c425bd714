"""`gpufleet validate`: strict offline schema validation of users' manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

GOOD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: infer}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: infer}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
"""

BROKEN = GOOD.replace("replicas: 2", 'replicas: "two"')


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_validate_accepts_valid_multi_document_file(cli, tmp_path):
    result = cli("validate", write(tmp_path, "good.yaml", GOOD))
    assert result.code == 0, result.out + result.err
    assert "valid" in result.out


def test_validate_rejects_wrong_type_naming_file_object_and_field(cli, tmp_path):
    path = write(tmp_path, "broken.yaml", BROKEN)
    result = cli("validate", path)
    assert result.code == 1
    lines = result.out.strip().splitlines()
    assert lines == [f"{path}: Deployment/infer/web: spec.replicas: 'two' is not of type 'integer', 'null'"]


def test_validate_rejects_unknown_field_in_strict_mode(cli, tmp_path):
    text = GOOD.replace('image: "nginx:1.27"}', 'image: "nginx:1.27", imagePolicy: Always}')
    result = cli("validate", write(tmp_path, "extra.yaml", text))
    assert result.code == 1
    assert "spec.template.spec.containers[0]" in result.out and "imagePolicy" in result.out


@pytest.mark.parametrize("api_version,kind", [
    pytest.param("extensions/v1beta1", "Deployment", id="removed API"),
    pytest.param("v1", "Deploymnet", id="misspelt kind"),
    pytest.param("example.com/v1", "Widget", id="unknown custom resource"),
])
def test_validate_fails_when_no_schema_exists(cli, tmp_path, api_version, kind):
    text = f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n"
    result = cli("validate", write(tmp_path, "x.yaml", text))
    assert result.code == 1
    assert f"{kind}/x: apiVersion: Kubernetes 1.34 has no kind {kind}" in result.out


def test_validate_skips_custom_resources_gpufleet_writes(cli, tmp_path):
    text = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app}\nspec: {}\n"
    assert cli("validate", write(tmp_path, "app.yaml", text)).code == 0


def test_validate_rejects_duplicate_keys(cli, tmp_path):
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmetadata: {name: b}\n"
    result = cli("validate", write(tmp_path, "dup.yaml", text))
    assert result.code == 1
    assert "duplicate key 'metadata'" in result.out


def test_validate_reports_every_file_of_a_directory(cli, tmp_path):
    write(tmp_path, "a.yaml", GOOD)
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "b.yml", BROKEN)
    result = cli("validate", tmp_path)
    assert result.code == 1
    assert "sub/b.yml: Deployment/infer/web: spec.replicas" in result.out
    assert "a.yaml" not in result.out


def test_validate_uses_the_requested_kubernetes_version(cli, tmp_path):
    # flowcontrol.apiserver.k8s.io/v1beta3 was served until 1.31 and removed in 1.32.
    text = ("apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: PriorityLevelConfiguration\n"
            "metadata: {name: p}\nspec: {type: Exempt}\n")
    path = write(tmp_path, "flow.yaml", text)
    assert cli("validate", path, "--kube-version", "1.29").code == 0
    assert cli("validate", path, "--kube-version", "1.34").code == 1


@pytest.mark.parametrize("args", [
    pytest.param(["missing.yaml"], id="missing file"),
    pytest.param(["good.yaml", "--kube-version", "2.0"], id="unsupported version"),
])
def test_validate_exits_2_on_unusable_input(cli, tmp_path, args):
    write(tmp_path, "good.yaml", GOOD)
    result = cli("validate", *args, cwd=tmp_path)
    assert result.code == 2
