"""Env values from secret stack config keys (`env: {HF_TOKEN: {secretConfigKey: hfToken}}`): a Kubernetes
Secret per workload holding Pulumi secrets, `secretKeyRef` in the container, and the value nowhere in
what gpufleet prints or writes (plan tree, plan.json, manifests, plan --diff, charts)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from components.batch_job import BatchJob, BatchJobArgs
from components.inference_service import InferenceService, InferenceServiceArgs
from components.notebook import Notebook, NotebookArgs
from gpufleet.config.loading import load_stack
from gpufleet.config.schema import stack_file_schema
from gpufleet.planning.diff import diff_markdown, read_plan_document
from gpufleet.planning.engine import SECRET_SIG, SIG_KEY, run_program
from gpufleet.planning.output import plan_document, write_plan
from gpufleet.planning.preview import print_preview
from gpufleet.render.workloads import workload_objects
from tests.conftest import ROOT

SENTINEL = "AKIA-SENTINEL-123"
MODES = [pytest.param(True, id="preview"), pytest.param(False, id="update")]

STACK = f"""config:
  gpufleet:hfToken:
    secure: {SENTINEL}
  gpufleet:mode: platform-managed
  gpufleet:workloads:
    - kind: inference
      name: llm
      namespace: serve
      image: vllm/vllm-openai:v0.6.3
      env:
        HF_TOKEN: {{secretConfigKey: hfToken}}
        LOG_LEVEL: info
      ports: [{{port: 8000, name: http}}]
      service: {{type: ClusterIP}}
    - kind: job
      name: fetch
      namespace: serve
      image: vllm/vllm-openai:v0.6.3
      env:
        HF_TOKEN: {{secretConfigKey: hfToken}}
    - kind: notebook
      name: lab
      namespace: serve
      image: jupyter/base-notebook:2024-10-07
      env:
        HF_TOKEN: {{secretConfigKey: hfToken}}
      service: {{type: ClusterIP}}
