"""`gpufleet check --default-spreading direct|controllers|off`: who makes the pods decides what the scheduler's
system default spreading counts (docs/capacity.md, Default spreading)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.run_inprocess import run
from tests.scheduling.kube import container, node, pod, pod_spec

NS = "ml"


def _files(tmp_path: Path, service: bool) -> list[str]:
    """Two 2-GPU nodes, gpu-0 a little fuller; a Deployment of two 1-GPU pods, then one 2-GPU pod."""
    busy = pod("busy", pod_spec(container(requests={"cpu": "1", "memory": "1Gi"})), namespace=NS,
               node_name="gpu-0", phase="Running")

    def deployment(name: str, replicas: int, gpus: int) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec(container(
                             requests={"cpu": "100m"}, limits={"nvidia.com/gpu": str(gpus)}))}}}

    docs = [deployment("small", 2, 1), deployment("big", 1, 2)]
    if service:
        docs.insert(0, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "small", "namespace": NS},
                        "spec": {"selector": {"app": "small"}}})
    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node(f"gpu-{i}", 2)
                                                                                for i in range(2)]}))
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": [busy]}))
    (tmp_path / "app.yaml").write_text(yaml.safe_dump_all(docs))
    return ["--nodes", str(tmp_path / "nodes.json"), "--pods", str(tmp_path / "pods.json"),
            str(tmp_path / "app.yaml")]


def _pending(result) -> dict[str, int]:
    assert result.code in (0, 1), result.err
    return {u["workload"]: u["pending"] for u in json.loads(result.out)["unschedulable"]}


@pytest.mark.parametrize(("options", "service", "pending"), [
    pytest.param([], False, {}, id="default-direct-packs"),
    pytest.param(["--default-spreading", "direct"], False, {}, id="direct-packs"),
    pytest.param(["--default-spreading", "controllers"], False, {f"Deployment/{NS}/big": 1},
                 id="controllers-spread"),
    pytest.param(["--default-spreading", "CONTROLLERS"], False, {f"Deployment/{NS}/big": 1}, id="any-case"),
    pytest.param([], True, {f"Deployment/{NS}/big": 1}, id="a-service-spreads-direct-pods"),
    pytest.param(["--default-spreading", "off"], True, {}, id="off"),
    pytest.param(["--no-default-spreading"], True, {}, id="old-flag-is-off"),
])
def test_who_makes_the_pods_decides_whether_a_later_two_gpu_pod_fits(tmp_path, options, service, pending):
    assert _pending(run("check", *_files(tmp_path, service), "--json", *options)) == pending


def test_an_unknown_mode_names_the_allowed_ones(tmp_path):
    result = run("check", *_files(tmp_path, False), "--default-spreading", "owners")
    assert result.code == 2
    assert "owners" in result.err and all(m in result.err for m in ("direct", "controllers", "off"))
    assert result.out == ""


def test_the_old_flag_and_a_mode_together_are_refused(tmp_path):
    result = run("check", *_files(tmp_path, False), "--no-default-spreading", "--default-spreading", "controllers")
    assert result.code == 2
    assert "not both" in result.err and "Traceback" not in result.err


def test_the_option_offers_every_mode_the_engine_knows():
    from gpufleet.cli.check import PodsMadeBy
    from gpufleet.scheduling.engine import SPREADING

    assert [m.value for m in PodsMadeBy] == list(SPREADING)


@pytest.mark.parametrize(("mode", "pending"), [("direct", "none"), ("controllers", f"`Deployment/{NS}/big`")])
def test_report_draws_the_placement_of_the_mode_it_is_given(tmp_path, mode, pending):
    files = _files(tmp_path, False)
    summary = tmp_path / "summary.md"
    result = run("report", "--out", str(tmp_path / "page.html"), "--summary", str(summary), *files,
                 "--default-spreading", mode)
    assert result.code == 0, result.err
    row = next(line for line in summary.read_text().splitlines() if line.startswith("| nodes without a pool"))
    assert row.rstrip(" |").endswith(pending)


@pytest.mark.parametrize(("mode", "instances"), [("direct", 1), ("controllers", 0)])
def test_headroom_places_the_manifests_with_the_mode_it_is_given(tmp_path, mode, instances):
    """The Deployment's two 1-GPU pods: packed on the emptier node (direct) a 2-GPU probe still fits on the
    other; spread one per node (controllers), none does."""
    nodes_opt, nodes, pods_opt, pods, manifests = _files(tmp_path, False)
    small = [d for d in yaml.safe_load_all(Path(manifests).read_text()) if d["metadata"]["name"] == "small"]
    (tmp_path / "small.yaml").write_text(yaml.safe_dump_all(small))
    probe = tmp_path / "probe.yaml"
    probe.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": NS},
                                     "spec": pod_spec(container(requests={"cpu": "100m"},
                                                                limits={"nvidia.com/gpu": "2"}))}))
    result = run("headroom", "--probe", str(probe), nodes_opt, nodes, pods_opt, pods, str(tmp_path / "small.yaml"),
                 "--json", "--default-spreading", mode)
    assert result.code == 0, result.err
    assert json.loads(result.out)["instances"] == instances
