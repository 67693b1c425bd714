"""A live cluster, read as kubectl reads it: the kubeconfig kubectl would use, paged raw lists, bounded waits,
and errors in the API server's own words.

- Where: `--kubeconfig`, else `$KUBECONFIG` (a list of files, merged by the kubernetes client as kubectl
  merges them), else `~/.kube/config`, else the pod's service account (in-cluster). Configuration loading
  (exec plugins, client certificates, tokens, CA bundles) and the HTTP transport are the kubernetes client's.
- How: LIST with `limit` (500, kubectl's `--chunk-size`) and `continue`; each page is read as raw JSON and
  only the fields the capacity model reads are kept (gpufleet/discovery/lean.py). A 410 Expired restarts
  the list, as client-go's pager does; a 429, or a 5xx with `Retry-After`, is retried a bounded number of
  times with the client's client-go retry helper.
- Bounds: every request waits at most `--request-timeout` (default 30s) for the server.
- Errors: one or two lines with the server, the API's Status message and what to do; never HTTP headers.

The kubernetes client is imported only when a live cluster is read.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.discovery.lean import lean_node, lean_pod, without_managed_fields
from gpufleet.errors import DiscoveryUnavailableError, InputError, one_line, yaml_problem
from gpufleet.gc_pause import collector_paused

#: Pods the scheduler counts against a node: the informer's field selector (scheduler.go newPodInformer).
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"
#: kubectl's default `--chunk-size`.
CHUNK_SIZE = 500
#: Seconds one request may wait for the server (`--request-timeout`): a server that never answers ends the
#: run in well under 2 minutes.
REQUEST_TIMEOUT = 30.0
#: Retries of a 429 / 5xx answer that carries Retry-After, and the longest Retry-After waited for.
MAX_RETRIES = 5
MAX_RETRY_AFTER = 10
#: Restarts of one list after 410 Expired.
MAX_RESTARTS = 3

#: The read-only ClusterRole that holds exactly the rights discovery uses, and where it ships.
CLUSTER_ROLE = "gpufleet-discovery"
RBAC_FILE = "deploy/rbac/gpufleet-discovery-clusterrole.yaml"

NODES_PATH = "/api/v1/nodes"
PODS_PATH = "/api/v1/pods"
DRA_GROUP_PATH = "/apis/resource.k8s.io"
#: resource.k8s.io/v1 kind -> its cluster-wide list.
DRA_PATHS = {"DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
             "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
             "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims"}
DRA_API_VERSION = "resource.k8s.io/v1"
#: What admission reads (kind -> (apiVersion, path)), the PodDisruptionBudgets preemption weighs, the namespaces
#: whose labels namespaceSelectors match, and the Services whose selectors the default spreading merges. Kueue's
#: are read where it is installed (404 otherwise).
ADMISSION_PATHS = {"ResourceQuota": ("v1", "/api/v1/resourcequotas"),
                   "LimitRange": ("v1", "/api/v1/limitranges"),
                   "PriorityClass": ("scheduling.k8s.io/v1", "/apis/scheduling.k8s.io/v1/priorityclasses"),
                   "PodDisruptionBudget": ("policy/v1", "/apis/policy/v1/poddisruptionbudgets"),
                   "Namespace": ("v1", "/api/v1/namespaces"),
                   "Service": ("v1", "/api/v1/services"),
                   "ClusterQueue": ("kueue.x-k8s.io/v1beta1", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues"),
                   "LocalQueue": ("kueue.x-k8s.io/v1beta1", "/apis/kueue.x-k8s.io/v1beta1/localqueues"),
                   "ResourceFlavor": ("kueue.x-k8s.io/v1beta1", "/apis/kueue.x-k8s.io/v1beta1/resourceflavors")}
#: Cluster API's group, and its lists the autoscaler's clusterapi provider reads (kind -> resource), in the
#: provider's order; in the version the server prefers, as the provider picks it.
CLUSTER_API_GROUP_PATH = "/apis/cluster.x-k8s.io"
CLUSTER_API_LISTS = {"MachineSet": "machinesets", "MachineDeployment": "machinedeployments", "Machine": "machines"}

#: The pod's service account, as the kubernetes client's in-cluster loader reads it.
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")

NO_CLUSTER = ("no cluster to read: no --kubeconfig, $KUBECONFIG is not set, {home} does not exist, and this is "
              "not a pod with a service account (KUBERNETES_SERVICE_HOST is not set)")


def parse_request_timeout(text: str) -> float | None:
    """kubectl's `--request-timeout`: a duration (`30s`, `1m30s`, `500ms`) or plain seconds; 0 waits forever."""
    import durationpy

    value = text.strip()
    try:
        seconds = float(value) if value.replace(".", "", 1).isdigit() else durationpy.from_str(value).total_seconds()
    except (ValueError, TypeError, durationpy.DurationError) as e:
        raise InputError(f"--request-timeout {text!r}: not a duration; give one such as 30s, 2m or 1m30s "
                         "(or 0 to wait without a limit)") from e
    if seconds < 0:
        raise InputError(f"--request-timeout {text!r}: must not be negative")
    return seconds or None


