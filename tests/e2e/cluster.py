"""A real Kubernetes control plane on loopback for the end-to-end tests: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and KWOK (simulated nodes), built by scripts/build-cluster-tools.

    python -m tests.e2e.cluster up [--dir DIR] [--timeout S]    start one, leave it running, print KUBECONFIG
    python -m tests.e2e.cluster down [--dir DIR]                stop the one started in DIR

Every component listens on a free 127.0.0.1 port and keeps its data, certificates and log under the state
directory. The API server runs with RBAC, the default admission plugins (LimitRanger, ResourceQuota and
Priority among them) and resource.k8s.io/v1. A start that is not ready within its timeout stops what it
started and raises ClusterError with the failing component's last log lines. Only processes this module
started are stopped (each in its own process group: SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build-cluster-tools"
DEFAULT_DIR = ROOT / ".cache" / "cluster"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
#: The annotation KWOK manages nodes by: nodes made by kwok_nodes.py carry it.
KWOK_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
SERVICE_RANGE = "10.96.0.0/16"
POD_CIDR = "10.244.0.0/16"
LOG_LINES = 30
#: KWOK's stages as the build script copies them: nodes become Ready and heartbeat, pods Running; no
#: pod-complete, so Job pods hold their capacity as in gpufleet's model.
KWOK_STAGES = "kwok-stages.yaml"


class ClusterError(RuntimeError):
    """The control plane could not be built, started or reached."""


def bin_dir(build: bool = False) -> Path | None:
    """The directory of the built binaries for the pinned versions, or None when they are not built yet.
    With build=True, builds them first (minutes when Go's caches are cold)."""
    if build:
        done = subprocess.run([str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise ClusterError(f"{BUILD_SCRIPT} failed (exit {done.returncode})")
        return Path(done.stdout.strip().splitlines()[-1])
    key = _pins_key()
    path = ROOT / ".cache" / "cluster-tools" / key / "bin"
    return path if all((path / n).is_file() for n in (*COMPONENTS, KWOK_STAGES)) else None


def _pins_key() -> str:
    # The same key as scripts/build-cluster-tools: the sha256 of every go.mod and go.sum, sorted by path.
    import hashlib

    tools = ROOT / "tools" / "cluster"
    files = sorted(str(p.relative_to(ROOT)) for p in tools.rglob("go.*") if p.name in ("go.mod", "go.sum"))
    digest = hashlib.sha256(b"".join((ROOT / f).read_bytes() for f in files))
    return digest.hexdigest()[:16]


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port(taken: tuple[int, ...] = ()) -> int:
    """A port free now, below the kernel's ephemeral range: a port the kernel hands out (bind to 0) can be
    taken by any outgoing connection between this check and the component's own bind, which is how a CI
    run once lost kube-controller-manager's port."""
    import random

    low, _ = _ephemeral_range()
    ceiling = low - 1 if low > 11000 else 60999
    for _ in range(200):
        port = random.randint(10000, ceiling)
        if port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = LOG_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


# --- certificates ---------------------------------------------------------------------------------------

def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args[:2])} failed: {done.stderr.strip()}")


def make_pki(pki: Path) -> None:
    """A CA, the API server's serving certificate, an admin client certificate (system:masters) and the
    service-account signing key, as EC P-256 keys (fast to make)."""
    pki.mkdir(parents=True, exist_ok=True)
    for key in ("ca", "apiserver", "admin", "sa"):
        _openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{key}.key", cwd=pki)
    _openssl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=gpufleet-e2e-ca", "-days", "30",
             "-out", "ca.crt", cwd=pki)
    sans = "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default," \
           "DNS:kubernetes.default.svc"
    for name, subj, ext in (("apiserver", "/CN=kube-apiserver", sans),
                            ("admin", "/O=system:masters/CN=e2e-admin", "extendedKeyUsage=clientAuth")):
        _openssl("req", "-new", "-key", f"{name}.key", "-subj", subj, "-out", f"{name}.csr", cwd=pki)
        (pki / f"{name}.ext").write_text(ext + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "30", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=pki)


