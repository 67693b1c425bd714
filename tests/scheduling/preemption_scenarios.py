"""Deterministic small GPU fleets with priorities and PodDisruptionBudgets, to compare gpufleet's preemption
with the real kube-scheduler's (scripts/record_preemption_oracle.py records them; test_preemption_oracle.py
compares).

`scenario(seed)` gives a dict:
- `nodes`: 3-10 Nodes (`kubectl get nodes -o json` items) of 1, 2, 4 or 8 GPUs;
- `classes`: PriorityClasses: `batch-low` (100), `inference-high` (1000), on some seeds a `standard` class
  (500) that is the globalDefault, and an `inference-polite` class (1000, preemptionPolicy Never);
- `running`: low-priority workloads that fill most of the fleet, created before anything else and left to
  run: Deployments, Jobs and bare Pods (some without a class, so the globalDefault or 0 applies);
- `pdbs`: policy/v1 PodDisruptionBudgets over some running workloads (minAvailable as a count or a
  percentage, maxUnavailable), some allowing no disruption at all;
- `manifests`: the new workloads, created together: high-priority Deployments and Jobs that need
  preemption, some that fit without it, some that cannot run even by preemption (more GPUs a pod than any
  node has, or a class that never preempts), and sometimes a low-priority Deployment earlier in the same
  manifest.
`write(s, dir)` writes nodes.json, running.yaml and app.yaml (the classes, the PDBs and the new workloads:
what `gpufleet check --nodes nodes.json --pods pods.json app.yaml` reads, with pods.json the running pods as
a recorded run exported them). Only `random.Random(seed)` draws, so a seed always gives the same files.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

GPU = "nvidia.com/gpu"
H100 = "NVIDIA-H100-80GB-HBM3"
LOW, HIGH, DEFAULT, POLITE = "batch-low", "inference-high", "standard", "inference-polite"
RUN_NS, NEW_NS = "batch", "ml"
IMAGE = "registry.example/gpu-app:1"


def node(index: int, gpus: int) -> dict:
    name = f"gpu-{index:02d}"
    alloc = {"cpu": "96", "memory": "1000Gi", "pods": "110", "ephemeral-storage": "1000Gi", GPU: str(gpus)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  "nvidia.com/gpu.product": H100,
                                                  "nvidia.com/gpu.count": str(gpus)}},
            "spec": {}, "status": {"allocatable": dict(alloc), "capacity": dict(alloc)}}


def priority_class(name: str, value: int, default: bool = False, never: bool = False) -> dict:
    obj: dict = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                 "value": value, "globalDefault": default}
    if never:
        obj["preemptionPolicy"] = "Never"
    return obj


def pod_spec(gpus: int, klass: str | None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": IMAGE,
                                  "resources": {"requests": {"cpu": "1", GPU: str(gpus)},
                                                "limits": {GPU: str(gpus)}}}]}
    if klass:
        spec["priorityClassName"] = klass
    return spec


def workload(kind: str, name: str, ns: str, pods: int, gpus: int, klass: str | None) -> dict:
    labels = {"app": name}
    template = {"metadata": {"labels": labels}, "spec": pod_spec(gpus, klass)}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": template["spec"]}
    if kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
                "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 6, "template": template}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": pods, "selector": {"matchLabels": labels}, "template": template}}


def pod_count(obj: dict) -> int:
    spec = obj["spec"]
    return {"Pod": 1, "Job": spec.get("parallelism", 1)}.get(obj["kind"], spec.get("replicas", 1))


def pod_gpus(obj: dict) -> int:
    spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"]["template"]["spec"]
    return int(spec["containers"][0]["resources"]["requests"][GPU])


def pdb(name: str, target: dict, rule: str, rng: random.Random) -> dict:
    count = pod_count(target)
    if rule == "all":  # allows no disruption
        spec: dict = {"minAvailable": count}
    elif rule == "half":
        spec = {"minAvailable": "50%"}
    else:
        spec = {"maxUnavailable": rng.choice([1, 1, 2])}
    labels = (target["metadata"]["labels"] if target["kind"] == "Pod"
              else target["spec"]["template"]["metadata"]["labels"])
    spec["selector"] = {"matchLabels": dict(labels)}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": RUN_NS}, "spec": spec}


def scenario(seed: int) -> dict:
    rng = random.Random(seed)
    sizes = [rng.choice([1, 2, 4, 4, 8, 8]) for _ in range(rng.randint(3, 10))]
    nodes = [node(i + 1, g) for i, g in enumerate(sizes)]
    with_default, with_polite = rng.random() < 0.4, rng.random() < 0.35
    classes = [priority_class(LOW, 100), priority_class(HIGH, 1000)]
    if with_default:
        classes.append(priority_class(DEFAULT, 500, default=True))
    if with_polite:
        classes.append(priority_class(POLITE, 1000, never=True))

    # running: fill a fraction of the fleet, workload by workload, each pod fitting a node
    total, biggest = sum(sizes), max(sizes)
    target = round(total * rng.choice([0.75, 0.9, 1.0, 1.0]))
    running: list[dict] = []
    used = 0
    while used < target and len(running) < 8:
        gpus = rng.choice([g for g in (1, 1, 2, 4) if g <= biggest])
        pods = max(1, min(rng.randint(1, 4), (target - used) // gpus))
        kind = rng.choice(["Deployment", "Deployment", "Job", "Pod"])
        if kind == "Pod":
            pods = 1
        klass = LOW if rng.random() < 0.8 else None
        running.append(workload(kind, f"{kind.lower()}-{len(running) + 1}", RUN_NS, pods, gpus, klass))
        used += pods * gpus
    pdbs = []
    for w in running:
        if w["kind"] != "Pod" and pod_count(w) > 1 and rng.random() < 0.5:
            pdbs.append(pdb(f"pdb-{w['metadata']['name']}", w, rng.choice(["all", "half", "max"]), rng))

    manifests: list[dict] = []
    if rng.random() < 0.35:  # a low-priority workload a later high-priority one may evict
        manifests.append(workload("Deployment", "low-late", NEW_NS, rng.randint(1, 2),
                                  rng.choice([1, 2]), LOW))
    for i in range(rng.randint(1, 3)):
        kind = rng.choice(["Deployment", "Job"])
        gpus = rng.choice([g for g in (1, 2, 4, 8) if g <= biggest])
        pods = rng.randint(1, max(1, min(4, total // (2 * gpus))))
        klass = HIGH if not with_default or rng.random() < 0.7 else None
        manifests.append(workload(kind, f"infer-{i + 1}", NEW_NS, pods, gpus, klass))
    if rng.random() < 0.3:  # can never run: more GPUs a pod than any node has
        manifests.append(workload("Deployment", "too-big", NEW_NS, 1, biggest * 2, HIGH))
    if with_polite and rng.random() < 0.7:  # high priority that never preempts
        pods, gpus = rng.randint(1, 2), rng.choice([1, 2])
        manifests.append(workload("Deployment", "polite", NEW_NS, pods, gpus, POLITE))
    return {"seed": seed, "nodes": nodes, "classes": classes, "running": running, "pdbs": pdbs,
            "manifests": manifests}


def owner_key(pod: dict) -> str:
    """A running pod's workload key as the contract names victims: a ReplicaSet's pod (named
    `<deployment>-<pod-template-hash>`) is its Deployment's, a Job's its Job's, a bare pod its own."""
    meta = pod["metadata"]
    ns = meta["namespace"]
    for ref in meta.get("ownerReferences") or ():
        if not ref.get("controller"):
            continue
        if ref["kind"] == "ReplicaSet":
            suffix = "-" + (meta.get("labels") or {}).get("pod-template-hash", "")
            if ref["name"].endswith(suffix) and len(suffix) > 1:
                return f"Deployment/{ns}/{ref['name'][:-len(suffix)]}"
            return f"ReplicaSet/{ns}/{ref['name']}"
        return f"{ref['kind']}/{ns}/{ref['name']}"
    return f"Pod/{ns}/{meta['name']}"


def write(s: dict, out: Path) -> list[Path]:
    """nodes.json, running.yaml (what the recorder runs first) and app.yaml (classes, PDBs, new workloads)."""
    out.mkdir(parents=True, exist_ok=True)
    nodes, running, app = out / "nodes.json", out / "running.yaml", out / "app.yaml"
    nodes.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": s["nodes"]}, indent=1) + "\n")
    running.write_text(yaml.safe_dump_all(s["running"], sort_keys=False))
    app.write_text(yaml.safe_dump_all([*s["classes"], *s["pdbs"], *s["manifests"]], sort_keys=False))
    return [nodes, running, app]
