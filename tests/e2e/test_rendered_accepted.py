"""Rendered output accepted by a real API server: for every shipped stack that targets a plain cluster, its
planned nodes exist (as KWOK nodes), the plan's manifests are applied server-side with kubectl, and each
planned Helm release is installed with the real helm from the real upstream chart (CRDs included) with the
values gpufleet planned. Everything must be accepted, and every warning accounted for."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import SHIPPED_STACKS
from tests.e2e.cluster import ROOT
from tests.e2e.kwok_nodes import create_nodes, nodes_from_stack, wait_nodes_ready
from tests.e2e.conftest import kubectl_runner
from tests.e2e.workloads import helm, plan_documents

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
        # Hooks (the operator's CRD-upgrade Job) would wait for pods to complete, which KWOK's pods here never
        # do: the release is installed without running them, and its hooks are sent to the API server as a
        # server-side dry run, so that they too must be accepted.
        installed = helm(cluster, tmp_path, "install", release["name"], str(archives[release["name"]]),
                         "--namespace", release["namespace"], "--values", str(values), "--no-hooks")
        assert installed.returncode == 0, installed.stderr
        warnings += warnings_in(installed.stderr)
        hooks = helm(cluster, tmp_path, "get", "hooks", release["name"], "--namespace", release["namespace"])
        assert hooks.returncode == 0, hooks.stderr
        if hooks.stdout.strip():
            dry = kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=hooks.stdout)
            assert dry.returncode == 0, dry.stderr
            warnings += warnings_in(dry.stderr)

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
