#!/usr/bin/env python3
"""Record what the real control plane does with the preemption scenarios, as one test fixture.

    python scripts/record_preemption_oracle.py --seeds 0-23 --runs 2 \
        --out tests/fixtures/oracle-preemption/scenarios.json

A developer script (the tests never run it): for each seed it builds the scenario with
tests/scheduling/preemption_scenarios.py and, `--runs` times, on a fresh control plane of tests/e2e/cluster.py
(etcd, kube-apiserver with the Priority admission plugin, kube-controller-manager, kube-scheduler, KWOK):
1. creates the nodes, the PriorityClasses and the running workloads, and waits until the scheduler placed
   them and nothing moves;
2. creates the PodDisruptionBudgets and waits until the disruption controller gave each its status;
3. exports the running pods (as `kubectl get pods -A -o json`, cut to the fields gpufleet reads) and the
   PDBs with their status;
4. creates the new workloads at once, watches every pod until nothing moves, and records per workload its
   pods scheduled and pending, and each victim: a pod the scheduler's `Preempted` events name after the new
   workloads were created (the event's message names the preemptor pod's UID and the node), counted once
   however many events name it. A victim violates a PDB when the PDB's
   disruptionsAllowed at the export, less the victims of that PDB before it (in event order), is 0.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle_args import digest, seeds  # noqa: E402

from tests.e2e.cluster import Cluster, ClusterError, bin_dir  # noqa: E402
from tests.e2e.kwok_nodes import create_nodes, nodes_from_items, wait_nodes_ready  # noqa: E402
from tests.e2e.workloads import PATHS, create_all, ensure_namespaces, workload_key  # noqa: E402
from tests.scheduling.preemption_scenarios import owner_key, pod_count, scenario, write  # noqa: E402

ABOUT = ("What a real control plane did with the scenarios tests/scheduling/preemption_scenarios.py "
         "`scenario(seed)` generates: etcd, kube-apiserver (Priority admission), kube-controller-manager "
         "(ReplicaSet, Job, disruption and garbage-collector controllers) and kube-scheduler {version} with "
         "its default profile (DefaultPreemption), KWOK {kwok} for the nodes, as tests/e2e/cluster.py runs "
         "them. "
         "Per seed, `inputs_sha256` is the digest of the files `write` makes (the tests regenerate them and "
         "check it); each entry of `runs` is one run on a fresh cluster: `pods` (the running pods as the run "
         "exported them, cut to what gpufleet reads) and `pdbs` (their status at that time) are what check "
         "reads; `workloads` gives per workload (the running ones and the new ones) its pods scheduled and "
         "pending once nothing moved; `preemptions` per preemptor workload its victims, from the "
         "scheduler's Preempted events after the new workloads were created (each victim pod once), "
         "grouped by victim workload, node and priority; pdbViolated is "
         "computed from the PDB's disruptionsAllowed at the export less the victims before. Recorded by "
         "scripts/record_preemption_oracle.py; the tests never run a cluster for it.")
PREEMPTED = re.compile(r"Preempted by (?:pod )?(?:\S+/)?(?P<uid>[0-9a-f-]{36})(?: on node (?P<node>\S+))?")
QUIET = 4.0
PATHS.setdefault("PodDisruptionBudget", ("/apis/policy/v1", "poddisruptionbudgets"))


def trimmed_pod(pod: dict) -> dict:
    """The fields of a `kubectl get pods -o json` item that gpufleet reads (no token volume, no defaults)."""
    meta, spec = pod["metadata"], pod["spec"]
    keep_meta = {k: meta[k] for k in ("name", "namespace", "labels", "uid", "creationTimestamp") if k in meta}
    keep_meta["ownerReferences"] = [{k: r[k] for k in ("apiVersion", "kind", "name", "uid", "controller")
                                     if k in r} for r in meta.get("ownerReferences") or ()]
    if not keep_meta["ownerReferences"]:
        del keep_meta["ownerReferences"]
    containers = [{"name": c["name"], "image": c["image"], "resources": c.get("resources") or {}}
                  for c in spec["containers"]]
    keep_spec = {k: spec[k] for k in ("nodeName", "priority", "priorityClassName", "preemptionPolicy",
                                      "schedulerName", "restartPolicy", "tolerations") if k in spec}
    status = pod.get("status") or {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": keep_meta,
            "spec": {"containers": containers, **keep_spec},
            "status": {k: status[k] for k in ("phase", "startTime") if k in status}}


def trimmed_pdb(pdb: dict) -> dict:
    status = pdb.get("status") or {}
    return {"namespace": pdb["metadata"]["namespace"], "name": pdb["metadata"]["name"], "spec": pdb["spec"],
            "status": {**{k: status.get(k) for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy",
                                                     "expectedPods")},
                       "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                                      for c in status.get("conditions") or ()]}}


def matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def user_pods(api) -> list[dict]:
    return [p for p in api.ok("GET", "/api/v1/pods")["items"] if p["metadata"]["namespace"] != "kube-system"]


def wait_quiet(api, wanted: dict[str, int], seen: dict[str, dict], timeout: float = 60) -> float | None:
    """Poll every pod until each workload has its pods, each pod is bound or marked unschedulable and no pod
    moved for QUIET seconds; every pod ever seen is kept in `seen` (uid -> pod). None when that did not
    happen within `timeout` seconds (the run records it as not settled)."""
    start = time.monotonic()
    last, changed = None, start
    while True:
        pods = user_pods(api)
        for p in pods:
            seen[p["metadata"]["uid"]] = p
        counts: dict[str, int] = {}
        for p in pods:
            counts[owner_key(p)] = counts.get(owner_key(p), 0) + 1
        state = sorted((p["metadata"]["uid"], p["spec"].get("nodeName"),
                        (p.get("status") or {}).get("nominatedNodeName"),
                        bool(p["metadata"].get("deletionTimestamp"))) for p in pods)
        decided = all(p["spec"].get("nodeName") or any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in p.get("status", {}).get("conditions") or ()) for p in pods)
        now = time.monotonic()
        if state != last:
            last, changed = state, now
        complete = all(counts.get(k, 0) >= n for k, n in wanted.items())
        if complete and decided and now - changed >= QUIET:
            return now - start
        if now - start > timeout:
            return None
        time.sleep(0.4)


def wait_pdbs(api, names: list[tuple[str, str]], timeout: float = 20) -> list[dict]:
    """The PDBs once the disruption controller gave each a status. One over pods whose controller has no
    scale subresource (a Job, bare pods) with maxUnavailable or a percentage gets no counts, only a
    DisruptionAllowed=False condition (SyncFailed); after `timeout` seconds the PDBs are taken as they are."""
    deadline = time.monotonic() + timeout
    while True:
        items = [p for p in api.ok("GET", "/apis/policy/v1/poddisruptionbudgets")["items"]
                 if (p["metadata"]["namespace"], p["metadata"]["name"]) in names]
        ready = [p for p in items
                 if (p.get("status") or {}).get("observedGeneration") == p["metadata"]["generation"]
                 and (p.get("status") or {}).get("expectedPods") is not None]
        if len(ready) == len(names) or time.monotonic() > deadline:
            return items
        time.sleep(0.4)


def one_run(bins: Path, state: Path, s: dict) -> dict:
    cluster = Cluster(state, bins).start(90)
    try:
        api = cluster.api()
        create_nodes(api, nodes_from_items(s["nodes"]))
        wait_nodes_ready(api, [n["metadata"]["name"] for n in s["nodes"]])
        everything = s["running"] + s["manifests"]
        ensure_namespaces(api, {o["metadata"]["namespace"] for o in everything})
        refused = create_all(api, s["classes"] + s["running"])
        if refused:
            raise ClusterError(f"refused: {refused}")
        seen: dict[str, dict] = {}
        wait_quiet(api, {workload_key(w): pod_count(w) for w in s["running"]}, seen)
        if s["pdbs"]:
            create_all(api, [{**p, "apiVersion": "policy/v1"} for p in s["pdbs"]])
        pdbs = wait_pdbs(api, [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in s["pdbs"]])
        before = sorted(user_pods(api), key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
        pods = [trimmed_pod(p) for p in before]
        # events of the setup (running workloads that preempted each other while they were placed) are not
        # what the new workloads did
        earlier = {e["metadata"]["uid"] for e in api.ok("GET", "/api/v1/events")["items"]}
        started = time.monotonic()
        refused = create_all(api, s["manifests"])
        # only the new workloads must have all their pods: a preempted bare pod is gone for good
        wanted = {workload_key(w): pod_count(w) for w in s["manifests"] if workload_key(w) not in refused}
        quiet = wait_quiet(api, wanted, seen)
        wall = time.monotonic() - started if quiet is not None else None
        final = user_pods(api)
        events = [e for e in api.ok("GET", "/api/v1/events")["items"]
                  if e.get("reason") == "Preempted" and e["metadata"]["uid"] not in earlier]
        return record(s, pods, [trimmed_pdb(p) for p in pdbs], final, seen, events, refused, wall)
    finally:
        cluster.stop()


def ghost(s: dict, ref: dict) -> dict | None:
    """A pod no poll saw, from its name: the workload whose pods are named so, its labels and priority."""
    ns, name = ref.get("namespace"), ref.get("name") or ""
    values = {c["metadata"]["name"]: c["value"] for c in s["classes"]}
    default = next((c["value"] for c in s["classes"] if c.get("globalDefault")), 0)
    for w in s["running"] + s["manifests"]:
        wname = w["metadata"]["name"]
        if w["metadata"]["namespace"] != ns or not (name == wname or name.startswith(wname + "-")):
            continue
        if (w["kind"] == "Pod") != (name == wname):
            continue
        spec = w["spec"] if w["kind"] == "Pod" else w["spec"]["template"]["spec"]
        meta = w["metadata"] if w["kind"] == "Pod" else w["spec"]["template"]["metadata"]
        labels = dict(meta["labels"])
        owner = {"Pod": []}.get(w["kind"], [{"kind": "Job", "name": wname, "controller": True}])
        if w["kind"] == "Deployment":
            labels["pod-template-hash"] = name[len(wname) + 1:].split("-")[0]
            rs = f"{wname}-{labels['pod-template-hash']}"
            owner = [{"kind": "ReplicaSet", "name": rs, "controller": True}]
        priority = values.get(spec.get("priorityClassName"), default)
        return {"metadata": {"name": name, "namespace": ns, "labels": labels, "ownerReferences": owner},
                "spec": {"priority": priority}}
    return None


def record(s, pods, pdbs, final, seen, events, refused, wall) -> dict:
    workloads = {}
    for w in s["running"] + s["manifests"]:
        key = workload_key(w)
        mine = [p for p in final if owner_key(p) == key and not p["metadata"].get("deletionTimestamp")]
        nodes: dict[str, int] = {}
        for p in mine:
            if p["spec"].get("nodeName"):
                nodes[p["spec"]["nodeName"]] = nodes.get(p["spec"]["nodeName"], 0) + 1
        workloads[key] = {"scheduled": sum(nodes.values()), "pending": len(mine) - sum(nodes.values()),
                          "nodes": dict(sorted(nodes.items()))}
        if key in refused:
            workloads[key]["rejected"] = refused[key]
    allowed = {(p["namespace"], p["name"]): p["status"]["disruptionsAllowed"] or 0 for p in pdbs}
    groups: dict[str, dict[tuple, dict]] = {}
    unparsed = []

    def when(e: dict) -> str:
        return e.get("eventTime") or e.get("firstTimestamp") or e.get("lastTimestamp") or ""

    counted: set[str] = set()
    for e in sorted(events, key=when):
        # A victim is evicted once, but can be named by two events: with asynchronous preemption the
        # preemptor may run a second preemption while its last victim's deletion is still under way, and
        # that names the same victim again (the second delete of a terminating pod succeeds).
        if e["involvedObject"].get("uid") in counted:
            continue
        counted.add(e["involvedObject"].get("uid"))
        m = PREEMPTED.search(e.get("message") or e.get("note") or "")
        # the event is about the victim; `related` is the preemptor (either may have come and gone between
        # two polls: then its workload, labels and priority follow from its name)
        victim = seen.get(e["involvedObject"].get("uid")) or ghost(s, e["involvedObject"])
        preemptor = (seen.get(m["uid"]) if m else None) or ghost(s, e.get("related") or {})
        if not (m and victim and preemptor):
            unparsed.append(e.get("message"))
            continue
        node = m["node"] or victim["spec"].get("nodeName")
        labels = victim["metadata"].get("labels") or {}
        violated = []
        for (ns, name), left in allowed.items():
            spec = next(p["spec"] for p in pdbs if (p["namespace"], p["name"]) == (ns, name))
            if ns == victim["metadata"]["namespace"] and matches(spec["selector"], labels):
                if left <= 0:
                    violated.append(f"{ns}/{name}")
                allowed[(ns, name)] = left - 1
        vkey = (owner_key(victim), node, victim["spec"].get("priority", 0))
        group = groups.setdefault(owner_key(preemptor), {}).setdefault(
            vkey, {"workload": vkey[0], "pods": 0, "node": node, "priority": vkey[2], "pdbViolated": False,
                   "pdbs": []})
        group["pods"] += 1
        if violated:
            group["pdbViolated"] = True
            group["pdbs"] = sorted(set(group["pdbs"]) | set(violated))
    preemptions = [{"workload": k, "victims": sorted(v.values(), key=lambda g: (g["workload"], g["node"]))}
                   for k, v in sorted(groups.items())]
    out = {"pods": pods, "pdbs": pdbs, "workloads": workloads, "preemptions": preemptions,
           "settle_s": round(wall, 1) if wall is not None else None}
    if unparsed:
        out["unparsedEvents"] = unparsed
    return out


def versions(bins: Path) -> tuple[str, str]:
    import subprocess

    sched = subprocess.run([str(bins / "kube-scheduler"), "--version"], capture_output=True, text=True).stdout
    kwok = subprocess.run([str(bins / "kwok"), "--version"], capture_output=True, text=True).stdout
    # "Kubernetes v1.34.5" and "kwok version v0.7.0 go1.26.8 (linux/amd64)"
    pick = [w for w in (sched + " " + kwok).split() if w.startswith("v") and w[1:2].isdigit()]
    return (pick + ["?", "?"])[0], (pick + ["?", "?"])[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0-23")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    bins = bin_dir()
    if bins is None:
        sys.exit("the control plane is not built: run scripts/build-cluster-tools")
    version, kwok = versions(bins)
    recorded = []
    with tempfile.TemporaryDirectory(prefix="preemption-oracle-") as tmp:
        for seed in seeds(args.seeds):
            s = scenario(seed)
            paths = write(s, Path(tmp) / f"seed-{seed}")
            runs = [one_run(bins, Path(tmp) / "cluster", s) for _ in range(args.runs)]
            recorded.append({"seed": seed, "inputs_sha256": digest(paths), "runs": runs})
            print(f"seed {seed}: {[r['preemptions'] for r in runs]} "
                  f"{[r['settle_s'] for r in runs]}", file=sys.stderr, flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"about": ABOUT.format(version=version, kwok=kwok),
                                            "reference": {"kube-scheduler": version, "kwok": kwok},
                                            "generator": "tests/scheduling/preemption_scenarios.py",
                                            "scenarios": recorded}, indent=1) + "\n")


if __name__ == "__main__":
    main()
