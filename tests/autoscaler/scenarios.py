"""Generated autoscaling scenarios (a seed makes one): a few nodes in node groups, node groups of GPU and CPU
templates, and GPU workloads that overflow them, with the autoscaler's options. The real cluster-autoscaler's
answers on them are recorded in tests/fixtures/oracle-autoscaler/ (scripts/record_autoscaler_oracle.py).

`write(scenario, directory)` gives nodes.json, groups.yaml and app.yaml; `args(scenario)` the options, as
`gpufleet check` and the reference both take them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

GROUP_LABEL = "gpufleet.dev/node-group"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
#: name -> (cpu, memory, GPUs, product)
SHAPES = {
    "a100x4": ("16", "128Gi", 4, "NVIDIA-A100-SXM4-80GB"),
    "h100x8": ("192", "2000Gi", 8, "NVIDIA-H100-80GB-HBM3"),
    "l4x1": ("8", "32Gi", 1, "NVIDIA-L4"),
    "t4x4": ("48", "192Gi", 4, "Tesla-T4"),
    "cpu": ("32", "128Gi", 0, ""),
}


def _node(name: str, shape: str, tainted: bool, group: str | None) -> dict:
    cpu, memory, gpus, product = SHAPES[shape]
    alloc = {"cpu": cpu, "memory": memory, "pods": "110", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    labels = {"kubernetes.io/os": "linux",
              **({"nvidia.com/gpu.product": product, "nvidia.com/gpu.present": "true"} if product else {}),
              **({GROUP_LABEL: group} if group else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [GPU_TAINT] if tainted else []},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def _workload(rng: random.Random, i: int, products: list[str]) -> dict:
    gpus = rng.choice([0, 1, 1, 1, 2, 4, 8]) if i else 1
    spec: dict = {"containers": [{"name": "c", "image": "registry.example/app:1", "resources": {
        "requests": {"cpu": str(rng.choice([1, 2, 4, 8])), "memory": f"{rng.choice([4, 8, 16, 64])}Gi"},
        "limits": {"nvidia.com/gpu": gpus} if gpus else {}}}]}
    if gpus and rng.random() < 0.7:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if gpus and products and rng.random() < 0.3:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": rng.choice(products)}
    if rng.random() < 0.1:
        spec["priorityClassName"] = "scavenger"
    if rng.random() < 0.15:  # one per node (the pods repel each other)
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": f"w{i}"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    name, replicas = f"w{i}", rng.randint(1, 12)
    meta = {"name": name, "namespace": "ml"}
    template = {"metadata": {"labels": {"app": name}}, "spec": spec}
    if rng.random() < 0.25:
        template["spec"]["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                "spec": {"parallelism": replicas, "completions": replicas, "template": template}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}}


def _daemonset(rng: random.Random) -> dict:
    spec = {"nodeSelector": {"nvidia.com/gpu.present": "true"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "agent", "image": "registry.example/agent:1", "resources": {"requests": {
                "cpu": rng.choice(["500m", "2", "6"]), "memory": rng.choice(["1Gi", "8Gi", "24Gi"])}}}]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "gpu-agent", "namespace": "monitoring"},
            "spec": {"selector": {"matchLabels": {"app": "gpu-agent"}},
                     "template": {"metadata": {"labels": {"app": "gpu-agent"}}, "spec": spec}}}


def scenario(seed: int) -> dict:
    rng = random.Random(seed)
    shapes = rng.sample(sorted(SHAPES), rng.randint(2, 4))
    groups, nodes = [], []
    for shape in shapes:
        name, tainted = shape.replace("x", "-x"), SHAPES[shape][2] > 0 and rng.random() < 0.6
        members = rng.choice([0, 0, 1, 2])
        for k in range(members):
            nodes.append(_node(f"{name}-{k}", shape, tainted, name))
        high = members + rng.choice([0, 1, 2, 3, 5])
        target = members + (1 if high > members and rng.random() < 0.15 else 0)
        template = _node(f"template-{name}", shape, tainted, name)
        del template["metadata"]["name"]
        groups.append({"name": name, "minSize": 0, "maxSize": high, "targetSize": target, "template": template})
    nodes.append(_node("system-0", "cpu", False, None))
    products = sorted({SHAPES[s][3] for s in shapes if SHAPES[s][3]})
    objects: list[dict] = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": "scavenger"}, "value": -100}]
    if rng.random() < 0.35:  # an agent on every GPU node, holding room a new node cannot give the workloads
        objects.append(_daemonset(rng))
    objects += [_workload(rng, i, products) for i in range(rng.randint(1, 5))]
    options: list[str] = []
    if rng.random() < 0.2:
        options += ["--expander", "most-pods"]
    if rng.random() < 0.2:
        options += ["--max-nodes-total", str(len(nodes) + rng.randint(1, 4))]
    if rng.random() < 0.2:
        gpus = sum(int(n["status"]["allocatable"].get("nvidia.com/gpu", 0)) for n in nodes)
        options += ["--gpu-total", f"0:{gpus + rng.choice([4, 8, 16])}"]
    return {"seed": seed, "nodes": nodes, "groups": groups, "objects": objects, "options": options}


def write(s: dict, directory: Path) -> tuple[Path, Path, Path]:
    directory = Path(directory)
    paths = directory / "nodes.json", directory / "groups.yaml", directory / "app.yaml"
    paths[0].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": s["nodes"]}, indent=1))
    paths[1].write_text(yaml.safe_dump(s["groups"], sort_keys=False))
    paths[2].write_text(yaml.safe_dump_all(s["objects"], sort_keys=False))
    return paths


#: The expander chains the expander scenarios cycle through (tests/fixtures/oracle-autoscaler/expanders.json).
CHAINS = ("priority,least-waste", "priority", "least-nodes", "priority,most-pods", "most-pods,least-nodes")


def expander_variant(seed: int, s: dict) -> tuple[list[str], dict[int, list[str]] | None]:
    """The scenario's options with an expander chain in place of its own, and the priority expander's
    priorities when the chain has `priority`: most groups get a priority of 10, 20 or 50 through an exact
    name, a prefix or a fragment, so some tie, some match no expression, and sometimes none matches at all."""
    rng = random.Random(seed * 7 + 1)
    priorities: dict[int, list[str]] = {}
    for group in s["groups"]:
        name = group["name"]
        if rng.random() < 0.8:
            pattern = rng.choice([f"^{name}$", name.split("-")[0] + ".*", name[:2]])
            priorities.setdefault(rng.choice([10, 20, 50]), []).append(pattern)
    chain = CHAINS[seed % len(CHAINS)]
    options = list(s["options"])
    if "--expander" in options:
        at = options.index("--expander")
        del options[at:at + 2]
    return ["--expander", chain, *options], (priorities or {1: ["^no-such-group$"]}) if "priority" in chain else None
