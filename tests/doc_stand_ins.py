"""What the docs' examples read that a reader brings: `kubectl get ... -o json` files of their cluster, their
manifests, a probe, a pack config. The doc-example test (tests/test_docs.py) writes these stand-ins into its
copy of the project before it runs an example, choosing them by the files the example names.

Where a doc shows an example's output, the stand-in is the input that output came from: the fleets of the
tests that hold the real kube-scheduler's answers for them (tests/scheduling/test_blocked_by.py, the
recorded headroom fleet), so the shown output is compared with what gpufleet prints on them today.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from doc_examples import ROOT, Example

FIXTURES = ROOT / "tests" / "fixtures"
HEADROOM_FLEET = FIXTURES / "oracle-headroom" / "ho-mixed-600-gpu4.json"

CLAIMING_DEPLOYMENT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer, namespace: ml}
spec:
  replicas: 2
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers:
        - name: server
          image: nvcr.io/nvidia/tritonserver:25.01-py3
          resources: {claims: [{name: gpu}]}
"""


def kubectl_list(objects: list[dict]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects,
                       "metadata": {"resourceVersion": ""}})


def objects_in(path: Path) -> list[dict]:
    if path.suffix == ".json":
        return json.loads(path.read_text())["items"]
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def write(project: Path, files: dict[str, str]) -> None:
    """Each `name: text` as a file of the project; a name ending in / is a directory holding app.yaml."""
    for name, text in files.items():
        path = project / name
        if name.endswith("/"):
            shutil.rmtree(path, ignore_errors=True)
            path = path / "app.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def cluster(project: Path) -> list[str]:
    """A small mixed cluster (T4 with MPS, A100 MIG, H100, a cordoned node), a GPU Deployment, a pack config;
    capacity.json as `gpufleet discover` saves it from those files."""
    app = (FIXTURES / "manifests" / "fits.yaml").read_text()
    write(project, {"nodes.json": (FIXTURES / "nodes-mixed-cluster.json").read_text(),
                    "pods.json": (FIXTURES / "pods-mixed-cluster.json").read_text(),
                    "app.yaml": app, "manifests/": app, "my-own-manifests/": app,
                    "pack.json": json.dumps({"all": "mandatory"})})
    return ["gpufleet discover --nodes nodes.json --pods pods.json --out capacity.json --force"]


def dra_cluster(project: Path) -> list[str]:
    """Two DRA nodes of 8 H100s (their ResourceSlices and DeviceClasses, one allocated claim) and a Deployment
    claiming one GPU per pod through a template, under each name the DRA examples use."""
    dra = FIXTURES / "dra"
    classes, slices = dra / "deviceclasses.yaml", dra / "resourceslices.json"
    write(project, {"nodes.json": (dra / "nodes.json").read_text(), "pods.json": kubectl_list([]),
                    "deviceclasses.yaml": classes.read_text(), "slices.json": slices.read_text(),
                    "dra.json": kubectl_list(objects_in(slices) + objects_in(classes)),
                    "claims.json": (dra / "resourceclaims.json").read_text(),
                    "my-claim-templates-and-pods.yaml": CLAIMING_DEPLOYMENT,
                    "workloads/": CLAIMING_DEPLOYMENT})
    return []


def l4_trap(project: Path) -> list[str]:
    """The L4 trap of tests/scheduling/test_blocked_by.py: 300 nodes and the four Deployments."""
    from tests.scheduling.test_blocked_by import _fleet

    nodes, workloads = _fleet()
    write(project, {"nodes.json": kubectl_list(nodes), "workloads.yaml": yaml.safe_dump_all(workloads)})
    return []


def headroom_fleet(project: Path) -> list[str]:
    """The recorded 600-node headroom fleet: its nodes and running pods, the 4x H100 probe as trainer.yaml,
    and the fleet's own Deployments as rollout.yaml."""
    from tests.scheduling.headroom_probes import probe_pod
    from tests.scheduling.oracle_fleets import generate
    from tests.scheduling.oracle_fleets import write as write_fleet

    recorded = json.loads(HEADROOM_FLEET.read_text())
    g = recorded["generator"]
    fleet = generate(g["seed"], g["nodes"], g["shape"], g.get("oversubscription"))
    _, _, manifests = write_fleet(fleet, project)
    manifests.rename(project / "rollout.yaml")
    write(project, {"trainer.yaml": yaml.safe_dump(probe_pod(recorded["probe"]))})
    return []


