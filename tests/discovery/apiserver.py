"""A loopback stand-in for a Kubernetes API server's LIST endpoints (tests and bench/discover_bench.py only).

It speaks the list protocol as a real API server does: `kind: XList` answers with `metadata.resourceVersion`,
`limit` / `continue` paging with `remainingItemCount`, `fieldSelector` on `status.phase`, Status objects for
every failure, bearer-token authentication, the `resource.k8s.io` group document, and optional TLS. It
injects the faults live discovery must survive or explain: 410 Expired mid-list, 429 and 503 with
Retry-After, a server that accepts a request and never answers, 401, 403, and a resource.k8s.io that serves
only older versions. It records every request (method, path, query) for the RBAC test.

Run in-process (`ApiServer(...).start()`, a thread on 127.0.0.1 and a free port) or as its own process
(`python tests/discovery/apiserver.py OBJECTS.json PORTFILE`, for the benchmark).
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

TOKEN = "gpufleet-test-token"
#: path -> (list kind, key of the objects it serves, API version needed or None for core)
LISTS = {
    "/api/v1/nodes": ("NodeList", "nodes", None),
    "/api/v1/pods": ("PodList", "pods", None),
}
DRA_RESOURCES = {"deviceclasses": "DeviceClass", "resourceslices": "ResourceSlice", "resourceclaims": "ResourceClaim"}


@dataclass
class Fault:
    """Answer a request for `path` with `code` (and Retry-After), or never answer (`hang`), `times` times.

    `mid_list`: only requests that carry a continue token (a 410 while paging)."""

    path: str
    code: int = 0
    retry_after: str | None = None
    hang: bool = False
    mid_list: bool = False
    times: int = 1
    message: str = ""
    body: bytes | None = None  # answer with these bytes instead (code 200 unless `code` is given)


@dataclass(frozen=True)
class Encoded:
    """One list item kept as its JSON bytes (and its phase, for fieldSelector): how the benchmark's server holds
    100,000 pods without holding 100,000 dicts."""

    data: bytes
    phase: str | None = None

    @classmethod
    def of(cls, obj: dict) -> Encoded:
        return cls(json.dumps(obj, separators=(",", ":")).encode(), (obj.get("status") or {}).get("phase"))


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    authorized: bool


def status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 410: "Expired", 429: "TooManyRequests",
           500: "InternalError", 503: "ServiceUnavailable"}


@dataclass
class ApiServer:
    nodes: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)
    dra: dict[str, list[dict]] = field(default_factory=dict)  # resource (deviceclasses, ...) -> items
    dra_versions: tuple[str, ...] = ("v1",)  # () : resource.k8s.io is not served at all
    token: str = TOKEN
    forbidden: frozenset[str] = frozenset()  # resources this token may not list
    tls: tuple[Path, Path] | None = None  # (certificate, key)
    faults: list[Fault] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    extra: dict[str, list[dict]] = field(default_factory=dict)  # other served list paths -> items (kind set)
    api_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)  # other groups' documents: versions

    def __post_init__(self):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.resource_version = 1000

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> ApiServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - http.server's name
                server._answer(self)

            def log_message(self, *args):  # quiet
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self._httpd.server_address[1]}"

    def kubeconfig(self, path: Path, *, token: str | None = None, ca: Path | None = None,
                   context: str = "test") -> Path:
        """A kubeconfig for this server (bearer token; the CA file when it speaks TLS)."""
        cluster = {"server": self.url}
        if self.tls:
            cluster["certificate-authority"] = str(ca or self.tls[0])
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
               "clusters": [{"name": "loopback", "cluster": cluster}],
               "users": [{"name": "tester", "user": {"token": self.token if token is None else token}}],
               "contexts": [{"name": context, "context": {"cluster": "loopback", "user": "tester"}}]}
        path.write_text(json.dumps(doc))  # JSON is YAML
        return path

    # -- answers ----------------------------------------------------------------------------------------
    def _send(self, handler, code: int, body: dict | bytes, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)

    def _fault(self, path: str, query: dict[str, str]) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.times > 0 and fault.path == path and (not fault.mid_list or "continue" in query):
                    fault.times -= 1
                    return fault
        return None

    def _answer(self, handler) -> None:
        parts = urlsplit(handler.path)
        path = parts.path
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        scheme, _, token = handler.headers.get("Authorization", "").partition(" ")
        authorized = scheme.lower() == "bearer" and token == self.token  # the scheme is case-insensitive
        with self._lock:
            self.requests.append(Request("GET", path, query, authorized))
        if not authorized:
            return self._send(handler, 401, status(401, "Unauthorized", "Unauthorized"))
        fault = self._fault(path, query)
        if fault is not None:
            if fault.hang:
                self._stop.wait(120)
                handler.close_connection = True
                return None
            if fault.body is not None:
                return self._send(handler, fault.code or 200, fault.body)
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            message = fault.message or {
                410: "the continue token has expired: start the list again",
                429: "too many requests, please try again later",
                503: "the server is shutting down"}.get(fault.code, "failure")
            return self._send(handler, fault.code, status(fault.code, REASONS.get(fault.code, "Unknown"), message),
                              headers)
        found = self._collection(path)
        if found is None:
            if path == "/apis/resource.k8s.io" and self.dra_versions:
                versions = [{"groupVersion": f"resource.k8s.io/{v}", "version": v} for v in self.dra_versions]
                return self._send(handler, 200, {"kind": "APIGroup", "apiVersion": "v1", "name": "resource.k8s.io",
                                                 "versions": versions, "preferredVersion": versions[0]})
            group = path.removeprefix("/apis/")
            if group in self.api_groups:
                versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.api_groups[group]]
                return self._send(handler, 200, {"kind": "APIGroup", "apiVersion": "v1", "name": group,
                                                 "versions": versions, "preferredVersion": versions[0]})
            return self._send(handler, 404, status(404, "NotFound", "the server could not find the requested resource"))
        kind, items, resource = found
        if resource in self.forbidden:
            group = "resource.k8s.io" if kind.startswith(("Device", "Resource")) else ""
            return self._send(handler, 403, status(403, "Forbidden", (
                f'{resource} is forbidden: User "system:serviceaccount:default:viewer" cannot list resource '
                f'"{resource}" in API group "{group}" at the cluster scope')))
        return self._send(handler, 200, self._page(path, kind, items, query))

    def _collection(self, path: str):
        if path in LISTS:
            kind, key, _ = LISTS[path]
            return kind, getattr(self, key), key
        if path in self.extra:
            items = self.extra[path]
            return f"{items[0]['kind'] if items else 'Item'}List", items, path.rsplit("/", 1)[1]
        prefix = "/apis/resource.k8s.io/"
        if path.startswith(prefix):
            version, _, resource = path[len(prefix):].partition("/")
            if version in self.dra_versions and resource in DRA_RESOURCES:
                return f"{DRA_RESOURCES[resource]}List", self.dra.get(resource, []), resource
        return None

    def _page(self, path: str, kind: str, items: list[dict], query: dict[str, str]) -> bytes:
        selector = query.get("fieldSelector", "")
        if selector:
            excluded = {term.split("!=", 1)[1] for term in selector.split(",") if term.startswith("status.phase!=")}
            items = [i for i in items if _phase(i) not in excluded]
        limit = int(query.get("limit", "0") or 0)
        start, rv = 0, self.resource_version
        if query.get("continue"):
            token = json.loads(base64.b64decode(query["continue"]))
            start, rv = token["start"], token["rv"]
        end = start + limit if limit else len(items)
        meta: dict = {"resourceVersion": str(rv)}
        if end < len(items):
            meta["continue"] = base64.b64encode(json.dumps({"rv": rv, "start": end}).encode()).decode()
            meta["remainingItemCount"] = len(items) - end
        page = items[start:end]
        if page and isinstance(page[0], Encoded):
            head = json.dumps({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": []}).encode()[:-3]
            data = head + b"[" + b",".join(i.data for i in page) + b"]}"
        else:
            data = json.dumps({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": page}).encode()
        return data


def _phase(item) -> str | None:
    return item.phase if isinstance(item, Encoded) else (item.get("status") or {}).get("phase")


def make_tls(directory: Path, name: str = "server") -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), as (certificate, key)."""
    import subprocess

    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def main() -> None:
    """Serve a cluster of NODES nodes and PODS pods (tests/discovery/objects.py) with the DRA objects until
    killed; write the server's URL to PORTFILE once it listens."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.discovery.objects import dra_objects, node, pod

    nodes, pods, portfile = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    server = ApiServer(nodes=[Encoded.of(node(i, nodes)) for i in range(nodes)],
                       pods=[Encoded.of(pod(i, nodes)) for i in range(pods)], dra=dra_objects())
    server.start()
    portfile.write_text(server.url)
    threading.Event().wait()


if __name__ == "__main__":
    main()
