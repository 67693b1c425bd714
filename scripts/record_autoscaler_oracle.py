#!/usr/bin/env python3
"""Record what the real cluster-autoscaler does with generated autoscaling scenarios, as one test fixture.

    python scripts/record_autoscaler_oracle.py --scheduler PATH --reference PATH --seeds 0-59 --runs 3 \
        --out tests/fixtures/oracle-autoscaler/scenarios.json

A developer script (the tests never run it, nor the references): for each seed it builds the scenario with
tests/autoscaler/scenarios.py, writes it to a temporary directory and, `--runs` times:
1. runs the scheduler reference (the real kube-scheduler v1.34 in-process, pods created in manifest order,
   each waited for: `SCHEDULER --nodes nodes.json app.yaml`, the interface of tools/schedoracle) to place
   what fits the nodes there are;
2. runs the autoscaler reference on the result: the pods placed, bound to their nodes; the workloads with
   only their Pending pods. It is cluster-autoscaler 1.34.5's scale-up orchestrator, binpacking estimator
   and expanders run in-process over a fake cluster (its test cloud provider; a node is in a group by its
   `gpufleet.dev/node-group` label), looping as RunOnce does until no scale-up happens:
   `REFERENCE --nodes nodes.json --pods pods.json --node-groups groups.yaml [--expander E]
   [--max-nodes-total N] [--gpu-total MIN:MAX] --seed S app.yaml` prints JSON (scaleUps; per workload its
   pods placed after scale-up, still pending, the groups they went to and each group's NoScaleUp reason).
Run k uses seed k for the autoscaler (its expanders break ties at random); the scheduler's own ties are
broken at random too. The last `--reversed-runs` runs hand the autoscaler the Pending workloads in reverse
order: a live autoscaler lists unschedulable pods in its informer cache's order, which nothing fixes, and
which workload gets the room of nodes on their way can depend on it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle_args import digest, seeds  # noqa: E402

from tests.autoscaler.scenarios import expander_variant, scenario, write  # noqa: E402

ABOUT = ("What the real kube-scheduler v1.34 (pods in manifest order) and then cluster-autoscaler 1.34.5 "
         "(k8s.io/autoscaler tag cluster-autoscaler-1.34.5: the scale-up orchestrator, binpacking estimator and "
         "expanders, run in-process over a fake cluster, the loop repeated until no scale-up happens) did with the "
         "scenarios tests/autoscaler/scenarios.py `scenario(seed)` generates. Per seed, `inputs_sha256` is the "
         "digest of the files written (the tests regenerate them and check it) and each entry of `runs` is one "
         "run with its own random seed (the last two with the Pending workloads handed to the autoscaler in "
         "reverse order, `pendingOrder`, as a live autoscaler's list has no fixed order): the scale-ups "
         "(group, from, to) and per workload its pods scheduled "
         "before scale-up, after it, and left pending, with each node group's NoScaleUp reason. Recorded by "
         "scripts/record_autoscaler_oracle.py; the tests never run the autoscaler.")


KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "Pod")


def scheduled(scheduler: Path, paths) -> dict[str, list[str]]:
    """Workload -> the nodes its pods were placed on, by the scheduler reference."""
    done = subprocess.run([str(scheduler), "--nodes", str(paths[0]), str(paths[2])], capture_output=True, text=True,
                          timeout=600)
    if not done.stdout.strip():
        sys.exit(f"the scheduler reference printed nothing: {done.stderr[-2000:]}")
    return {w["workload"]: list(w.get("nodes") or []) for w in json.loads(done.stdout)["workloads"]}


def remaining(objects: list[dict], placed: dict[str, list[str]], tmp: Path) -> tuple[Path, Path]:
    """pods.json (the placed pods, bound) and the workloads with only their Pending pods (a workload fully
    placed is left out); other objects (PriorityClasses) stay."""
    from gpufleet.manifests.workloads import workload_of

    bound, left = [], []
    for obj in objects:
        w = workload_of(obj)
        if w is None:
            left.append(obj)
            continue
        nodes = placed.get(w.key, [])
        for i, node in enumerate(nodes):
            meta = {"name": f"{w.name}-placed-{i}", "namespace": w.namespace, "labels": dict(w.labels)}
            bound.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                          "spec": {**w.spec, "nodeName": node}, "status": {"phase": "Running"}})
        pending = w.replicas - len(nodes)
        if pending > 0:
            spec = dict(obj["spec"])
            if obj["kind"] == "Job":
                spec["parallelism"] = spec["completions"] = pending
            else:
                spec["replicas"] = pending
            left.append({**obj, "spec": spec})
    pods, app = tmp / "placed-pods.json", tmp / "pending.yaml"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": bound}))
    import yaml

    app.write_text(yaml.safe_dump_all(left, sort_keys=False))
    return pods, app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, type=Path, help="the cluster-autoscaler reference")
    parser.add_argument("--scheduler", required=True, type=Path, help="the kube-scheduler reference")
    parser.add_argument("--seeds", default="0-59")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reversed-runs", type=int, default=2,
                        help="further runs with the Pending workloads handed to the autoscaler in reverse order")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--version", default="")
    parser.add_argument("--expanders", action="store_true",
                        help="run each scenario with an expander chain, and the priority expander's priorities, "
                             "from tests/autoscaler/scenarios.py expander_variant (the expanders fixture)")
    args = parser.parse_args()
    recorded = []
    version = args.version
    for seed in seeds(args.seeds):
        s = scenario(seed)
        options = s["options"] if "--expander" in s["options"] else ["--expander", "least-waste", *s["options"]]
        priorities = None
        if args.expanders:
            options, priorities = expander_variant(seed, s)
        with tempfile.TemporaryDirectory() as tmp:
            paths = write(s, Path(tmp))
            given = list(options)
            if priorities is not None:  # the reference takes the ConfigMap's `priorities` value as a file
                import yaml

                config = Path(tmp) / "priorities.yaml"
                config.write_text(yaml.safe_dump(priorities))
                options = [*options, "--priority-config", str(config)]
            runs, walls = [], []
            for run in range(1, args.runs + args.reversed_runs + 1):
                start = time.time()
                placed = scheduled(args.scheduler, paths)
                objects = s["objects"]
                if run > args.runs:  # the autoscaler's list of unschedulable pods has no fixed order
                    workloads = [o for o in objects if o["kind"] in KINDS]
                    objects = [o for o in objects if o["kind"] not in KINDS] + workloads[::-1]
                pods, app = remaining(objects, placed, Path(tmp))
                done = subprocess.run([str(args.reference), "--nodes", str(paths[0]), "--pods", str(pods),
                                       "--node-groups", str(paths[1]), *options, "--seed", str(run), str(app)],
                                      capture_output=True, text=True, timeout=600)
                walls.append(round(time.time() - start, 2))
                if not done.stdout.strip():
                    sys.exit(f"seed {seed}: the reference printed nothing: {done.stderr[-2000:]}")
                out = json.loads(done.stdout)
                version = version or out.get("version", "")
                after = {w["workload"]: w for w in out.get("workloads") or ()}
                workloads = {}
                for key, nodes in placed.items():
                    w = after.get(key, {})
                    workloads[key] = {"pods": len(nodes) + (w.get("pods") or 0), "scheduledNow": len(nodes),
                                      "afterScaleUp": w.get("afterScaleUp", 0) + w.get("scheduledNow", 0),
                                      "pending": w.get("pending", 0), "nodeGroups": w.get("nodeGroups") or {},
                                      "noScaleUp": w.get("noScaleUp") or {}}
                runs.append({"scaleUps": out.get("scaleUps") or [], "workloads": workloads,
                             "pendingOrder": "reversed" if run > args.runs else "manifest"})
            entry = {"seed": seed, "inputs_sha256": digest(paths), "options": given if args.expanders else s["options"],
                     "run_wall_s": walls, "runs": runs}
            if priorities is not None:
                entry["priorities"] = {str(k): v for k, v in priorities.items()}
            recorded.append(entry)
        print(f"seed {seed}: {[r['scaleUps'] for r in runs]}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"about": ABOUT, "reference": version, "generator": "tests/autoscaler/scenarios.py",
                                    "scenarios": recorded}, indent=1) + "\n")


if __name__ == "__main__":
    main()
