"""`gpufleet report` on a fleet where a workload runs only by preemption: its victims are listed, page and
summary, and the pods it evicts are no longer drawn on the map."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from gpufleet.cli import app

runner = CliRunner()

APP = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: inference-high}
value: 1000
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, namespace: llm}
spec:
  replicas: 1
  selector: {matchLabels: {app: chat}}
  template:
    metadata: {labels: {app: chat}}
    spec:
      priorityClassName: inference-high
      containers: [{name: c, image: "vllm/vllm-openai:v0.11.0", resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def _fleet(tmp_path):
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-01", "labels": {"kubernetes.io/hostname": "gpu-01",
                                                      "nvidia.com/gpu.product": "NVIDIA-L4"}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "2"}}}

    def training(name: str, uid: str) -> dict:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "team-b", "uid": uid, "labels": {"app": "train"},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                                                  "uid": "j", "controller": True}]},
                "spec": {"nodeName": "gpu-01", "priority": 100, "containers": [
                    {"name": "main", "image": "t:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": {"phase": "Running", "startTime": "2026-11-01T00:00:00Z"}}

    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [node]}))
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": [training("train-a", "a"),
                                                                              training("train-b", "b")]}))
    (tmp_path / "app.yaml").write_text(APP)


def _report(tmp_path) -> None:
    r = runner.invoke(app, ["report", "--nodes", str(tmp_path / "nodes.json"), "--pods", str(tmp_path / "pods.json"),
                            str(tmp_path / "app.yaml"), "--out", str(tmp_path / "r.html"),
                            "--summary", str(tmp_path / "s.md")])
    assert r.exit_code == 0, r.output


def test_report_lists_victims_and_draws_the_node_without_the_evicted_pod(tmp_path):
    _fleet(tmp_path)
    _report(tmp_path)
    summary = (tmp_path / "s.md").read_text()
    assert "**1 workload(s) evict lower-priority pods to run:**" in summary
    assert "- `Deployment/llm/chat` evicts 1 pod(s) of Job/team-b/train on gpu-01 (priority 100)" in summary
    # two GPUs: the new pod on one, the training pod left on the other; the evicted one is not drawn
    assert "| NVIDIA-L4 | 1 | 2 | 0 |" in summary
    page = (tmp_path / "r.html").read_text()
    section = page[page.index('<section id="preemptions">'):page.index('<section id="workloads">')]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    assert cells == ["Deployment/llm/chat", "1", "Job/team-b/train", "gpu-01", "100", ""]
    assert 'class="verdict by-preemption">by preemption<' in page
    running = re.search(r"pods already running</td>\s*<td>(\d+) / (\d+)", page)
    assert running is not None and running.groups() == ("1", "1")  # of the two, one stays


def test_report_without_priorities_has_no_preemption_section(tmp_path):
    _fleet(tmp_path)
    (tmp_path / "app.yaml").write_text(APP.replace("priorityClassName: inference-high", "priorityClassName: ''"))
    _report(tmp_path)
    assert 'id="preemptions"' not in (tmp_path / "r.html").read_text()
    summary = (tmp_path / "s.md").read_text()
    assert "evicting" not in summary
    assert "`Deployment/llm/chat`" in summary  # Pending: both GPUs stay with the training pods


def test_report_names_the_evictions_in_turn_and_draws_the_running_pods_new_pod(tmp_path):
    # gpu-01 (pool serving) runs team-b's training Job (priority 100), gpu-02 team-c's scratch Job (priority 0).
    # chat (1000, pool serving) evicts the training pod; the Job makes a new one, which evicts the scratch pod.
    def node(name: str, labels: dict) -> dict:
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                    "kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-L4", **labels}},
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"}}}

    def job_pod(name: str, namespace: str, job: str, node_name: str, priority: int) -> dict:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace, "uid": name, "labels": {"app": job},
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                                  "uid": job, "controller": True}]},
                "spec": {"nodeName": node_name, "priority": priority, "containers": [
                    {"name": "main", "image": "t:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                "status": {"phase": "Running", "startTime": "2026-11-01T00:00:00Z"}}

    (tmp_path / "nodes.json").write_text(json.dumps({"kind": "List", "items": [
        node("gpu-01", {"pool": "serving"}), node("gpu-02", {})]}))
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "List", "items": [
        job_pod("train-a", "team-b", "train", "gpu-01", 100), job_pod("scratch-a", "team-c", "scratch", "gpu-02", 0)]}))
    serving = "priorityClassName: inference-high\n      nodeSelector: {pool: serving}"
    (tmp_path / "app.yaml").write_text(APP.replace("priorityClassName: inference-high", serving))
    _report(tmp_path)
    summary = (tmp_path / "s.md").read_text()
    assert "**1 workload(s) evict lower-priority pods to run:**" in summary
    assert ("- `Job/team-b/train`'s new pods (`Deployment/llm/chat` evicted its own) evict 1 pod(s) of "
            "Job/team-c/scratch on gpu-02 (priority 0)") in summary
    page = (tmp_path / "r.html").read_text()
    section = page[page.index('<section id="preemptions">'):page.index('<section id="workloads">')]
    assert "Job/team-b/train (its new pods, after Deployment/llm/chat evicted its own)" in section
    running = re.search(r"pods already running</td>\s*<td>(\d+) / (\d+)", page)
    assert running is not None and running.groups() == ("1", "1")  # both evicted; train's new pod runs on gpu-02
