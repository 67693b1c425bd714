"""`gpufleet validate` is as strict as the API server, not only the JSON schema, and says so in its words."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.validation import names
from gpufleet.validation.apiserver import object_errors

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: infer}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
"""


def problems(cli, tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "app.yaml"
    path.write_text(text)
    result = cli("validate", path)
    assert result.code == 1, result.out + result.err
    prefix = f"{path}: "
    assert all(line.startswith(prefix) for line in result.out.splitlines())
    return [line[len(prefix):] for line in result.out.splitlines()]


def test_bad_name_is_rejected_with_the_api_server_message(cli, tmp_path):
    assert problems(cli, tmp_path, DEPLOYMENT.replace("metadata: {name: web,", "metadata: {name: Bad_Name,")) == [
        f'Deployment/infer/Bad_Name: metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN}']


def test_numeric_namespace_is_a_problem_not_a_crash(cli, tmp_path):
    assert problems(cli, tmp_path, DEPLOYMENT.replace("namespace: infer", "namespace: 5")) == [
        "Deployment/web: metadata.namespace: 5 is not of type 'string', 'null'"]


def test_service_without_name_and_with_duplicate_ports(cli, tmp_path):
    text = ("apiVersion: v1\nkind: Service\nmetadata: {namespace: infer}\n"
            "spec: {ports: [{name: http, port: 80}, {name: http, port: 80}]}\n")
    assert problems(cli, tmp_path, text) == [
        "Service/infer/(document 1): metadata.name: Required value: name or generateName is required",
        'Service/infer/(document 1): spec.ports[1].name: Duplicate value: "http"',
        'Service/infer/(document 1): spec.ports[1]: Duplicate value: {"port":80,"protocol":"TCP"}',
    ]


def test_service_needs_ports_unless_headless(cli, tmp_path):
    text = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}}\n"
    assert problems(cli, tmp_path, text) == ["Service/web: spec.ports: Required value"]
    assert object_errors({"kind": "Service", "metadata": {"name": "web"}, "spec": {"clusterIP": "None"}}) == []


def test_deployment_without_spec_lists_what_the_api_server_requires(cli, tmp_path):
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
    assert problems(cli, tmp_path, text) == [
        "Deployment/web: spec.selector: Required value",
        "Deployment/web: spec.template.metadata.labels: Invalid value: null: `selector` does not match template "
        "`labels`",
        "Deployment/web: spec.template.spec.containers: Required value",
    ]


def test_selector_must_match_template_labels(cli, tmp_path):
    text = DEPLOYMENT.replace("labels: {app: web}", "labels: {app: api}")
    assert problems(cli, tmp_path, text) == [
        'Deployment/infer/web: spec.template.metadata.labels: Invalid value: {"app":"api"}: `selector` does not '
        "match template `labels`"]


def test_gpu_quantity_that_is_no_quantity(cli, tmp_path):
    text = DEPLOYMENT.replace('image: "nginx:1.27"',
                              'image: "nginx:1.27", resources: {limits: {nvidia.com/gpu: "abc"}}')
    assert problems(cli, tmp_path, text) == [
        "Deployment/infer/web: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "
        "\"abc\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]


def test_replicas_beyond_int32(cli, tmp_path):
    assert problems(cli, tmp_path, DEPLOYMENT.replace("replicas: 1", "replicas: 100000000000000000000")) == [
        "Deployment/infer/web: spec.replicas: Invalid value: 100000000000000000000: must be a 32-bit integer, from "
        "-2147483648 to 2147483647 (the API server cannot decode a larger number)"]


def test_container_names_are_unique_across_init_and_regular_containers(cli, tmp_path):
    text = DEPLOYMENT.replace('- {name: web, image: "nginx:1.27"}',
                              '- {name: web, image: "nginx:1.27"}\n      - {name: web, image: x}\n'
                              '      initContainers: [{name: web, image: y}]')
    assert problems(cli, tmp_path, text) == [
        'Deployment/infer/web: spec.template.spec.containers[1].name: Duplicate value: "web"',
        'Deployment/infer/web: spec.template.spec.initContainers[0].name: Duplicate value: "web"',
    ]


def test_pod_gets_request_defaulted_from_limit_before_validation():
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "500m"}}}]}}
    assert [str(e) for e in object_errors(pod)] == [
        'spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        'spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
    ]


def test_job_needs_a_restart_policy_that_ends():
    job = {"kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert [str(e) for e in object_errors(job)] == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']


@pytest.mark.parametrize("kind, name, ok", [
    ("Service", "9web", False), ("Service", "web-9", True), ("Namespace", "a.b", False),
    ("ConfigMap", "a.b", True), ("ConfigMap", "a" * 254, False), ("ClusterRole", "system:node", True),
    ("ClusterRole", "a/b", False), ("CronJob", "a" * 53, False),
])
def test_name_format_depends_on_the_kind(kind, name, ok):
    errors = [e for e in object_errors({"kind": kind, "metadata": {"name": name}}) if e.path == "metadata.name"]
    assert (errors == []) is ok, errors


@pytest.mark.parametrize("check, value, reasons", [
    (names.dns1123_label, "a.b", ["must not contain dots"]),
    (names.qualified_name, "example.com/", ["name part must be non-empty", "name part must consist of alphanumeric "
     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
     "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    (names.label_value, "", []), (names.label_value, "a" * 64, ["must be no more than 63 characters"]),
    (names.config_key, "..x", ["must not start with '..'"]),
])
def test_name_checks_give_the_api_server_reasons(check, value, reasons):
    assert check(value) == reasons


def test_a_kubectl_list_is_validated_item_by_item(cli, tmp_path):
    text = ("apiVersion: v1\nkind: List\nitems:\n"
            "- {apiVersion: v1, kind: ConfigMap, metadata: {name: ok}}\n"
            "- {apiVersion: v1, kind: ConfigMap, metadata: {name: Not_OK}}\n")
    assert problems(cli, tmp_path, text) == [
        f'ConfigMap/Not_OK: metadata.name: Invalid value: "Not_OK": {SUBDOMAIN}']
