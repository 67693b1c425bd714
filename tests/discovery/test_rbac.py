"""The shipped ClusterRole holds exactly the rights live discovery uses: every request `discover` (and
`check --node-groups cluster`) makes is allowed by it, every rule in it is used, and it grants no write."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpufleet.discovery.live import CLUSTER_ROLE, RBAC_FILE
from tests.cli.run_inprocess import run
from tests.discovery.apiserver import ApiServer
from tests.discovery.objects import cluster, dra_objects

ROOT = Path(__file__).resolve().parents[2]
READ_VERBS = {"get", "list", "watch"}


def role() -> dict:
    docs = [d for d in yaml.safe_load_all((ROOT / RBAC_FILE).read_text()) if d]
    (found,) = [d for d in docs if d["kind"] == "ClusterRole"]
    return found


def attributes(path: str, query: dict[str, str]) -> tuple:
    """What the API server's authorizer checks for a GET: (verb, group, resource) or ("get", url)."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) == 3:  # /api/v1/<resource>
        return ("list", "", parts[2])
    if parts[0] == "apis" and len(parts) == 4:  # /apis/<group>/<version>/<resource>
        return ("list", parts[1], parts[3])
    return ("get", path)  # a path that is no resource: a nonResourceURL


def allowed_by(rule: dict, request: tuple) -> bool:
    if len(request) == 2:
        return request[0] in rule.get("verbs", ()) and request[1] in rule.get("nonResourceURLs", ())
    verb, group, resource = request
    return verb in rule.get("verbs", ()) and group in rule.get("apiGroups",
                                                               ()) and resource in rule.get("resources", ())


def requests_of_discover(tmp_path: Path, **server) -> set[tuple]:
    nodes, pods = cluster(3, 20)
    with ApiServer(nodes=nodes, pods=pods, dra=dra_objects(), **server) as api:
        done = run("discover", "--kubeconfig", api.kubeconfig(tmp_path / "kc"), "--out", tmp_path / "c.json",
                   "--chunk-size", "5")
        assert done.code == 0, done.err
        return {attributes(r.path, r.query) for r in api.requests}


def requests_of_node_groups(tmp_path: Path) -> set[tuple]:
    """`check --node-groups cluster` on a cluster that serves Cluster API."""
    nodes, pods = cluster(2, 4)
    lists = {f"/apis/cluster.x-k8s.io/v1beta1/{r}": [] for r in ("machinesets", "machinedeployments", "machines")}
    app = tmp_path / "app.yaml"
    app.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
                                   "spec": {"containers": [{"name": "c", "image": "i"}]}}))
    with ApiServer(nodes=nodes, pods=pods, extra=lists, api_groups={"cluster.x-k8s.io": ("v1beta1",)}) as api:
        done = run("check", "--kubeconfig", api.kubeconfig(tmp_path / "kc"), "--node-groups", "cluster", app)
        assert done.code == 0, done.err
        return {attributes(r.path, r.query) for r in api.requests}


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> set[tuple]:
    """Every request of discover on a DRA cluster of 1.34, and on one of 1.33 (resource.k8s.io v1beta2 only),
    and of `check --node-groups cluster` on a Cluster API cluster."""
    return (requests_of_discover(tmp_path_factory.mktemp("v1"))
            | requests_of_discover(tmp_path_factory.mktemp("beta"), dra_versions=("v1beta2",))
            | requests_of_node_groups(tmp_path_factory.mktemp("capi")))


def test_the_role_is_the_one_the_403_message_names():
    assert role()["metadata"]["name"] == CLUSTER_ROLE


def test_every_request_discovery_makes_is_allowed_by_the_role(made):
    rules = role()["rules"]
    assert made >= {("list", "", "nodes"), ("list", "", "pods"), ("get", "/apis/resource.k8s.io")}
    assert [r for r in sorted(made) if not any(allowed_by(rule, r) for rule in rules)] == []


def test_every_right_in_the_role_is_used_by_discovery(made):
    granted = set()
    for rule in role()["rules"]:
        for verb in rule["verbs"]:
            granted |= {(verb, url) for url in rule.get("nonResourceURLs", ())}
            granted |= {(verb, g, r) for g in rule.get("apiGroups", ()) for r in rule.get("resources", ())}
    assert granted == made


def test_the_role_grants_no_write_verb():
    verbs = {v for rule in role()["rules"] for v in rule["verbs"]}
    assert verbs and verbs <= READ_VERBS
    assert all("*" not in rule.get(key, ()) for rule in role()["rules"]
               for key in ("verbs", "resources", "apiGroups", "nonResourceURLs"))


def code_list(items) -> str:
    return ", ".join(f"`{item}`" for item in items)


def rule_line(rule: dict) -> str:
    """How docs/discovery.md states one rule of the role, as a bullet."""
    verbs = code_list(rule["verbs"])
    if "nonResourceURLs" in rule:
        return f"- {verbs} on the non-resource URL {code_list(rule['nonResourceURLs'])}"
    groups = ", ".join("the core API group" if g == "" else f"`{g}`" for g in rule["apiGroups"])
    return f"- {verbs} on {code_list(rule['resources'])} ({groups})"


def test_the_discovery_doc_lists_every_rule_of_the_role_and_nothing_else():
    section = (ROOT / "docs" / "discovery.md").read_text().split("## Read-only access")[1].split("\n## ")[0]
    listed = [line for line in section.splitlines() if line.startswith("- `")]
    assert listed == [rule_line(rule) for rule in role()["rules"]]
