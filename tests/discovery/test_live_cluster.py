"""`discover`, `check` and `report` on a live cluster, against a loopback API server (tests/discovery/apiserver.py):
where the cluster is found, paged lists, faults that end in the same model, bounded waits, and errors in the
API server's words."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gpufleet.discovery.live import MAX_RETRIES, REQUEST_TIMEOUT, KubeconfigCluster
from gpufleet.errors import DiscoveryUnavailableError
from tests.cli.run_inprocess import run
from tests.discovery.apiserver import ApiServer, Fault, make_tls
from tests.discovery.objects import cluster, dra_objects, kubectl_files

FITS = Path(__file__).parents[1] / "fixtures" / "manifests" / "fits.yaml"
NODES, PODS = cluster(24, 1300)  # 1,300 pods: three pages of 500


@pytest.fixture(autouse=True)
def no_ambient_cluster(monkeypatch, tmp_path):
    """No kubeconfig of the machine running the tests is ever read."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def server():
    with ApiServer(nodes=NODES, pods=PODS, dra=dra_objects()) as s:
        yield s


@pytest.fixture(scope="module")
def files_model(tmp_path_factory) -> dict:
    """The capacity model `discover --nodes --pods --dra` makes of kubectl files of the same objects."""
    where = tmp_path_factory.mktemp("files")
    paths = kubectl_files(where, NODES, PODS, dra_objects())
    out = where / "capacity.json"
    done = run("discover", "--nodes", paths["nodes"], "--pods", paths["pods"], "--dra", paths["dra"], "--out", out)
    assert done.code == 0, done.err
    return _model(out)


