"""Benchmark `gpufleet discover` on a live cluster against `discover --nodes/--pods` on kubectl files of the same
objects (a script, not a test).

The cluster is served by the loopback API server of the test suite (tests/discovery/apiserver.py), in its own
process, so its work is not counted: LIST pages of 500 with continue tokens, bearer-token auth, objects of
realistic size (tests/discovery/objects.py: managedFields, GFD labels, 24 images a node, env, probes, volumes,
conditions and container statuses; about 9-12 KB a node and 4.5 KB a pod; the DRA objects too). The files
are what `kubectl get nodes -o json` / `kubectl get pods -A -o json` write of the same objects (indented,
without managedFields, as kubectl shows them).

Each figure is the median of --repeat runs of a fresh `gpufleet discover` process: CPU seconds (user + system,
from wait4; the process is single-threaded, so this is its run time on an idle core, while wall time on a
shared machine also measures the neighbours; it is printed alongside) and peak resident memory. The two
capacity.json files are compared, apart from `source`.

Targets (issue "Live clusters read as kubectl reads them"): live <= 1.5 x files in time and in peak memory,
at 2,000 nodes / 20,000 pods and at 10,000 / 100,000.

Usage: python bench/discover_bench.py [--sizes 2000x20000,10000x100000] [--repeat N]
       (default: 2000x20000; the 10k/100k files take about 0.5 GB on disk and the run some minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPUFLEET = "from gpufleet.cli import main; main()"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
WRITE_FILES = """
import json, sys
from pathlib import Path
from tests.discovery.objects import dra_objects, node, pod

n, p, where = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])


def kubectl(obj, kind, api):
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {"apiVersion": api, "kind": kind, **obj, "metadata": meta}


def write(name, items):
    with open(where / name, "w") as f:
        f.write('{\\n    "apiVersion": "v1",\\n    "items": [\\n')
        for i, item in enumerate(items):
            f.write((",\\n" if i else "") + "        " + json.dumps(item, indent=4).replace("\\n", "\\n        "))
        f.write('\\n    ],\\n    "kind": "List",\\n    "metadata": {\\n        "resourceVersion": ""\\n    }\\n}\\n')


write("nodes.json", (kubectl(node(i, n), "Node", "v1") for i in range(n)))
write("pods.json", (kubectl(pod(i, n), "Pod", "v1") for i in range(p)))
kinds = {"deviceclasses": "DeviceClass", "resourceslices": "ResourceSlice", "resourceclaims": "ResourceClaim"}
write("dra.json", (kubectl(o, kinds[r], "resource.k8s.io/v1") for r, objs in dra_objects().items() for o in objs))
"""


def run(args: list[str], repeat: int) -> tuple[float, float, float]:
    """(median CPU s, median wall s, median peak RSS MiB) of `python <args>` as a fresh process."""
    cpus, walls, peaks = [], [], []
    for _ in range(repeat):
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - started)
        err = proc.stderr.read().decode()
        proc.stderr.close()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(map(str, args[2:5]))} ... failed: {err.strip()[-2000:]}")
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)
    return statistics.median(cpus), statistics.median(walls), statistics.median(peaks)


def serve(nodes: int, pods: int, where: Path) -> tuple[subprocess.Popen, str]:
    portfile = where / "server-url"
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "discovery" / "apiserver.py"), str(nodes),
                               str(pods), str(portfile)], env=ENV)
    while not portfile.exists() or not portfile.read_text():
        if server.poll() is not None:
            raise SystemExit("the loopback API server did not start")
        time.sleep(0.2)
    return server, portfile.read_text()


def kubeconfig(url: str, path: Path) -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "bench",
        "clusters": [{"name": "loopback", "cluster": {"server": url}}],
        "users": [{"name": "bench", "user": {"token": "gpufleet-test-token"}}],
        "contexts": [{"name": "bench", "context": {"cluster": "loopback", "user": "bench"}}]}))
    return path


def compare(nodes: int, pods: int, repeat: int, tmp: Path) -> dict:
    where = tmp / f"{nodes}x{pods}"
    where.mkdir()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", WRITE_FILES, str(nodes), str(pods), str(where)], env=ENV, check=True)
    server, url = serve(nodes, pods, where)
    try:
        size = sum((where / f).stat().st_size for f in ("nodes.json", "pods.json")) / 2**20
        print(f"{nodes:,} nodes / {pods:,} pods: kubectl files {size:,.0f} MiB; set up in "
              f"{time.perf_counter() - started:.0f} s")
        files = run(["-c", GPUFLEET, "discover", "--nodes", str(where / "nodes.json"), "--pods",
                     str(where / "pods.json"), "--dra", str(where / "dra.json"), "--out", str(where / "files.json")],
                    repeat)
        live = run(["-c", GPUFLEET, "discover", "--kubeconfig", str(kubeconfig(url, where / "kubeconfig")),
                    "--out", str(where / "live.json")], repeat)
    finally:
        server.terminate()
        server.wait()
    same = _model(where / "files.json") == _model(where / "live.json")
    for name, (cpu, wall, mib) in (("files (--nodes/--pods/--dra)", files), ("live (--kubeconfig, paged)", live)):
        print(f"  {name:30} {cpu:7.2f} s cpu ({wall:7.2f} s wall)  {mib:8.0f} MiB peak")
    ratios = {"cpu": live[0] / files[0], "wall": live[1] / files[1], "memory": live[2] / files[2]}
    print(f"  live / files: cpu {ratios['cpu']:.2f}x, wall {ratios['wall']:.2f}x, peak memory "
          f"{ratios['memory']:.2f}x; same capacity model apart from source: {same}")
    return {**ratios, "same": same}


def _model(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc.pop("source")
    return doc


def verdict(target: str, value: float, limit: float) -> bool:
    ok = value <= limit
    print(f"  target {target}: {value:.2f} <= {limit:g}  {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000x20000",
                        help="NODESxPODS[,NODESxPODS...] (the issue's: 2000x20000,10000x100000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            nodes, pods = (int(n) for n in size.lower().split("x"))
            r = compare(nodes, pods, args.repeat, Path(tmp))
            results += [verdict("live/files cpu time", r["cpu"], 1.5),
                        verdict("live/files wall time", r["wall"], 1.5),
                        verdict("live/files peak memory", r["memory"], 1.5)]
            results.append(r["same"])
    print("all targets met" if all(results) else f"{results.count(False)} target(s) not met")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
