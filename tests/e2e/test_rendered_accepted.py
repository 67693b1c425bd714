"""Rendered output accepted by a real API server: for every shipped stack that targets a plain cluster, its
planned nodes exist (as KWOK nodes), the plan's manifests are applied server-side with kubectl, and each
planned Helm release is installed with the real helm from the real upstream chart (CRDs included) with the
values gpufleet planned. The same for what `gpufleet charts` writes: the stack's own chart and the NVIDIA
releases with the generated values files, installed with the real helm. Everything must be accepted, and
every warning accounted for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import SHIPPED_STACKS
from tests.e2e.cluster import ROOT
from tests.e2e.conftest import kubectl_runner
from tests.e2e.kwok_nodes import create_nodes, nodes_from_stack, wait_nodes_ready
from tests.e2e.workloads import gpufleet, helm, plan_documents

#: Warnings the API server or helm may give on these stacks, each with why it is expected (none yet).
ACCOUNTED_WARNINGS: dict[str, str] = {}


def warnings_in(text: str) -> list[str]:
    """kubectl's `Warning: ...` lines and helm's client-go warning lines."""
    found = [line.removeprefix("Warning: ") for line in text.splitlines() if line.startswith("Warning: ")]
    found += [m.group(1).replace('\\"', '"')
              for m in re.finditer(r'warnings\.go:\d+\] "?(?:Warning: )?(.*?)"?$', text, re.MULTILINE)]
    return found


def unaccounted(warnings: list[str]) -> list[str]:
    return [w for w in warnings if not any(known in w for known in ACCOUNTED_WARNINGS)]


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_plan_manifests_and_releases_are_accepted(stack, new_cluster, tmp_path):
    from upstream_files import chart_archive

    docs = plan_documents(stack, tmp_path / "plan")
    releases = [d for d in docs if d.get("kind") == "HelmRelease"]
    objects = [d for d in docs if d.get("kind") != "HelmRelease"]
    archives = {r["name"]: chart_archive(r["chart"], r["version"]) for r in releases}  # skips when absent

    cluster = new_cluster()  # one per stack: the stacks install the same releases with other values
    kubectl = kubectl_runner(cluster)
    api = cluster.api()
    planned = nodes_from_stack(stack, ROOT)
    create_nodes(api, planned)
    wait_nodes_ready(api, [n.name for n in planned])

    # Namespaces first, as Pulumi orders them; then everything else in one apply.
    ordered = sorted(objects, key=lambda o: o["kind"] != "Namespace")
    applied = kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                      input=yaml.safe_dump_all(ordered, sort_keys=False))
    assert applied.returncode == 0, applied.stderr
    warnings = warnings_in(applied.stderr)

    for release in releases:
        values = tmp_path / f"{release['name']}-values.yaml"
        values.write_text(yaml.safe_dump(release.get("values") or {}, sort_keys=False))
        warnings += install_release(cluster, tmp_path, release, archives[release["name"]], values)

    assert unaccounted(warnings) == []


def install_release(cluster, tmp_path: Path, release: dict, chart: Path, values: Path) -> list[str]:
    """`helm install` of a planned release (name, namespace) from `chart` with `values`; its warnings.
    Hooks (the operator's CRD-upgrade Job) would wait for pods to complete, which KWOK's pods here never do:
    the release is installed without running them, and its hooks are sent to the API server as a server-side
    dry run, so that they too must be accepted."""
    name, namespace = release["name"], release["namespace"]
    installed = helm(cluster, tmp_path, "install", name, str(chart), "--namespace", namespace,
                     "--values", str(values), "--no-hooks")
    assert installed.returncode == 0, installed.stderr
    warnings = warnings_in(installed.stderr)
    hooks = helm(cluster, tmp_path, "get", "hooks", name, "--namespace", namespace)
    assert hooks.returncode == 0, hooks.stderr
    if hooks.stdout.strip():
        dry = kubectl_runner(cluster)("apply", "--server-side", "--dry-run=server", "-f", "-",
                                      input=hooks.stdout)
        assert dry.returncode == 0, dry.stderr
        warnings += warnings_in(dry.stderr)
    return warnings


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_generated_charts_install_with_helm(stack, new_cluster, tmp_path):
    """What `gpufleet charts` writes, installed as its GitOps files order it: the stack's own chart first
    (sync wave 0; Flux's dependsOn), then each NVIDIA release from the pinned upstream chart with the
    generated values file. Plain helm keeps a release's record in its namespace, which for the stack's chart
    is one the chart itself creates: it is installed as a release of `default` (its objects name their
    namespaces, so where the record lives changes nothing else). The Argo CD Applications and Flux
    HelmReleases themselves are custom resources of controllers this cluster does not run."""
    from upstream_files import chart_archive

    out = tmp_path / "charts"
    done = gpufleet("charts", "--stack", stack, "--out", str(out))
    assert done.returncode == 0, done.stderr
    releases = [d for d in plan_documents(stack, tmp_path / "plan") if d.get("kind") == "HelmRelease"]
    archives = {r["name"]: chart_archive(r["chart"], r["version"]) for r in releases}  # skips when absent

    cluster = new_cluster()
    planned = nodes_from_stack(stack, ROOT)
    create_nodes(cluster.api(), planned)
    wait_nodes_ready(cluster.api(), [n.name for n in planned])

    own = helm(cluster, tmp_path, "install", f"gpufleet-{stack}", str(out / f"gpufleet-{stack}"),
               "--namespace", "default")
    assert own.returncode == 0, own.stderr
    warnings = warnings_in(own.stderr)
    listed = helm(cluster, tmp_path, "get", "manifest", f"gpufleet-{stack}", "--namespace", "default")
    assert [d for d in yaml.safe_load_all(listed.stdout) if d], "the stack's chart installed nothing"
    assert sorted(p.stem for p in (out / "values").glob("*.yaml")) == sorted(archives)
    for release in releases:
        values = out / "values" / f"{release['name']}.yaml"
        warnings += install_release(cluster, tmp_path, release, archives[release["name"]], values)

    assert unaccounted(warnings) == []


#: A Deployment whose pod template carries an annotation the API server warns about.
WARNED = {"apiVersion": "apps/v1", "kind": "Deployment",
          "metadata": {"name": "warned", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "warned"}}, "template": {
              "metadata": {"labels": {"app": "warned"},
                           "annotations": {"seccomp.security.alpha.kubernetes.io/pod": "runtime/default"}},
              "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def test_a_warning_from_kubectl_or_helm_is_not_accounted_for(new_cluster, tmp_path):
    cluster = new_cluster()
    chart = tmp_path / "warned"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: warned\nversion: 0.1.0\n")
    (chart / "templates" / "d.yaml").write_text(yaml.safe_dump(WARNED))
    installed = helm(cluster, tmp_path, "install", "warned", str(chart), "--namespace", "default")
    assert installed.returncode == 0, installed.stderr
    again = {**WARNED, "metadata": {"name": "warned-too", "namespace": "default"}}
    applied = kubectl_runner(cluster)("apply", "--server-side", "-f", "-", input=yaml.safe_dump(again))
    assert applied.returncode == 0, applied.stderr

    for stderr in (installed.stderr, applied.stderr):
        found = unaccounted(warnings_in(stderr))
        assert len(found) == 1
        assert found[0].startswith("spec.template.metadata.annotations[seccomp.security.alpha.kubernetes.io/")