def autoscaling(project: Path) -> list[str]:
    """One A100 node of group a100 and a Deployment of six 1-GPU pods; groups.yaml is the file
    docs/autoscaling.md shows (a100 like that node, and an H100 template)."""
    doc = (ROOT / "docs" / "autoscaling.md").read_text()
    groups = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    gpu = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4"}
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-0", "labels": {"gpufleet.dev/node-group": "a100",
                                                     "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
            "status": {"allocatable": gpu, "capacity": gpu}}
    app = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "infer", "namespace": "ml"},
           "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "infer"}}, "template": {
               "metadata": {"labels": {"app": "infer"}}, "spec": {"containers": [{
                   "name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "resources": {
                       "requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"nvidia.com/gpu": 1}}}]}}}}
    write(project, {"nodes.json": kubectl_list([node]), "groups.yaml": groups, "app.yaml": yaml.safe_dump(app)})
    return []


def broken_stack(project: Path) -> list[str]:
    """`dev` with the two mistakes the README's example names: `mode: operatr`, `gpu: {count: 0.5}`."""
    doc = yaml.safe_load((project / "Pulumi.dev.yaml").read_text())
    config = doc["config"]
    config["gpufleet:mode"] = "operatr"
    config["gpufleet:workloads"][1]["gpu"] = {"count": 0.5}
    write(project, {"Pulumi.example.yaml": yaml.safe_dump(doc, sort_keys=False)})
    return []


def pack_without_nodes_file(project: Path) -> list[str]:
    """A pack config whose capacity source is a nodes file it does not name."""
    write(project, {"pack.json": json.dumps({"gpu-capacity-fit": {"capacitySource": "nodesFile"}})})
    return []


@dataclass(frozen=True)
class Scenario:
    name: str
    applies: Callable[[Example], bool]
    make: Callable[[Path], list[str]]  # writes the files; returns gpufleet commands that make the rest
    placeholders: dict[str, str] = field(default_factory=dict)


def preemption(project: Path) -> list[str]:
    """One 8-GPU node gpu-07 running a pod of Deployment team-b/train at priority 100 (a budget keeps one of
    them); serving.yaml: a PriorityClass of 1000 and a Deployment ml/infer of one 8-GPU pod in it."""
    from tests.scheduling.kube import node
    from tests.scheduling.test_preemption import deployment, pdb, priority_class, running

    serving = [priority_class("serving", 1000), pdb("train", "team-b", {"app": "train"}, minAvailable=1),
               deployment("infer", "ml", 1, 8, priorityClassName="serving")]
    write(project, {"nodes.json": kubectl_list([node("gpu-07", 8)]),
                    "pods.json": kubectl_list([running("train-5f6d-a", "gpu-07", 8, priority=100)]),
                    "serving.yaml": yaml.safe_dump_all(serving)})
    return []


def priority_fleet(project: Path) -> list[str]:
    """Three 4-GPU nodes (tests/cli/test_headroom_preemption.py): gpu-a full of team-b's training at priority
    100, gpu-b of critical work at 5000, gpu-c half training; classes.yaml: inference-high (1000) and polite
    (1000, Never); infer-probe.yaml: a 1-GPU pod."""
    from tests.cli.test_headroom_preemption import CLASSES, fleet_files

    write(project, {**fleet_files(), "classes.yaml": yaml.safe_dump_all(CLASSES)})
    return []


DRA_FILES = ("dra.json", "claims.json", "slices.json", "my-claim-templates-and-pods.yaml")


def names(*files: str) -> Callable[[Example], bool]:
    return lambda e: any(f in e.command.split() for f in files)


def names_broken_stack(e: Example) -> bool:
    return "--stack <stack>" in e.command and "operatr" in e.comment


def shows_pack_without_nodes_file(e: Example) -> bool:
    return "pack.json" in e.command and "nodesFile" in "".join(e.shown)


#: The first that applies to an example is its stand-in; `cluster` applies to every example.
SCENARIOS = [
    Scenario("broken stack", names_broken_stack, broken_stack, {"<stack>": "example"}),
    Scenario("pack config without nodesFile", shows_pack_without_nodes_file, pack_without_nodes_file),
    Scenario("headroom fleet", names("trainer.yaml"), headroom_fleet),
    Scenario("L4 trap", names("workloads.yaml"), l4_trap),
    Scenario("DRA cluster", names(*DRA_FILES), dra_cluster),
    Scenario("autoscaling", names("groups.yaml"), autoscaling),
    Scenario("preemption", names("serving.yaml"), preemption),
    Scenario("headroom at a priority", names("infer-probe.yaml"), priority_fleet),
    Scenario("cluster", lambda e: True, cluster, {"<stack>": "dev", "MANIFEST...": "app.yaml"}),
]


def scenario_of(example: Example) -> Scenario:
    return next(s for s in SCENARIOS if s.applies(example))