def write_kubeconfig(path: Path, server: str, ca: Path, user: dict) -> None:
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
        "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "e2e", "user": user}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e"}}],
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")


# --- a small REST client ----------------------------------------------------------------------------------

class Api:
    """JSON over HTTPS to the API server with a client certificate or a bearer token (no retries)."""

    def __init__(self, server: str, ca: Path, cert: tuple[Path, Path] | None = None,
                 token: str | None = None):
        url = urllib.parse.urlsplit(server)
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=str(ca))
        if cert:
            self.ctx.load_cert_chain(str(cert[0]), str(cert[1]))
        self.token = token
        self._conn: http.client.HTTPSConnection | None = None

    def request(self, method: str, path: str, body: object = None, content_type: str = "application/json",
                timeout: float = 30) -> tuple[int, dict]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        for attempt in (0, 1):  # one reconnect when a kept-alive connection was closed by the server
            if self._conn is None:
                self._conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                         timeout=timeout)
            try:
                self._conn.request(method, path, body=data, headers=headers)
                resp = self._conn.getresponse()
                raw = resp.read()
                break
            except (http.client.HTTPException, OSError):
                self._conn.close()
                self._conn = None
                if attempt:
                    raise
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {"raw": raw.decode(errors="replace")}
        return resp.status, doc

    def ok(self, method: str, path: str, body: object = None, **kw) -> dict:
        status, doc = self.request(method, path, body, **kw)
        if status >= 300:
            raise ClusterError(f"{method} {path}: HTTP {status}: {doc.get('message', doc)}")
        return doc

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# --- the cluster ------------------------------------------------------------------------------------------

@dataclass
class Proc:
    name: str
    popen: subprocess.Popen | None
    pid: int
    log: Path


