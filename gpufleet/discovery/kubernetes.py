"""Nodes and pods from a Kubernetes API. The only module that imports the `kubernetes` client.

`ClusterSource` is the interface (objects in kubectl's camelCase JSON shape); `KubeconfigCluster`
talks to a live API server, `FileCluster` reads `kubectl get ... -o json` output, `NullCluster` has
nothing, and `gpufleet.discovery.fakes.FakeCluster` serves tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

from gpufleet.errors import DiscoveryUnavailableError, InputError

#: Pods the scheduler counts against a node: the informer's field selector (scheduler.go newPodInformer).
NON_TERMINAL = "status.phase!=Succeeded,status.phase!=Failed"


class ClusterSource(Protocol):
    def nodes(self) -> list[dict]: ...

    def pods(self) -> list[dict]: ...


class NullCluster:
    def nodes(self) -> list[dict]:
        return []

    def pods(self) -> list[dict]:
        return []


def read_list(path: Path, kind: str) -> list[dict]:
    """The items of a `kubectl get <kind> -o json` file (a List, or a single object)."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError as e:
        raise InputError(f"{path}: no such file") from e
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a JSON file from `kubectl get {kind} -o json`: {e}") from e
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return doc["items"]
    if isinstance(doc, dict) and doc.get("kind") in ("Node", "Pod"):
        return [doc]
    raise InputError(f"{path}: expected the output of `kubectl get {kind} -o json` (a List with items)")


class FileCluster:
    """Objects saved with `kubectl get nodes -o json` and `kubectl get pods -A -o json`."""

    def __init__(self, nodes_path: Path, pods_path: Path | None = None):
        self.nodes_path, self.pods_path = nodes_path, pods_path

    def nodes(self) -> list[dict]:
        return read_list(self.nodes_path, "nodes")

    def pods(self) -> list[dict]:
        return read_list(self.pods_path, "pods") if self.pods_path else []


class KubeconfigCluster:
    """A live cluster, through a kubeconfig file and optional context."""

    def __init__(self, kubeconfig: Path, context: str | None = None):
        self.kubeconfig, self.context = kubeconfig, context
        self._api = None

    def _core(self):
        try:
            from kubernetes import client, config
        except ImportError as e:  # pragma: no cover - kubernetes is a dependency
            raise DiscoveryUnavailableError("the kubernetes client is not installed (pip install kubernetes)") from e
        if self._api is None:
            try:
                self._api = config.new_client_from_config(config_file=str(self.kubeconfig), context=self.context)
            except Exception as e:  # ConfigException, FileNotFoundError, yaml errors
                raise DiscoveryUnavailableError(f"{self.kubeconfig}: cannot use this kubeconfig: {e}") from e
        return client.CoreV1Api(self._api)

    def _list(self, call, **kwargs) -> list[dict]:
        try:
            result = call(**kwargs)
        except Exception as e:  # ApiException, urllib3 connection errors
            raise DiscoveryUnavailableError(f"the Kubernetes API did not answer: {e}") from e
        return self._api.sanitize_for_serialization(result).get("items", [])

    def nodes(self) -> list[dict]:
        return self._list(self._core().list_node)

    def pods(self) -> list[dict]:
        core = self._core()
        return self._list(core.list_pod_for_all_namespaces, field_selector=NON_TERMINAL)
