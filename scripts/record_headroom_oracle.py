#!/usr/bin/env python3
"""Record how many more of a probe pod the real kube-scheduler places on a generated fleet (a test fixture).

    python scripts/record_headroom_oracle.py --oracle PATH --name NAME --seed S --nodes N --shape SHAPE \
        --probe PROBE [--oversubscription X] [--runs 3]

A developer script (the tests never run it, nor the reference scheduler). It generates the fleet with
tests/scheduling/oracle_fleets.py, appends the probe as a Deployment of more replicas than the nodes' free
resources could hold (gpufleet.scheduling.headroom.upper_bound), runs the reference `--runs` times and writes
tests/fixtures/oracle-headroom/NAME.json: the generator's parameters, the probe, and per run how many probe
pods were scheduled and the FailedScheduling message of the first that was not. That is cluster-capacity's
method (kubernetes-sigs/cluster-capacity): place copies of the pod until one does not fit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.record_oracle import SCHEDULER, inputs_sha256, run_once  # noqa: E402
from tests.scheduling.headroom_probes import PROBES, probe_deployment  # noqa: E402
from tests.scheduling.oracle_fleets import SHAPES, generate, write  # noqa: E402

ABOUT = ("How many copies of `probe` the real kube-scheduler v1.34.1 (in-process over a fake clientset, default "
         "profile) placed after the fleet that tests/scheduling/oracle_fleets.py generates from `generator`: the "
         "probe was appended as a Deployment of `replicas` pods, more than the free resources hold. Each entry of "
         "`runs` is one run (ties are broken at random): probe pods scheduled, and the FailedScheduling message "
         "of the first that was not. Recorded by scripts/record_headroom_oracle.py; the tests never run it.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--shape", required=True, choices=list(SHAPES))
    ap.add_argument("--probe", required=True, choices=list(PROBES))
    ap.add_argument("--oversubscription", type=float)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--out-dir", type=Path, default=ROOT / "tests" / "fixtures" / "oracle-headroom")
    args = ap.parse_args()

    fleet = generate(args.seed, args.nodes, args.shape, args.oversubscription)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write(fleet, Path(tmp))
        digest = inputs_sha256(paths)
        deployment, key = probe_deployment(args.probe, fleet.nodes, fleet.pods)
        with open(paths[2], "a", encoding="utf-8") as f:
            f.write("---\n" + yaml.safe_dump(deployment))
        for i in range(args.runs):
            out, wall = run_once(args.oracle, paths, args.timeout)
            probe = next(w for w in out["workloads"] if w["workload"] == key)
            runs.append({"scheduled": probe["scheduled"], "message": probe.get("message") or None})
            print(f"{args.name}: run {i + 1}: {probe['scheduled']} placed ({wall:.1f}s)", file=sys.stderr)
    fixture = {"about": ABOUT, "scheduler": SCHEDULER, "generator": fleet.params, "inputs_sha256": digest,
               "probe": args.probe, "replicas": deployment["spec"]["replicas"], "runs": runs}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    path = args.out_dir / f"{args.name}.json"
    path.write_text(json.dumps(fixture, indent=2) + "\n")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