@dataclass
class Cluster:
    """One control plane in `state_dir`. `start()` returns once every component is ready."""

    state_dir: Path
    bins: Path
    procs: list[Proc] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def pki(self) -> Path:
        return self.state_dir / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def api(self, token: str | None = None) -> Api:
        """A client as the admin (system:masters), or as the bearer of `token`."""
        if token:
            return Api(self.server, self.pki / "ca.crt", token=token)
        return Api(self.server, self.pki / "ca.crt", cert=(self.pki / "admin.crt", self.pki / "admin.key"))

    def start(self, timeout: float = 60, tries: int = 3) -> Cluster:
        """Start on fresh ports; a component that lost its port to another process between the pick and
        its bind is a start to try again, up to `tries` times, not a failed test."""
        for attempt in range(1, tries + 1):
            try:
                return self._start_once(timeout)
            except ClusterError as exc:
                if attempt == tries or "address already in use" not in str(exc):
                    raise
                self.procs = []
        raise AssertionError("unreachable")

    def _start_once(self, timeout: float) -> Cluster:
        if not self.bins or not all((self.bins / n).is_file() for n in (*COMPONENTS, KWOK_STAGES)):
            raise ClusterError(f"the control plane is not built: run {BUILD_SCRIPT.relative_to(ROOT)}")
        self.state_dir.mkdir(parents=True, exist_ok=True)
        (self.state_dir / "logs").mkdir(exist_ok=True)
        if (self.state_dir / "etcd").is_dir():  # every start is a fresh cluster; certificates are kept
            shutil.rmtree(self.state_dir / "etcd")
        deadline = time.monotonic() + timeout
        try:
            if not (self.pki / "admin.crt").exists():
                make_pki(self.pki)
            names = ("etcd", "etcd-peer", "apiserver", "kcm", "scheduler", "kwok")
            self.ports = {}
            for n in names:
                self.ports[n] = free_port(tuple(self.ports.values()))
            write_kubeconfig(self.kubeconfig, self.server, self.pki / "ca.crt", {
                "client-certificate": str(self.pki / "admin.crt"), "client-key": str(self.pki / "admin.key")})
            self._start_etcd()
            self._wait("etcd", deadline, lambda: _http_ok(f"http://127.0.0.1:{self.ports['etcd']}/health"))
            self._spawn("kube-apiserver", self._apiserver_args())
            api = self.api()
            self._wait("kube-apiserver", deadline, lambda: api.request("GET", "/readyz", timeout=2)[0] == 200)
            common = [f"--kubeconfig={self.kubeconfig}", f"--authentication-kubeconfig={self.kubeconfig}",
                      f"--authorization-kubeconfig={self.kubeconfig}", "--leader-elect=false",
                      "--bind-address=127.0.0.1"]
            self._spawn("kube-controller-manager", [*common, f"--secure-port={self.ports['kcm']}",
                        f"--service-account-private-key-file={self.pki / 'sa.key'}",
                        f"--root-ca-file={self.pki / 'ca.crt'}",
                        f"--cluster-signing-cert-file={self.pki / 'ca.crt'}",
                        f"--cluster-signing-key-file={self.pki / 'ca.key'}", "--controllers=*"])
            self._spawn("kube-scheduler", [*common, f"--secure-port={self.ports['scheduler']}"])
            self._spawn("kwok", [f"--kubeconfig={self.kubeconfig}", f"--config={self.bins / KWOK_STAGES}",
                                 "--manage-all-nodes=false",
                                 f"--manage-nodes-with-annotation-selector={'='.join(KWOK_ANNOTATION)}",
                                 f"--cidr={POD_CIDR}", "--node-ip=10.0.0.1",
                                 "--node-lease-duration-seconds=40",
                                 f"--server-address=127.0.0.1:{self.ports['kwok']}"])
            self._wait("kube-scheduler", deadline,
                       lambda: _http_ok(f"https://127.0.0.1:{self.ports['scheduler']}/healthz"))
            self._wait("kwok", deadline, lambda: _http_ok(f"http://127.0.0.1:{self.ports['kwok']}/healthz"))
            self._wait("kube-controller-manager", deadline, lambda: _kcm_ready(api))
            api.close()
            self._save()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_etcd(self) -> None:
        peer = f"http://127.0.0.1:{self.ports['etcd-peer']}"
        client = f"http://127.0.0.1:{self.ports['etcd']}"
        self._spawn("etcd", ["--name=e2e", f"--data-dir={self.state_dir / 'etcd'}",
                             f"--listen-client-urls={client}",
                             f"--advertise-client-urls={client}", f"--listen-peer-urls={peer}",
                             f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=e2e={peer}",
                             "--unsafe-no-fsync", "--log-level=warn"])

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        return [
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}", "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['apiserver']}", "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none", f"--cert-dir={self.state_dir / 'apiserver-certs'}",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}", "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki / 'sa.key'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_RANGE}", "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            # On by default; named so that a change of upstream defaults cannot drop what the tests compare.
            "--enable-admission-plugins=LimitRanger,ResourceQuota,Priority",
            "--runtime-config=resource.k8s.io/v1=true",
        ]

    def _spawn(self, name: str, args: list[str]) -> None:
        log = self.state_dir / "logs" / f"{name}.log"
        with open(log, "wb") as out:
            popen = subprocess.Popen([str(self.bins / name), *args], stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.state_dir)
        self.procs.append(Proc(name, popen, popen.pid, log))

    def _wait(self, name: str, deadline: float, ready) -> None:
        proc = next(p for p in self.procs if p.name == name)
        while True:
            if proc.popen is not None and proc.popen.poll() is not None:
                raise ClusterError(f"{name} exited with status {proc.popen.returncode} while starting; "
                                   f"the end of {proc.log}:\n{log_tail(proc.log)}")
            try:
                if ready():
                    return
            except (OSError, http.client.HTTPException, ClusterError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"{name} was not ready in time; the end of {proc.log}:\n"
                                   f"{log_tail(proc.log)}")
            time.sleep(0.2)

    def _save(self) -> None:
        doc = {"bins": str(self.bins), "ports": self.ports,
               "procs": [{"name": p.name, "pid": p.pid, "log": str(p.log)} for p in self.procs]}
        (self.state_dir / "cluster.json").write_text(json.dumps(doc, indent=2) + "\n")

    @classmethod
    def load(cls, state_dir: Path) -> Cluster:
        doc = json.loads((state_dir / "cluster.json").read_text())
        procs = [Proc(p["name"], None, p["pid"], Path(p["log"])) for p in doc["procs"]]
        return cls(state_dir, Path(doc["bins"]), procs, doc["ports"])

    def stop(self, grace: float = 10) -> None:
        """Stop the processes this cluster started, newest first: SIGTERM to each one's process group, then
        SIGKILL to those still running after `grace` seconds."""
        live = [p for p in reversed(self.procs) if self._ours(p)]
        for p in live:
            _signal_group(p.pid, signal.SIGTERM)
        end = time.monotonic() + grace
        for p in live:
            while self._running(p) and time.monotonic() < end:
                time.sleep(0.1)
            if self._running(p):
                _signal_group(p.pid, signal.SIGKILL)
                if p.popen is not None:
                    p.popen.wait(5)
        self.procs = []
        (self.state_dir / "cluster.json").unlink(missing_ok=True)

    def _ours(self, p: Proc) -> bool:
        if p.popen is not None:
            return p.popen.poll() is None
        # Loaded from cluster.json: the pid must still run our binary (a pid may have been reused).
        try:
            exe = os.readlink(f"/proc/{p.pid}/exe")
        except OSError:
            return False
        return Path(exe).resolve() == (self.bins / p.name).resolve()

    def _running(self, p: Proc) -> bool:
        if p.popen is not None:
            return p.popen.poll() is None
        return self._ours(p)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # each component is the leader of its own session and process group
    except ProcessLookupError:
        pass