"""


@pytest.fixture
def project(tmp_path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "Pulumi.sec.yaml").write_text(STACK)
    return tmp_path


@pytest.fixture
def decrypted(project):
    """The stack as `pulumi up` hands it to the program: the secret key holds its real (decrypted) value."""
    loaded = load_stack("sec", project)
    assert loaded.pulumi_config["gpufleet:hfToken"] != SENTINEL  # the loader never reads the ciphertext as a value
    return dataclasses.replace(loaded, pulumi_config={**loaded.pulumi_config, "gpufleet:hfToken": SENTINEL})


def files_text(root: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(root.rglob("*")) if p.is_file())


def test_the_secret_reaches_the_secret_as_a_pulumi_secret_and_nothing_prints_it(decrypted, tmp_path, capsys):
    plan = run_program(decrypted, preview=False)
    secrets = {r.name: r.inputs for r in plan.by_type("kubernetes:core/v1:Secret")}
    assert set(secrets) == {"sec-serve-llm-env", "sec-serve-fetch-env", "sec-serve-lab-env", "sec-serve-lab-token"}
    data = secrets["sec-serve-llm-env"]["stringData"]
    assert data[SIG_KEY] == SECRET_SIG and data["value"] == {"HF_TOKEN": SENTINEL}  # really delivered, as a secret
    deployment = plan.get("kubernetes:apps/v1:Deployment", "sec-serve-llm-deployment")
    assert deployment.inputs["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "llm-env", "key": "HF_TOKEN"}}},
        {"name": "LOG_LEVEL", "value": "info"}]
    job = plan.get("kubernetes:batch/v1:Job", "sec-serve-fetch-job")
    assert job.inputs["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "fetch-env", "key": "HF_TOKEN"}}}]

    print_preview(plan)
    write_plan(plan, tmp_path / "plan")
    base = tmp_path / "base"
    write_plan(run_program(dataclasses.replace(decrypted, pulumi_config={
        **decrypted.pulumi_config, "gpufleet:hfToken": "an-older-value"})), base)
    diff = diff_markdown(read_plan_document(base), plan_document(plan))
    printed = capsys.readouterr()
    written = files_text(tmp_path / "plan")
    assert "llm-env" in written and "[secret]" in written
    for text in (printed.out, printed.err, written, diff, str(plan_document(plan))):
        assert SENTINEL not in text


def test_cli_plan_diff_and_charts_never_show_the_secret(project, cli, tmp_path):
    base = tmp_path / "base"
    assert cli("plan", "--stack", "sec", "--project-dir", project, "--out", base, "--no-policies").code == 0
    result = cli("plan", "--stack", "sec", "--project-dir", project, "--diff", base, "--no-policies")
    assert result.code == 0
    charts = cli("charts", "--stack", "sec", "--project-dir", project, "--out", tmp_path / "charts")
    assert charts.code == 0, charts.err
    chart_text = files_text(tmp_path / "charts")
    for text in (result.out, result.err, charts.out, charts.err, files_text(base), chart_text):
        assert SENTINEL not in text
    templates = tmp_path / "charts" / "gpufleet-sec" / "templates"
    assert not any("llm-env" in p.name for p in templates.iterdir())  # the user creates it; the chart only reads it
    assert "secretKeyRef:\n" in (templates / "llm-deployment.yaml").read_text()
    notes = (templates / "NOTES.txt").read_text()
    assert "kubectl create secret generic llm-env -n serve --from-literal=HF_TOKEN=<value>" in notes
    assert "kubectl create secret generic fetch-env -n serve --from-literal=HF_TOKEN=<value>" in notes


def test_an_unset_secret_key_is_warned_and_planned_with_a_placeholder(project, cli):
    (project / "Pulumi.sec.yaml").write_text(STACK.replace(f"  gpufleet:hfToken:\n    secure: {SENTINEL}\n", ""))
    result = cli("plan", "--stack", "sec", "--project-dir", project, "--no-policies")
    assert result.code == 0
    assert "warning: Pulumi.sec.yaml: gpufleet:hfToken is not set; `pulumi up` needs it: pulumi config set " \
           "--secret hfToken <value> -s sec" in result.err


def test_a_plain_text_value_for_the_key_is_refused(project, cli):
    (project / "Pulumi.sec.yaml").write_text(STACK.replace(f"  gpufleet:hfToken:\n    secure: {SENTINEL}\n",
                                                           f"  gpufleet:hfToken: {SENTINEL}\n"))
    result = cli("plan", "--stack", "sec", "--project-dir", project, "--no-policies")
    assert result.code == 2
    assert result.err.strip() == ("Pulumi.sec.yaml:2: gpufleet:hfToken: a workload reads hfToken as a secret, but it "
                                  "is set in plain text; allowed: a secret value: pulumi config set --secret hfToken "
                                  "<value>")
    assert SENTINEL not in result.err and SENTINEL not in result.out


@pytest.mark.parametrize("preview", MODES)
def test_each_workload_component_owns_its_env_secret(decrypted, preview):
    cfg = decrypted.config
    components = {"inference": lambda w: InferenceService("c", InferenceServiceArgs(workload_objects(cfg, w),
                                                                                    {"HF_TOKEN": SENTINEL})),
                  "job": lambda w: BatchJob("c", BatchJobArgs(workload_objects(cfg, w), {"HF_TOKEN": SENTINEL})),
                  "notebook": lambda w: Notebook("c",
                                                 NotebookArgs(workload_objects(cfg, w), "tok", {"HF_TOKEN": SENTINEL}))}
    for w in cfg.workloads:
        seen = []

        def program(w=w, seen=seen):
            comp = components[w.kind](w)
            comp.env_secret.metadata.apply(lambda m: seen.append(m["name"]))

        plan = run_program(decrypted, program, preview=preview)
        (comp,) = [r for r in plan.resources if r.type.startswith("gpufleet:index:")]
        kids = {r.name: r for r in plan.resources if r.parent == comp.urn}
        secret = kids["c-env"]
        assert secret.inputs["stringData"][SIG_KEY] == SECRET_SIG
        workload = kids.get("c-deployment") or kids["c-job"]
        assert secret.urn in workload.dependencies  # the pods start after their Secret exists
        assert seen == [f"{w.name}-env"]


def test_a_workload_without_secret_env_has_no_env_secret(decrypted):
    cfg = decrypted.config
    w = cfg.workloads[0].model_copy(update={"env": {"LOG_LEVEL": "info"}})
    objs = workload_objects(cfg, w)
    assert [o["kind"] for o in objs] == ["Deployment", "Service"]

    def program():
        svc = InferenceService("c", InferenceServiceArgs(objs))
        assert svc.env_secret is None

    plan = run_program(decrypted, program)
    assert plan.by_type("kubernetes:core/v1:Secret") == []


def test_secret_values_are_pulumi_secrets_even_when_given_plain(decrypted):
    """Whatever the caller passes (a plain string here), the component wraps it as a secret."""
    def program():
        InferenceService("c", InferenceServiceArgs(workload_objects(decrypted.config, decrypted.config.workloads[0]),
                                                   {"HF_TOKEN": "plain"}))

    plan = run_program(decrypted, program)
    (secret,) = plan.by_type("kubernetes:core/v1:Secret")
    assert secret.inputs["stringData"] == {SIG_KEY: SECRET_SIG, "value": {"HF_TOKEN": "plain"}}


def test_gpufleet_schema_accepts_secret_env_values():
    jsonschema.Draft202012Validator(stack_file_schema()).validate(yaml.safe_load(STACK))
