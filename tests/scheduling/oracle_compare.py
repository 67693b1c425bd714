"""Compare `gpufleet check --json` with recorded runs of the real kube-scheduler (tests/fixtures/oracle).

`compare(check_json, fixture)` is pure. Run as a script, it regenerates each fixture's fleet (with
oracle_fleets.generate), runs `gpufleet check` on it and prints the metrics and verdicts:

    python tests/scheduling/oracle_compare.py tests/fixtures/oracle/*.json [--show 5]

A workload is Pending in gpufleet if it is `unschedulable` with reason pending or rejected, warned if it is
only in `warnings`; pending in a real run if any of its pods was left pending (or it was rejected).
Metrics: false_pending (gpufleet Pending, every real run placed all its pods), silent_miss (pending in every
real run, gpufleet neither Pending nor warned), real_spread (the most two real runs' pending sets differ by),
distance (the least gpufleet's Pending set differs from a real run's), warnings (warned-only workloads),
message_mismatch (Pending in gpufleet and every real run, gpufleet's message unlike every run's).

`held_out` asks how often an answer misses real runs it was not made from: three real runs read as gpufleet
reads its own three (Pending where all pend, warned where some do), judged by the fixture's other runs, give the
rate at which the real scheduler misses itself (its random tie-breaks); gpufleet is judged by the same runs.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pending_in_run(run: dict) -> dict[str, int]:
    """workload -> pending pods, for the workloads of one recorded run that left pods pending."""
    return {w: r["pending"] for w, r in run.items()
            if r["pending"] > 0 and r.get("reason") != "other-scheduler"}


def _gpufleet_sets(check_json: dict) -> tuple[dict[str, dict], set[str]]:
    """(Pending workload -> its unschedulable entry, warned-only workloads) of a `gpufleet check --json`."""
    pending = {u["workload"]: u for u in check_json.get("unschedulable", [])
               if u["reason"] in ("pending", "rejected")}
    unschedulable = {u["workload"] for u in check_json.get("unschedulable", [])}
    warned = {w["workload"] for w in check_json.get("warnings", [])} - unschedulable
    return pending, warned


def compare(check_json: dict, fixture: dict) -> dict:
    """The metrics of one gpufleet answer against a fixture's real runs (defined in the module docstring).

    Besides the done-when metrics: `message_spread` (workloads pending in every real run whose message
    differs between real runs: how noisy message_mismatch is) and `count_mismatch` (workloads Pending in
    gpufleet and in every real run whose pending pod count is outside the real runs' range)."""
    runs = fixture["runs"]
    workloads = sorted(set().union(*(run.keys() for run in runs)))
    real = [set(pending_in_run(run)) for run in runs]
    pending, warned = _gpufleet_sets(check_json)
    mine = set(pending)
    always = set.intersection(*real) if real else set()
    ever = set.union(*real) if real else set()
    both = sorted(mine & always)
    return {
        "workloads": len(workloads),
        "false_pending": sorted(mine - ever),
        "silent_miss": sorted(always - mine - warned),
        "real_spread": max((len(a ^ b) for a, b in itertools.combinations(real, 2)), default=0),
        "distance": min((len(mine ^ r) for r in real), default=len(mine)),
        "warnings": len(warned),
        "message_mismatch": [w for w in both if all(pending[w]["message"] != r[w]["message"] for r in runs)],
        "message_spread": sum(1 for w in sorted(always) if len({r[w]["message"] for r in runs}) > 1),
        "count_mismatch": [w for w in both if pending[w]["pending"] not in
                           range(min(r[w]["pending"] for r in runs), max(r[w]["pending"] for r in runs) + 1)],
    }


def held_out(check_json: dict, fixture: dict, model_runs: int = 3) -> dict[str, int]:
    """How often gpufleet misses real runs it is judged on, against how often the real scheduler misses its own.

    The fixture's real runs are split every way into `model_runs` of them and the rest, held out. Per split,
    the misses on the held-out runs (false Pending plus silent misses, as `compare` counts them) of gpufleet's
    answer, and of the model runs read as gpufleet reads its own runs: Pending where every one of them leaves
    pods pending, warned where some do. Totals over the splits: `gpufleet`, `real` (the real scheduler as its
    own predictor), `splits` (0 when the fixture has no more than `model_runs` runs)."""
    runs, totals = fixture["runs"], {"gpufleet": 0, "real": 0, "splits": 0}
    for model in itertools.combinations(range(len(runs)), model_runs):
        rest = {**fixture, "runs": [run for i, run in enumerate(runs) if i not in model]}
        if not rest["runs"]:
            break
        sets = [set(pending_in_run(runs[i])) for i in model]
        always = set.intersection(*sets)
        as_answer = {"unschedulable": [{"workload": w, "reason": "pending", "pending": 0, "message": ""}
                                       for w in sorted(always)],
                     "warnings": [{"workload": w} for w in sorted(set.union(*sets) - always)]}
        for who, answer in (("gpufleet", check_json), ("real", as_answer)):
            m = compare(answer, rest)
            totals[who] += len(m["false_pending"]) + len(m["silent_miss"])
        totals["splits"] += 1
    return totals


def verdicts(m: dict) -> dict[str, bool]:
    """The done-when criteria: no false pending, no silent miss, close to the real spread, few warnings."""
    return {"no false pending": not m["false_pending"],
            "no silent miss": not m["silent_miss"],
            "distance <= real spread + 1%": m["distance"] <= m["real_spread"] + 0.01 * m["workloads"],
            "warnings <= 2%": m["warnings"] <= 0.02 * m["workloads"]}


def _gpufleet() -> list[str]:
    for exe in (ROOT / ".venv" / "bin" / "gpufleet", shutil.which("gpufleet")):
        if exe and Path(exe).exists():
            return [str(exe)]
    return [sys.executable, "-c", "from gpufleet.cli import main; main()"]


def check(fixture: dict, directory: Path, gpufleet: list[str] | None = None) -> tuple[dict, bool]:
    """Regenerate the fixture's fleet into `directory`; (`gpufleet check --json` on it, whether the
    regenerated files are the ones recorded)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.scheduling.oracle_fleets import generate, write

    g = fixture["generator"]
    paths = write(generate(g["seed"], g["nodes"], g["shape"], g.get("oversubscription")), directory)
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()
    nodes, pods, manifests = map(str, paths)
    command = (gpufleet or _gpufleet()) + ["check", "--nodes", nodes, "--pods", pods, manifests, "--json"]
    proc = subprocess.run(command, capture_output=True, text=True, check=False, cwd=directory)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"gpufleet check exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout), fixture.get("inputs_sha256") in (None, digest)


def _examples(m: dict, check_json: dict, fixture: dict, show: int) -> list[str]:
    pending, lines = _gpufleet_sets(check_json)[0], []
    for key in ("false_pending", "silent_miss", "count_mismatch", "message_mismatch"):
        for w in m[key][:show]:
            real, mine = [r.get(w, {}) for r in fixture["runs"]], pending.get(w)
            counts = [r.get("pending") for r in real]
            lines += [f"    {key}: {w}", f"      real: {counts} pending, run 1: {real[0].get('message')}",
                      f"      gpufleet: {mine['pending']} pending: {mine['message']}" if mine else
                      "      gpufleet: not pending"]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Compare gpufleet check with recorded real kube-scheduler runs.")
    ap.add_argument("fixtures", nargs="+", type=Path)
    ap.add_argument("--show", type=int, default=3, help="examples to print per kind of difference")
    ap.add_argument("--gpufleet", type=shlex.split, help="the command that runs gpufleet (default: "
                    ".venv/bin/gpufleet, else gpufleet on PATH)")
    args = ap.parse_args(argv)
    all_ok = True
    for path in args.fixtures:
        fixture = json.loads(path.read_text())
        with tempfile.TemporaryDirectory() as tmp:
            check_json, same = check(fixture, Path(tmp), args.gpufleet)
        m = compare(check_json, fixture)
        v = verdicts(m)
        all_ok &= all(v.values())
        g = fixture["generator"]
        print(f"{path.name}: {g['shape']} seed {g['seed']}, {fixture.get('nodes', g['nodes'])} nodes, "
              f"{m['workloads']} workloads, {len(fixture['runs'])} real runs")
        if not same:
            all_ok = False
            print("  STALE: the generator no longer makes the recorded fleet (inputs_sha256 differs)")
        real_sizes = [len(pending_in_run(r)) for r in fixture["runs"]]
        print(f"  pending: real {real_sizes}, gpufleet {len(_gpufleet_sets(check_json)[0])}; real_spread "
              f"{m['real_spread']}, distance {m['distance']}, warnings {m['warnings']}")
        print(f"  false_pending {len(m['false_pending'])}, silent_miss {len(m['silent_miss'])}, "
              f"count_mismatch {len(m['count_mismatch'])}, message_mismatch {len(m['message_mismatch'])} "
              f"(real runs disagree on {m['message_spread']} messages)")
        print("  " + ", ".join(f"{k}: {'ok' if ok else 'FAIL'}" for k, ok in v.items()))
        h = held_out(check_json, fixture)
        if h["splits"]:
            print(f"  held out (3 runs as the answer, the rest judge it, {h['splits']} splits): gpufleet misses "
                  f"{h['gpufleet']}, the real scheduler's own runs {h['real']}")
        for line in _examples(m, check_json, fixture, args.show):
            print(line)
    print("all done-when criteria met" if all_ok else "some done-when criteria not met")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