def _model(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc.pop("source")
    return doc


def _discover(tmp_path: Path, *args) -> tuple[object, dict | None]:
    out = tmp_path / "capacity.json"
    done = run("discover", "--out", out, *args)
    return done, (_model(out) if done.code == 0 else None)


def test_live_discover_gives_the_model_of_kubectl_files_of_the_same_objects(server, tmp_path, files_model):
    done, model = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 0, done.err
    assert model == files_model
    assert len(model["pods"]) > 1000 and model["deviceClasses"] and model["resourceClaims"]
    assert json.loads((tmp_path / "capacity.json").read_text())["source"] == "kubernetes"


def test_lists_are_read_in_pages_of_500_with_continue_tokens(server, tmp_path):
    done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 0, done.err
    pods = [r.query for r in server.requests if r.path == "/api/v1/pods"]
    assert [(q["limit"], "continue" in q) for q in pods] == [("500", False), ("500", True), ("500", True)]
    assert all(q["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed" for q in pods)


def test_chunk_size_sets_the_page_size(server, tmp_path, files_model):
    done, model = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"), "--chunk-size", "100")
    assert done.code == 0 and model == files_model
    assert sum(r.path == "/api/v1/pods" for r in server.requests) == 13


def test_a_410_mid_list_restarts_the_list_and_gives_the_same_model(server, tmp_path, files_model):
    server.faults.append(Fault("/api/v1/pods", 410, mid_list=True))
    done, model = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 0, done.err
    assert model == files_model
    pods = [r.query for r in server.requests if r.path == "/api/v1/pods"]
    # page 1, page 2 answered 410, then the whole list again from its first page
    assert ["continue" in q for q in pods] == [False, True, False, True, True]


@pytest.mark.parametrize("code", [429, 503])
def test_429_and_503_with_retry_after_are_waited_for_and_give_the_same_model(server, tmp_path, files_model, code):
    server.faults += [Fault("/api/v1/nodes", code, retry_after="2", times=2),
                      Fault("/api/v1/pods", code, retry_after="1", mid_list=True)]
    waits: list[float] = []
    source = KubeconfigCluster(server.kubeconfig(tmp_path / "kc"), sleep=waits.append)
    from gpufleet.cli.discover import live_capacity

    model = live_capacity(source).to_json()
    model.pop("source")
    assert model == files_model
    assert waits == [2, 2, 1]


def test_429_for_ever_stops_after_a_bounded_number_of_retries(server, tmp_path):
    server.faults.append(Fault("/api/v1/nodes", 429, retry_after="0", times=100))
    done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 2 and not (tmp_path / "capacity.json").exists()
    assert sum(r.path == "/api/v1/nodes" for r in server.requests) == MAX_RETRIES + 1
    assert done.err.startswith(f"{server.url}: 429 TooManyRequests: too many requests")
    assert "try again later" in done.err and "Traceback" not in done.err


def test_503_without_retry_after_is_not_retried(server, tmp_path):
    server.faults.append(Fault("/api/v1/nodes", 503))
    done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 2 and "503 ServiceUnavailable" in done.err
    assert sum(r.path == "/api/v1/nodes" for r in server.requests) == 1


def test_a_server_that_never_answers_ends_the_run_with_exit_2_naming_the_server(server, tmp_path):
    server.faults.append(Fault("/api/v1/nodes", hang=True))
    started = time.monotonic()
    done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"), "--request-timeout", "1s")
    took = time.monotonic() - started
    assert done.code == 2 and took < 10
    assert done.err.splitlines() == [f"{server.url}: no answer within 1s (GET /api/v1/nodes); check that the API "
                                     "server is up and reachable from here, or wait longer with --request-timeout"]
    # one request, not retried: the default limit is then also the longest wait for a hung server
    assert len(server.requests) == 1


def test_the_default_request_timeout_ends_a_hung_run_well_within_two_minutes():
    # a hung request is never retried (the test above), so the run ends after one request timeout
    from gpufleet.cli.discover import DEFAULT_TIMEOUT, live_cluster
    from gpufleet.discovery.live import parse_request_timeout

    assert 0 < parse_request_timeout(DEFAULT_TIMEOUT) <= 60 and 0 < REQUEST_TIMEOUT <= 60
    assert live_cluster(None, None).request_timeout == parse_request_timeout(DEFAULT_TIMEOUT)


def test_401_says_the_credentials_were_refused_without_headers(server, tmp_path):
    done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc", token="expired"))
    assert done.code == 2
    assert done.err.splitlines() == [
        f"{server.url}: 401 Unauthorized: Unauthorized",
        "  the API server did not accept the credentials of the current context: log in again or refresh them "
        "(token, client certificate or exec plugin), or choose another --context"]


def test_403_gives_the_api_message_and_the_cluster_role_and_no_headers(tmp_path):
    with ApiServer(nodes=NODES, pods=PODS, forbidden=frozenset({"pods"})) as server:
        done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 2
    first, second = done.err.splitlines()
    assert first == (f'{server.url}: 403 Forbidden: pods is forbidden: User "system:serviceaccount:default:viewer" '
                     'cannot list resource "pods" in API group "" at the cluster scope')
    assert "ClusterRole gpufleet-discovery in deploy/rbac/gpufleet-discovery-clusterrole.yaml" in second
    assert "header" not in done.err.lower() and "Traceback" not in done.err


def test_a_404_says_the_server_does_not_serve_the_list(tmp_path):
    with ApiServer() as server:
        kc = server.kubeconfig(tmp_path / "kc")
        text = json.loads(kc.read_text())
        text["clusters"][0]["cluster"]["server"] += "/not-the-api"
        kc.write_text(json.dumps(text))
        done, _ = _discover(tmp_path, "--kubeconfig", kc)
    assert done.code == 2
    assert done.err.startswith(f"{server.url}/not-the-api: 404 NotFound: the server could not find the requested "
                               "resource (GET /api/v1/nodes)")
    assert "server address" in done.err


def test_a_cluster_serving_dra_only_before_v1_says_so_once_and_reads_no_dra(tmp_path):
    with ApiServer(nodes=NODES, pods=PODS, dra=dra_objects(), dra_versions=("v1beta2", "v1beta1")) as server:
        done, model = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 0, done.err
    assert "deviceClasses" not in model and len(model["nodes"]) == len(NODES)
    (warning,) = done.err.splitlines()
    assert warning.startswith(f"warning: {server.url} serves resource.k8s.io/v1beta2, resource.k8s.io/v1beta1 but "
                              "not resource.k8s.io/v1: DRA objects (DeviceClasses, ResourceSlices, ResourceClaims) "
                              "were not read; gpufleet reads DRA from Kubernetes 1.34")


def test_a_cluster_without_resource_k8s_io_has_no_dra_objects_and_no_warning(tmp_path):
    with ApiServer(nodes=NODES, pods=PODS, dra_versions=()) as server:
        done, model = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 0 and done.err == "" and "deviceClasses" not in model


@pytest.mark.parametrize("body", [
    b"<html>login</html>", b"[]", b"null", b'{"kind": "NodeList", "items": "none"}', b'{"items": [], "metadata": 7}',
    b'{"items": [1, null, {"metadata": []}, {"metadata": {"name": 5}}]}', b'{"items": [], "metadata": {"continue": 5}}',
    b'{"items": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
])
def test_any_answer_to_a_list_ends_in_a_model_or_exit_2_without_a_traceback(server, tmp_path, body):
    server.faults.append(Fault("/api/v1/nodes", body=body))
    done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code in (0, 2) and "Traceback" not in done.err and "internal error" not in done.err
    if done.code == 2:
        assert done.err.startswith(server.url) and not (tmp_path / "capacity.json").exists()


def test_only_kubeconfig_set_discover_and_check_read_that_cluster(server, tmp_path, monkeypatch, files_model):
    # $KUBECONFIG lists two files, merged as kubectl merges them: the cluster and context in one, the user in
    # the other; a third listed file does not exist.
    whole = json.loads(server.kubeconfig(tmp_path / "kc").read_text())
    first, second = tmp_path / "cluster.yaml", tmp_path / "user.yaml"
    first.write_text(json.dumps({**whole, "users": []}))
    second.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "users": whole["users"]}))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}:{tmp_path / 'absent.yaml'}")
    done, model = _discover(tmp_path)
    assert done.code == 0, done.err
    assert model == files_model
    checked = run("check", "--json", FITS)
    paths = kubectl_files(tmp_path, NODES, PODS)
    from_files = run("check", "--json", "--nodes", paths["nodes"], "--pods", paths["pods"], FITS)
    assert (checked.code, checked.out) == (from_files.code, from_files.out)
    assert checked.code in (0, 1) and json.loads(checked.out)["checked"] == ["Deployment/ml/infer"]