@dataclass(frozen=True)
class Where:
    """How the cluster is reached: kubeconfig file(s) (os.pathsep-separated, as in $KUBECONFIG) or in-cluster."""

    kind: str  # "kubeconfig" or "in-cluster"
    files: str = ""
    origin: str = ""  # how it was chosen, for messages: "--kubeconfig", "$KUBECONFIG", "~/.kube/config"


def find_cluster(kubeconfig: Path | str | None, environ: Mapping[str, str] | None = None,
                 home: Path | None = None, service_account: Path = SERVICE_ACCOUNT) -> Where:
    """Where kubectl would look: --kubeconfig, $KUBECONFIG, ~/.kube/config, then the in-cluster account."""
    env = os.environ if environ is None else environ
    if kubeconfig is not None and str(kubeconfig) != "":
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "no such file"
            raise DiscoveryUnavailableError(f"{kubeconfig}: cannot use this kubeconfig: {what}")
        return Where("kubeconfig", str(path), "--kubeconfig")
    listed = env.get("KUBECONFIG", "")
    if listed:
        files = [f for f in listed.split(os.pathsep) if f]
        if not any(Path(f).expanduser().is_file() for f in files):
            raise DiscoveryUnavailableError(f"$KUBECONFIG ({listed}): cannot use this kubeconfig: none of its "
                                            "files exists")
        return Where("kubeconfig", os.pathsep.join(str(Path(f).expanduser()) for f in files), "$KUBECONFIG")
    default = (home if home is not None else Path(env.get("HOME") or Path.home())) / ".kube" / "config"
    if default.is_file():
        return Where("kubeconfig", str(default), "~/.kube/config")
    if env.get("KUBERNETES_SERVICE_HOST") and (service_account / "token").is_file():
        return Where("in-cluster", str(service_account), "the pod's service account")
    raise NoClusterFound(NO_CLUSTER.format(home=default))


