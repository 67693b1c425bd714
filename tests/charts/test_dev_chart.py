"""The committed dev chart: current, lint-clean under a real helm, and schema-valid when rendered."""

from __future__ import annotations

import json

import jsonschema
import pytest
from chart_support import CHART_DIR, STACK, generated_files, helm_template
from conftest import ROOT
from helm_binary import run_helm

from gpufleet.validation import validate_documents


def test_committed_charts_match_the_stack_config():
    """charts/dev is what `make charts` generates now; regenerate it after changing Pulumi.dev.yaml."""
    expected = generated_files()
    out = ROOT / "charts" / STACK
    on_disk = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*")
               if p.is_file() and p.name != ".gpufleet-output"}  # the marker: tests/cli/test_output_dirs.py
    stale = sorted(rel for rel in expected.keys() | on_disk.keys() if expected.get(rel) != on_disk.get(rel))
    assert not stale, f"charts/{STACK} is stale ({', '.join(stale)}); run `make charts`"


def test_dev_chart_passes_helm_lint_strict():
    result = run_helm("lint", "--strict", str(CHART_DIR))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_dev_chart_renders_schema_valid_objects():
    docs = helm_template(CHART_DIR, "--set", "notebooks.tf-notebook.token=t0ken")
    assert {d["kind"] for d in docs} == {"Namespace", "ConfigMap", "Deployment", "Service", "Secret"}
    problems = validate_documents(docs, "1.34", "helm template")
    assert problems == [], "\n".join(p.render() for p in problems)


def test_dev_chart_references_a_user_created_secret_when_no_token_is_given():
    docs = helm_template(CHART_DIR)
    assert "Secret" not in {d["kind"] for d in docs}
    notebook = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "tf-notebook")
    env = notebook["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "JUPYTER_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": "tf-notebook-token", "key": "token"}}}]


def test_dev_chart_values_override_replicas_and_image():
    docs = helm_template(CHART_DIR, "--set", "inference.my-infer2.replicas=3",
                         "--set", "inference.my-infer3.enabled=false")
    infer2 = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "my-infer2")
    assert infer2["spec"]["replicas"] == 3
    assert not [d for d in docs if d["metadata"]["name"] == "my-infer3"]


@pytest.mark.parametrize("override,error", [
    pytest.param("inference.my-infer2.replicas=-1", "/inference/my-infer2/replicas", id="negative replicas"),
    pytest.param("inference.unknown.enabled=true", "unknown", id="unknown workload"),
])
def test_dev_chart_schema_rejects_bad_values(override, error):
    result = run_helm("template", "gpufleet", str(CHART_DIR), "--set", override)
    assert result.returncode != 0
    assert error in result.stderr


def test_values_schema_is_self_contained_and_allows_global():
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    assert "$ref" not in json.dumps(schema)
    assert schema["properties"]["global"] == {"type": "object"}
    values = __import__("yaml").safe_load((CHART_DIR / "values.yaml").read_text())
    jsonschema.Draft7Validator(schema).validate({**values, "global": {"imageRegistry": "r.example"}})


def test_notes_tell_how_to_get_the_load_balancer_address():
    result = run_helm("install", "gpufleet", str(CHART_DIR), "--dry-run=client", "--namespace", "gpu-operator")
    assert result.returncode == 0, result.stderr
    assert "kubectl get svc my-infer2 -n myasetest1 -o jsonpath='{.status.loadBalancer.ingress[0].ip}'" in result.stdout
    assert "kubectl create secret generic tf-notebook-token -n myasetest1" in result.stdout