def test_the_home_kubeconfig_is_read_when_nothing_else_is_given(server, tmp_path, files_model):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    server.kubeconfig(home / ".kube" / "config")
    done, model = _discover(tmp_path)
    assert done.code == 0 and model == files_model


def test_context_chooses_the_kubeconfig_context(server, tmp_path):
    kc = server.kubeconfig(tmp_path / "kc")
    done, _ = _discover(tmp_path, "--kubeconfig", kc, "--context", "test")
    assert done.code == 0, done.err
    done, _ = _discover(tmp_path, "--kubeconfig", kc, "--context", "prod")
    assert done.code == 2 and done.err.startswith(f"{kc}: cannot use this kubeconfig:") and "prod" in done.err


def _exec_kubeconfig(server: ApiServer, path: Path, script: str) -> Path:
    import sys

    doc = json.loads(server.kubeconfig(path).read_text())
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                                        "args": ["-c", script], "interactiveMode": "Never"}}
    path.write_text(json.dumps(doc))
    return path


def test_an_exec_credential_plugin_gives_the_token(server, tmp_path, files_model):
    plugin = ("import json; print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1beta1', "
              "'kind': 'ExecCredential', 'status': {'token': " + repr(server.token) + "}}))")
    done, model = _discover(tmp_path, "--kubeconfig", _exec_kubeconfig(server, tmp_path / "kc", plugin))
    assert done.code == 0, done.err
    assert model == files_model