def kubeconfig_contexts(files: str) -> list[str] | None:
    """The context names of the kubeconfig file(s) (os.pathsep-separated, merged as kubectl merges them: the
    first file that names a context holds it); None when one of them cannot be read."""
    import yaml

    names: dict[str, None] = {}
    for file in (f for f in files.split(os.pathsep) if f):
        try:
            doc = yaml.safe_load(Path(file).expanduser().read_text())
        except (OSError, ValueError, yaml.YAMLError):
            return None
        entries = doc.get("contexts") if isinstance(doc, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                names.setdefault(entry["name"])
    return list(names)


def _status_words(body: Any, fallback: str) -> tuple[str, str]:
    """(reason, message) of a Status answer; the HTTP reason when the body is no Status."""
    try:
        doc = json.loads(body) if isinstance(body, (str, bytes)) and body else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        reason, message = doc.get("reason"), doc.get("message")
        return (reason if isinstance(reason, str) and reason else fallback,
                one_line(message[:500] if isinstance(message, str) else ""))
    return fallback, ""


class NoClusterFound(DiscoveryUnavailableError):
    """No --kubeconfig, $KUBECONFIG, ~/.kube/config or service account: nowhere to read a cluster from."""


class _Expired(DiscoveryUnavailableError):
    """410: the continue token (or resourceVersion) is too old; a paged list starts again."""


class KubeconfigCluster:
    """A live cluster through a kubeconfig (or the pod's service account); nodes, pods and DRA objects."""

    def __init__(self, kubeconfig: Path | str | None = None, context: str | None = None, *,
                 request_timeout: float | None = REQUEST_TIMEOUT, chunk_size: int = CHUNK_SIZE,
                 environ: Mapping[str, str] | None = None, service_account: Path = SERVICE_ACCOUNT,
                 sleep: Callable[[float], None] = time.sleep):
        self.kubeconfig, self.context = kubeconfig, context
        self.request_timeout, self.chunk_size = request_timeout, chunk_size
        self._environ, self._service_account, self._sleep = environ, service_account, sleep
        self._api = None
        self._notes: list[str] = []
        self.server = ""
        #: Things the caller should tell the user (once each), e.g. a DRA API the cluster does not serve in v1.
        self.warnings: list[str] = []

    # -- connection ---------------------------------------------------------------------------------------
    def _client(self):
        if self._api is not None:
            return self._api
        try:
            from kubernetes import client, config
            from kubernetes.config.incluster_config import InClusterConfigLoader
        except ImportError as e:  # pragma: no cover - kubernetes is a dependency
            raise DiscoveryUnavailableError("the kubernetes client is not installed (pip install kubernetes)") from e
        where = find_cluster(self.kubeconfig, self._environ, service_account=self._service_account)
        cfg = client.Configuration()
        try:
            if where.kind == "in-cluster":
                if self.context:
                    raise DiscoveryUnavailableError(f"--context {self.context}: there is no kubeconfig to hold it "
                                                    "(reading the cluster through the pod's service account)")
                InClusterConfigLoader(str(self._service_account / "token"), str(self._service_account / "ca.crt"),
                                      environ=os.environ if self._environ is None else self._environ
                                      ).load_and_set(cfg)
            else:
                with _logged() as self._notes:  # the client logs a failing exec plugin and goes on without a token
                    config.load_kube_config(config_file=where.files, context=self.context,
                                            client_configuration=cfg, persist_config=False)
        except DiscoveryUnavailableError:
            raise
        except Exception as e:  # noqa: BLE001 - ConfigException, yaml errors, unreadable files: all bad input
            shown = where.files if where.kind == "kubeconfig" else where.origin
            raise DiscoveryUnavailableError(one_line(f"{shown}: cannot use this kubeconfig: "
                                                     f"{self._config_problem(e, where)}")) from e
        cfg.retries = False  # urllib3 must not retry on its own: our retries are bounded and visible
        self.server = cfg.host
        self._api = client.ApiClient(cfg)
        return self._api

    def _config_problem(self, e: Exception, where: Where) -> str:
        """What is wrong with the kubeconfig, in words: its YAML error on one line; a --context it does not
        hold, with the contexts it does."""
        import yaml

        if isinstance(e, yaml.YAMLError):
            return f"not valid YAML: {yaml_problem(e)}"
        contexts = kubeconfig_contexts(where.files) if self.context and where.kind == "kubeconfig" else None
        if contexts is not None and self.context not in contexts:
            return f"no context {self.context!r}; its contexts: {', '.join(contexts) or '(none)'}"
        return " ".join(str(e).split()) or type(e).__name__

    def origins(self) -> tuple[str, str]:
        self._client()
        return f"{self.server}{NODES_PATH}", f"{self.server}{PODS_PATH}"

    # -- one request ----------------------------------------------------------------------------------------
    def _timeout(self):
        return None if not self.request_timeout else (self.request_timeout, self.request_timeout)

    def _get(self, path: str, query: list[tuple[str, Any]]) -> Any:
        """The JSON of one GET, retried on 429 / 5xx with Retry-After; DiscoveryUnavailableError otherwise."""
        from kubernetes.client.exceptions import ApiException
        from kubernetes.config.config_exception import ConfigException
        from kubernetes.utils.retry import Backoff, is_retry_after_response, on_retry_after_error, retry_after_seconds
        from urllib3.exceptions import HTTPError

        api = self._client()

        def attempt():
            request = api.param_serialize("GET", path, query_params=list(query),
                                          header_params={"Accept": "application/json"},
                                          auth_settings=["BearerToken"])
            response = api.call_api(*request, _request_timeout=self._timeout())
            try:
                data = response.read()
            finally:
                response.response.release_conn()
            if not 200 <= response.status <= 299:
                raise ApiException(http_resp=response)
            return data

        def retriable(error: Exception) -> bool:
            wait = retry_after_seconds(error)
            return is_retry_after_response(error) and wait is not None and wait <= MAX_RETRY_AFTER

        try:
            data = on_retry_after_error(Backoff(steps=MAX_RETRIES + 1, duration=0.0, factor=1.0), retriable,
                                        attempt, sleep_func=self._sleep)
        except ApiException as e:
            raise self._answer_error(e, path) from None
        except DiscoveryUnavailableError:
            raise
        except (HTTPError, OSError) as e:  # urllib3's transport errors, ssl and socket errors: one line
            raise self._transport_error(e, path) from None
        except ConfigException as e:  # an exec plugin or token file that fails when credentials are refreshed
            raise DiscoveryUnavailableError(one_line(f"{self.server}: cannot get credentials: {e}")) from None
        try:
            with collector_paused():  # JSON makes no cycles: a collection would only walk the pages kept
                return json.loads(data)
        except (ValueError, RecursionError):
            raise DiscoveryUnavailableError(f"{self.server}: GET {path}: the answer is not JSON; is this a "
                                            "Kubernetes API server?") from None

    def _answer_error(self, e, path: str) -> Exception:
        status = e.status or 0
        if status == 0:  # the client's wrapping of a TLS failure
            return self._transport_error(e, path)
        reason, message = _status_words(e.body, e.reason or "")
        said = f"{self.server}: {status} {reason}" + (f": {message}" if message else "")
        if status == 410:
            return _Expired(said)
        if status == 401:
            plugin = f"the kubeconfig's credential plugin failed ({self._notes[-1]}); " if self._notes else ""
            return DiscoveryUnavailableError(
                f"{said}\n  {plugin}the API server did not accept the credentials of {self._whose()}: log in again "
                "or refresh them (token, client certificate or exec plugin), or choose another --context")
        if status == 403:
            return DiscoveryUnavailableError(
                f"{said}\n  gpufleet needs read-only access (get/list) to nodes, pods and the resource.k8s.io "
                f"lists: the ClusterRole {CLUSTER_ROLE} in {RBAC_FILE} holds exactly these rights; "
                "apply it and bind it to this user (the file has a ClusterRoleBinding example)")
        if status == 404:
            return _NotFound(
                f"{said} (GET {path})\n  the server does not serve this path: check that the kubeconfig's "
                "server address is the cluster's API server (not a proxy or dashboard URL)")
        if status == 429 or status >= 500:
            wait = _retry_after(e)
            more = (f"; it still answered so after {MAX_RETRIES} retries" if wait is not None
                    and wait <= MAX_RETRY_AFTER else f"; it asks to wait {wait:g}s" if wait is not None else "")
            return DiscoveryUnavailableError(f"{said} (GET {path}){more}\n  the API server is overloaded or "
                                             "unavailable: try again later")
        return DiscoveryUnavailableError(f"{said} (GET {path})")

    def _whose(self) -> str:
        return f"context {self.context}" if self.context else "the current context"

    def _transport_error(self, e: Exception, path: str) -> DiscoveryUnavailableError:
        import urllib3.exceptions as u

        cause = e.reason if isinstance(e, u.MaxRetryError) else e
        text = str(getattr(cause, "reason", None) or cause)
        if isinstance(cause, (u.SSLError,)) or "SSLError" in text or "CERTIFICATE" in text.upper():
            detail = text.replace("SSLError\n", "").strip().splitlines()[-1] if text.strip() else "handshake failed"
            return DiscoveryUnavailableError(one_line(
                f"{self.server}: TLS: {detail[:300]}") + "\n  check the kubeconfig's certificate-authority "
                "(or certificate-authority-data) for this cluster, and that the server address is the cluster's")
        if isinstance(cause, (u.NewConnectionError, ConnectionError)) or "refused" in text.lower():
            return DiscoveryUnavailableError(one_line(
                f"{self.server}: cannot connect: {_short(text)}") + "\n  check the kubeconfig's server address "
                "and that the cluster is running and reachable from here")
        if isinstance(cause, (u.ReadTimeoutError, u.ConnectTimeoutError, TimeoutError)):  # after NewConnectionError,
            limit = f"{self.request_timeout:g}s"  # which urllib3 derives from ConnectTimeoutError
            return DiscoveryUnavailableError(
                f"{self.server}: no answer within {limit} (GET {path}); check that the API server is up and "
                f"reachable from here, or wait longer with --request-timeout")
        return DiscoveryUnavailableError(one_line(f"{self.server}: GET {path} failed: {_short(text)}"))

    # -- paged lists ----------------------------------------------------------------------------------------
    def _list(self, path: str, kind: str, query: Sequence[tuple[str, Any]] = (), keep=None) -> list:
        """Every item of a LIST, page by page (limit/continue), each passed through `keep`."""
        for _ in range(MAX_RESTARTS + 1):
            kept: list = []
            token = None
            try:
                while True:
                    paging = [("limit", self.chunk_size)] if self.chunk_size else []
                    doc = self._get(path, [*query, *paging, *([("continue", token)] if token else [])])
                    items, token = self._page(doc, path, kind)
                    with collector_paused():  # no cycles: a collection would only walk the pages kept
                        kept += map(keep, items) if keep else items
                    del doc, items
                    if not token:
                        return kept
            except _Expired as e:
                expired = e
        raise DiscoveryUnavailableError(f"{expired}\n  the list of {path} expired {MAX_RESTARTS + 1} times while "
                                        "it was read; the cluster changes faster than it can be read: try again, "
                                        "or a larger --chunk-size")

    def _page(self, doc: Any, path: str, kind: str) -> tuple[list, str | None]:
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if not isinstance(doc, dict):
            got = {list: "a list", str: "a string", type(None): "null"}.get(type(doc), type(doc).__name__)
            raise DiscoveryUnavailableError(f"{self.server}: GET {path}: expected a {kind}List object, got {got}")
        problem = ("items: not a list" if not isinstance(doc.get("items"), list) else
                   "metadata: not an object" if not isinstance(meta or {}, dict) else None)
        if problem:
            raise DiscoveryUnavailableError(one_line(f"{self.server}: GET {path}: expected a {kind}List, got "
                                                     f"kind {doc.get('kind')!r} with {problem}"))
        token = (meta or {}).get("continue")
        return doc["items"], (token if isinstance(token, str) and token else None)

    # -- ClusterSource ----------------------------------------------------------------------------------------
    def nodes(self) -> list[dict]:
        return self._list(NODES_PATH, "Node", keep=lean_node)

    def pods(self) -> list[dict]:
        return self._list(PODS_PATH, "Pod", [("fieldSelector", NON_TERMINAL)], keep=lean_pod)

    def dra(self) -> list[dict]:
        """The resource.k8s.io/v1 objects, each with its kind. A cluster that serves resource.k8s.io but not
        v1 (Kubernetes 1.32-1.33) gives none and a warning; one without the group has no DRA objects."""
        found: list[dict] = []
        for kind, path in DRA_PATHS.items():
            try:
                items = self._list(path, kind)
            except _NotFound:
                if found or kind != "DeviceClass":
                    raise
                self._dra_versions_warning()
                return []
            found += [{"apiVersion": DRA_API_VERSION, "kind": kind, **without_managed_fields(i)}
                      if isinstance(i, dict) else i for i in items]
        return found

    def _served_lists(self, wanted: list[tuple[str, str, str]]) -> tuple[list[dict], list[str], list[str]]:
        """The objects of each (kind, apiVersion, path) list, each with its apiVersion and kind; the kinds read,
        and those the credentials may not list. A list the server does not serve is skipped."""
        found: list[dict] = []
        read: list[str] = []
        forbidden: list[str] = []
        for kind, version, path in wanted:
            try:
                items = self._list(path, kind)
            except _NotFound:
                continue
            except DiscoveryUnavailableError as e:
                if "forbidden" not in str(e).lower():
                    raise
                forbidden.append(kind)
                continue
            read.append(kind)
            found += [{"apiVersion": version, "kind": kind, **without_managed_fields(i)}
                      if isinstance(i, dict) else i for i in items]
        return found, read, forbidden

    def admission(self) -> list[dict]:
        """What admission reads, each with its kind. A list the server does not serve (Kueue not installed) is
        skipped; one the credentials may not read is skipped with a warning: admission is then not checked
        against it."""
        found, _, forbidden = self._served_lists([(kind, version, path)
                                                  for kind, (version, path) in ADMISSION_PATHS.items()])
        found = [_service_selector(o) if o.get("kind") == "Service" else o for o in found]
        if forbidden:
            self.warnings.append(f"{self.server}: {', '.join(forbidden)} objects may not be listed with these "
                                 "credentials, so admission (quotas, limit ranges, priority classes, Kueue), "
                                 "preemption (disruption budgets), namespaceSelectors (namespace labels) and default "
                                 "spreading (Service selectors) are "
                                 "checked without them; grant the ClusterRole in "
                                 "deploy/rbac/gpufleet-discovery-clusterrole.yaml")
        return found

    def cluster_api(self) -> tuple[list[dict], bool]:
        """The Cluster API MachineSets, MachineDeployments and Machines, each with its apiVersion and kind, and
        whether the Machines were read. A cluster that does not serve cluster.x-k8s.io has none; a list the
        credentials may not read is skipped with a warning."""
        try:
            group = self._get(CLUSTER_API_GROUP_PATH, [])
        except _NotFound:
            return [], False
        preferred = group.get("preferredVersion") if isinstance(group, dict) else None
        version = preferred.get("groupVersion") if isinstance(preferred, dict) else None
        if not isinstance(version, str) or "/" not in version:
            raise DiscoveryUnavailableError(f"{self.server}: GET {CLUSTER_API_GROUP_PATH}: expected an APIGroup "
                                            "with a preferredVersion, got none")
        found, read, forbidden = self._served_lists([(kind, version, f"/apis/{version}/{resource}")
                                                     for kind, resource in CLUSTER_API_LISTS.items()])
        if forbidden:
            self.warnings.append(f"{self.server}: {', '.join(CLUSTER_API_LISTS[k] for k in forbidden)} ({version}) "
                                 "may not be listed with these "
                                 "credentials, so the Cluster API node groups are read without them; grant the "
                                 f"ClusterRole in {RBAC_FILE}")
        return found, "Machine" in read

    def _dra_versions_warning(self) -> None:
        try:
            group = self._get(DRA_GROUP_PATH, [])
        except _NotFound:
            return  # no resource.k8s.io at all: the cluster has no DRA objects to read
        versions = [v.get("version") for v in (group.get("versions") if isinstance(group, dict) else None) or []
                    if isinstance(v, dict) and isinstance(v.get("version"), str)]
        served = ", ".join(f"resource.k8s.io/{v}" for v in versions) or "resource.k8s.io (no version listed)"
        self.warnings.append(
            f"{self.server} serves {served} but not {DRA_API_VERSION}: DRA objects (DeviceClasses, "
            "ResourceSlices, ResourceClaims) were not read; gpufleet reads DRA from Kubernetes 1.34 "
            f"({DRA_API_VERSION}), so DRA claims are checked without this cluster's devices")


class _NotFound(DiscoveryUnavailableError):
    """404: the server does not serve the path (an API version it lacks, or not an API server)."""


@contextmanager
def _logged():
    """The error lines the kubernetes client logs meanwhile (a failing exec plugin), kept instead of printed."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(one_line(record.getMessage()[:300]))

    keep = Keep(logging.ERROR)
    root = logging.getLogger()
    root.addHandler(keep)  # a handler on the root logger also stops logging.error() adding one for stderr
    try:
        yield lines
    finally:
        root.removeHandler(keep)


def _retry_after(e) -> float | None:
    from kubernetes.utils.retry import retry_after_seconds

    return retry_after_seconds(e)


def _short(text: str) -> str:
    """A urllib3 reason without its object addresses: the part after the last `: `."""
    text = text.strip()
    if "Failed to establish a new connection:" in text:
        text = text.split("Failed to establish a new connection:", 1)[1]
    return one_line(text.strip().rstrip(")").strip()[:300]) or "no detail"


def _service_selector(service: dict) -> dict:
    """A Service as the default spreading reads it: its name, namespace and selector (the rest stays out of the
    capacity file)."""
    meta = service.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    spec = service.get("spec")
    selector = spec.get("selector") if isinstance(spec, dict) else None
    kept: dict = {"apiVersion": service.get("apiVersion"), "kind": "Service",
                  "metadata": {k: meta[k] for k in ("name", "namespace") if k in meta}, "spec": {}}
    if selector is not None:
        kept["spec"]["selector"] = selector
    return kept