def _http_ok(url: str) -> bool:
    # The scheduler serves a self-signed certificate of its own; only whether it answers matters here.
    import urllib.request

    ctx = ssl._create_unverified_context() if url.startswith("https") else None
    with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
        return resp.status == 200


def _kcm_ready(api: Api) -> bool:
    """The controllers run: the `default` namespace got its ServiceAccount and root CA ConfigMap (without
    them the ServiceAccount admission plugin rejects every pod)."""
    sa, _ = api.request("GET", "/api/v1/namespaces/default/serviceaccounts/default", timeout=2)
    cm, _ = api.request("GET", "/api/v1/namespaces/default/configmaps/kube-root-ca.crt", timeout=2)
    return sa == 200 and cm == 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.cluster", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help="state directory (default: .cache/cluster)")
    parser.add_argument("--timeout", type=float, default=60,
                        help="seconds to wait for readiness (default: 60)")
    args = parser.parse_args(argv)
    state = args.dir.resolve()
    if args.action == "down":
        if not (state / "cluster.json").exists():
            print(f"no cluster is running from {state}")
            return 0
        Cluster.load(state).stop()
        print(f"stopped the cluster in {state}")
        return 0
    if (state / "cluster.json").exists():
        print(f"a cluster already runs from {state} (make cluster-down first)", file=sys.stderr)
        return 2
    try:
        started = time.monotonic()
        cluster = Cluster(state, bin_dir(build=True)).start(args.timeout)
    except ClusterError as exc:
        print(f"cluster-up: {exc}", file=sys.stderr)
        return 1
    for p in cluster.procs:  # detach: the processes outlive this command
        p.popen = None
    print(f"ready in {time.monotonic() - started:.1f} s: export KUBECONFIG={cluster.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