def test_a_failing_exec_credential_plugin_is_one_line_with_exit_2(server, tmp_path):
    plugin = "import sys; sys.stderr.write('token expired, run: cloud login'); sys.exit(1)"
    done, _ = _discover(tmp_path, "--kubeconfig", _exec_kubeconfig(server, tmp_path / "kc", plugin))
    assert done.code == 2
    assert done.err.splitlines() == [
        f"{server.url}: 401 Unauthorized: Unauthorized",
        "  the kubeconfig's credential plugin failed (exec: process returned 1. token expired, run: cloud login); "
        "the API server did not accept the credentials of the current context: log in again or refresh them "
        "(token, client certificate or exec plugin), or choose another --context"]


def test_check_and_report_read_the_live_cluster_in_one_command(server, tmp_path):
    kc = server.kubeconfig(tmp_path / "kc")
    paths = kubectl_files(tmp_path, NODES, PODS, dra_objects())
    live = run("check", "--kubeconfig", kc, "--json", FITS)
    files = run("check", "--nodes", paths["nodes"], "--pods", paths["pods"], "--json", FITS, paths["dra"])
    assert live.code in (0, 1) and (live.code, live.out) == (files.code, files.out)
    made = run("report", "--kubeconfig", kc, FITS, "--out", tmp_path / "r.html")
    assert made.code == 0, made.err
    assert f"cluster {server.url}" in (tmp_path / "r.html").read_text()


def test_check_reports_an_unreachable_cluster_and_bad_manifests_at_once(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\n  metadata: [\n")
    with ApiServer(token="other") as server:
        kc = server.kubeconfig(tmp_path / "kc", token="wrong")
    done = run("check", "--kubeconfig", kc, bad)  # the server is gone: connection refused
    assert done.code == 2
    assert done.err.startswith(f"{server.url}: cannot connect:") and "not readable as YAML" in done.err


def test_no_cluster_anywhere_says_where_it_looked(tmp_path):
    done = run("check", FITS)
    assert done.code == 2
    assert done.err.strip() == (
        f"no cluster to read: no --kubeconfig, $KUBECONFIG is not set, {tmp_path / 'home' / '.kube' / 'config'} "
        "does not exist, and this is not a pod with a service account (KUBERNETES_SERVICE_HOST is not set); give "
        "--kubeconfig FILE, or kubectl files with --nodes FILE [--pods FILE]")


@pytest.mark.parametrize("args, error", [
    (["--request-timeout", "soon"], "--request-timeout 'soon': not a duration; give one such as 30s, 2m or 1m30s "
                                    "(or 0 to wait without a limit)"),
    (["--kubeconfig", "k.yaml", "--nodes", "n.json"], "--kubeconfig and --nodes name two sources (a live cluster "
                                                      "and a kubectl file): give one of them"),
    (["--pods", "p.json"], "--pods goes with --nodes (a live cluster's pods are read from the cluster)"),
])
def test_check_refuses_live_options_it_cannot_use(args, error):
    done = run("check", *args, FITS)
    assert (done.code, done.err.strip()) == (2, error)


def test_a_missing_kubeconfig_file_is_named(tmp_path):
    done, _ = _discover(tmp_path, "--kubeconfig", tmp_path / "nope")
    assert (done.code, done.err.strip()) == (2, f"{tmp_path / 'nope'}: cannot use this kubeconfig: no such file")


def test_a_kubeconfig_that_is_not_yaml_is_one_line(tmp_path):
    kc = tmp_path / "kc"
    kc.write_text("clusters: [\n")
    done, _ = _discover(tmp_path, "--kubeconfig", kc)
    assert done.code == 2 and len(done.err.strip().splitlines()) == 1
    assert done.err.startswith(f"{kc}: cannot use this kubeconfig:")


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    where = tmp_path_factory.mktemp("tls")
    return make_tls(where), make_tls(where, "stranger")


def test_tls_with_the_right_ca_reads_the_cluster(tls, tmp_path, files_model):
    with ApiServer(nodes=NODES, pods=PODS, dra=dra_objects(), tls=tls[0]) as server:
        done, model = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc"))
    assert done.code == 0, done.err
    assert model == files_model


def test_tls_with_another_ca_says_which_certificate_to_check(tls, tmp_path):
    with ApiServer(nodes=NODES, tls=tls[0]) as server:
        done, _ = _discover(tmp_path, "--kubeconfig", server.kubeconfig(tmp_path / "kc", ca=tls[1][0]))
    assert done.code == 2
    first, second = done.err.splitlines()
    assert first.startswith(f"{server.url}: TLS: ") and "certificate verify failed" in first
    assert "certificate-authority" in second


def test_in_a_pod_the_service_account_is_used(tls, tmp_path, files_model):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    with ApiServer(nodes=NODES, pods=PODS, dra=dra_objects(), tls=tls[0]) as server:
        (account / "token").write_text(server.token)
        (account / "ca.crt").write_text(tls[0][0].read_text())
        port = server.url.rsplit(":", 1)[1]
        environ = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port, "HOME": str(tmp_path)}
        from gpufleet.cli.discover import live_capacity

        model = live_capacity(KubeconfigCluster(environ=environ, service_account=account)).to_json()
    model.pop("source")
    assert model == files_model


def test_a_cluster_source_error_is_discovery_unavailable(tmp_path):
    with pytest.raises(DiscoveryUnavailableError, match="cannot use this kubeconfig"):
        KubeconfigCluster(tmp_path / "nope").nodes()


def test_a_live_quota_refuses_the_replica_that_crosses_it_and_is_recorded_by_discover(tmp_path):
    """The namespace's ResourceQuota (with the usage the API server counts) is read with the nodes: the replica
    past it is refused in the API server's words, the same from the live cluster and from capacity.json."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu-quota", "namespace": "ml"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "2"}},
             "status": {"hard": {"requests.nvidia.com/gpu": "2"}, "used": {"requests.nvidia.com/gpu": "1"}}}
    manifest = tmp_path / "two.yaml"
    manifest.write_text(FITS.read_text().replace("replicas: 1", "replicas: 2"))
    with ApiServer(nodes=NODES, pods=PODS, extra={"/api/v1/resourcequotas": [quota]}) as server:
        kc = server.kubeconfig(tmp_path / "kc")
        live = run("check", "--kubeconfig", kc, "--json", manifest)
        out = tmp_path / "capacity.json"
        assert run("discover", "--kubeconfig", kc, "--out", out).code == 0
    doc = json.loads(live.out)
    [refused] = [u for u in doc["unschedulable"] if u["reason"] == "rejected"]
    assert (refused["admitted"], refused["pending"], refused["refusedBy"]) == (1, 1, "ResourceQuota/ml/gpu-quota")
    assert ("exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=2, "
            "limited: requests.nvidia.com/gpu=2") in refused["message"]
    assert [o["kind"] for o in json.loads(out.read_text())["admission"]] == ["ResourceQuota"]
    saved = run("check", "--nodes", out, "--json", manifest)
    assert (saved.code, saved.out) == (live.code, live.out)


def test_quotas_the_credentials_may_not_list_are_skipped_with_a_warning(tmp_path):
    served = {"/api/v1/resourcequotas": [], "/api/v1/limitranges": []}
    with ApiServer(nodes=NODES, pods=PODS, extra=served,
                   forbidden=frozenset({"resourcequotas", "limitranges"})) as server:
        done = run("discover", "--kubeconfig", server.kubeconfig(tmp_path / "kc"), "--out", tmp_path / "c.json")
    assert done.code == 0, done.err
    [warning] = [line for line in done.err.splitlines() if "ResourceQuota, LimitRange" in line]
    assert "may not be listed" in warning and "deploy/rbac/gpufleet-discovery-clusterrole.yaml" in warning
