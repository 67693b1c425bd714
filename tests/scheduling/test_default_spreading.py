"""The scheduler's system default topology spreading (PodTopologySpread with `defaultingType: System`): pods
that a Deployment's ReplicaSet, a ReplicaSet, a StatefulSet or a Service selects, and that have no spread
constraints of their own, are scored for spreading over hosts (maxSkew 3) and zones (maxSkew 5). By default
the check makes pods directly, without their owner, as cluster-capacity and the reference scheduler do, so
only Services select them; `default_spreading="controllers"` makes them as a cluster's controllers do. The
same cases run on the real control plane in tests/e2e/test_default_spreading.py."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.scheduler.plugins.helper import default_selector
from gpufleet.scheduler.plugins.podtopologyspread.system_default import DefaultSpread, Layout
from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, node, pod, pod_spec

NS = "ml"
NODES = [node(f"gpu-{i}", 2) for i in range(2)]


def _busy() -> dict:
    """gpu-0 a little fuller, so that resources alone prefer gpu-1."""
    busy = pod("busy", pod_spec(container(requests={"cpu": "1", "memory": "1Gi"})), namespace=NS,
               node_name="gpu-0", phase="Running")
    return busy


def _template(app: str, gpus: int, **extra) -> dict:
    return {"metadata": {"labels": {"app": app}},
            "spec": pod_spec(container(requests={"cpu": "100m"}, limits={"nvidia.com/gpu": str(gpus)}), **extra)}


def _controller(kind: str, name: str, replicas: int, gpus: int, **extra) -> dict:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": _template(name, gpus, **extra)}}


def _job(name: str) -> dict:
    template = _template(name, 1)
    template["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NS},
            "spec": {"parallelism": 2, "completions": 2, "template": template}}


def _service(app: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": app, "namespace": NS},
            "spec": {"clusterIP": "None", "selector": {"app": app}}}


def _where(result, key: str) -> dict[str, int]:
    return {n: c for k, n, c in result.placements if k == key}


def test_a_deployments_replicas_made_by_its_controller_spread_where_resources_alone_would_pack_them():
    manifests = [_controller("Deployment", "small", 2, 1), _controller("Deployment", "big", 1, 2)]
    spread = check_workloads(NODES, [_busy()], manifests, default_spreading="controllers")
    assert _where(spread, f"Deployment/{NS}/small") == {"gpu-0": 1, "gpu-1": 1}
    assert [(u.workload, u.pending) for u in spread.unschedulable] == [(f"Deployment/{NS}/big", 1)]

    for made in ("direct", "off"):  # no owner selects pods made directly, and no Service does here
        direct = check_workloads(NODES, [_busy()], manifests, default_spreading=made)
        assert _where(direct, f"Deployment/{NS}/small") == {"gpu-1": 2}
        assert direct.fits
    assert check_workloads(NODES, [_busy()], manifests).fits  # direct is the default


def test_a_service_spreads_pods_made_directly_and_off_turns_it_off():
    manifests = [_service("small"), _controller("Deployment", "small", 2, 1), _controller("Deployment", "big", 1, 2)]
    for made in ("direct", "controllers"):
        result = check_workloads(NODES, [_busy()], manifests, default_spreading=made)
        assert _where(result, f"Deployment/{NS}/small") == {"gpu-0": 1, "gpu-1": 1}
        assert not result.fits
    assert check_workloads(NODES, [_busy()], manifests, default_spreading="off").fits


def test_an_unknown_spreading_mode_is_refused():
    import pytest

    with pytest.raises(ValueError, match="direct, controllers, off"):
        check_workloads(NODES, [], [_controller("Deployment", "small", 1, 1)], default_spreading="owners")


def test_a_job_gets_default_spreading_only_through_a_service_that_selects_its_pods():
    key = f"Job/{NS}/train"
    with_service = check_workloads(NODES, [_busy()], [_service("train"), _job("train")])
    assert _where(with_service, key) == {"gpu-0": 1, "gpu-1": 1}
    without = check_workloads(NODES, [_busy()], [_job("train")])
    assert _where(without, key) == {"gpu-1": 2}
    other = {**_service("web"), "spec": {"selector": {"app": "web"}}}  # selects other pods: no spreading
    assert _where(check_workloads(NODES, [_busy()], [other, _job("train")]), key) == {"gpu-1": 2}


def test_a_pods_own_spread_constraints_replace_the_defaults():
    own = [{"maxSkew": 1, "topologyKey": "example.com/rack", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "small"}}}]  # no node has the key: it scores nothing
    result = check_workloads(NODES, [_busy()], [_controller("Deployment", "small", 2, 1,
                                                            topologySpreadConstraints=own)],
                             default_spreading="controllers")
    assert _where(result, f"Deployment/{NS}/small") == {"gpu-1": 2}


def test_a_statefulset_counts_its_running_pods_a_deployment_does_not():
    """A StatefulSet's selector matches its pods already running; a Deployment's ReplicaSet selects by the
    new template's pod-template-hash, which no running pod carries."""
    nodes = [node(f"gpu-{i}", 4) for i in range(2)]
    running = []
    for i in range(2):
        p = pod(f"db-{i}", pod_spec(container(requests={"cpu": "100m"}, limits={"nvidia.com/gpu": "1"})),
                namespace=NS, node_name="gpu-1", phase="Running")
        p["metadata"]["labels"] = {"app": "db"}
        running.append(p)
    running.append(_busy())
    sts = _controller("StatefulSet", "db", 1, 1)
    owned = "controllers"
    assert _where(check_workloads(nodes, running, [sts], default_spreading=owned), f"StatefulSet/{NS}/db") == \
        {"gpu-0": 1}
    assert _where(check_workloads(nodes, running, [sts]), f"StatefulSet/{NS}/db") == {"gpu-1": 1}  # made directly
    dep = _controller("Deployment", "db", 1, 1)
    assert _where(check_workloads(nodes, running, [dep], default_spreading=owned), f"Deployment/{NS}/db") == \
        {"gpu-1": 1}


def test_scores_follow_the_upstream_formula_over_hosts_and_zones():
    """Four scored nodes: zone 0 holds one matching pod (on node 0), node 3 has no zone label. Hostname
    weight ln(4 + 2), zone weight ln(3 domains + 2) (the unlabelled node is one more domain); each term adds
    maxSkew - 1; rounded, then 100 x (max + min - s) // max, times the plugin weight 2."""
    counts = np.array([1, 0, 0, 0])
    zone_of = np.array([0, 0, 1, -1])
    spread = DefaultSpread(counts.copy(), Layout(np.ones(4, dtype=bool), zone_of), np.ones(4, dtype=bool), 2)
    # raw: 1*ln6+2 + 1*ln5+4 = 9.40 -> 9; 2 + ln5+4 = 7.61 -> 8; 2+4 = 6; 2 (no zone label)
    assert spread.scores(np.arange(4)).tolist() == [2 * (100 * 2 // 9), 2 * (100 * 3 // 9), 2 * (100 * 5 // 9), 200]
    spread.add(1)  # zone 0 now holds two pods; node 1 one
    raw = [1 * np.log(6) + 2 + 2 * np.log(5) + 4, 1 * np.log(6) + 2 + 2 * np.log(5) + 4, 6, 2]
    rounded = [int(np.floor(r + 0.5)) for r in raw]
    top, low = max(rounded), min(rounded)
    assert spread.scores(np.arange(4)).tolist() == [2 * (100 * (top + low - r) // top) for r in rounded]


def test_nodes_alike_score_alike_until_a_matching_pod_is_placed():
    layout = Layout(np.ones(3, dtype=bool), np.array([0, 0, 1]))
    spread = DefaultSpread(np.zeros(3, dtype=np.int64), layout, np.ones(3, dtype=bool), 2)
    assert spread.scores(np.arange(3)) is None  # every node the same: the scores cannot change the choice
    spread.add(0)  # hostname 1*ln5+2 = 3.61 -> 4, zone 1*ln4+4 = 5.39: 9 | 0+2+5.39 = 7 | 2+4 = 6
    assert spread.scores(np.arange(3)).tolist() == [2 * (100 * 6 // 9), 2 * (100 * 8 // 9), 2 * (100 * 9 // 9)]


def test_a_node_without_a_zone_label_scores_its_hostname_term_only():
    """With the system defaults such a node is not left out (requireAllTopologies is false)."""
    layout = Layout(np.array([True, True, False]), np.array([0, -1, -1]))
    spread = DefaultSpread(np.zeros(3, dtype=np.int64), layout, np.ones(3, dtype=bool), 2)
    # 0+2 + 0+4 = 6 | 2 | 0 (no hostname label either): max 6, min 0
    assert spread.scores(np.arange(3)).tolist() == [2 * (100 * (6 + 0 - 6) // 6), 2 * (100 * 4 // 6), 200]


labels = st.dictionaries(st.sampled_from(["app", "tier", "pod-template-hash"]), st.sampled_from(["a", "b", ""]),
                         max_size=3)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["Deployment", "ReplicaSet", "StatefulSet", "Job", "Pod", "CronJob"]),
       owner=st.one_of(st.none(), st.fixed_dictionaries({"matchLabels": labels}),
                       st.fixed_dictionaries({"matchExpressions": st.lists(st.fixed_dictionaries(
                           {"key": st.sampled_from(["app", "tier"]), "operator": st.sampled_from(["In", "Exists"]),
                            "values": st.lists(st.sampled_from(["a", "b"]), max_size=2)}), max_size=2)})),
       pod_labels=labels, services=st.lists(labels, max_size=3))
def test_the_default_selector_matches_the_pod_it_was_built_for(kind, owner, pod_labels, services):
    """Services that select the pod and its owner's selector: the merged selector still selects the pod."""
    from gpufleet.labels import selector_matches

    if owner is not None and not selector_matches(owner, pod_labels):
        return  # the API server refuses a controller whose selector does not select its template
    selector, own_only = default_selector(kind, owner, pod_labels, services)
    assert own_only == (kind == "Deployment")
    from_services = any(s and all(pod_labels.get(k) == v for k, v in s.items()) for s in services)
    from_owner = kind in ("ReplicaSet", "StatefulSet") and bool(owner) and any(owner.values())
    assert (selector is None) == (kind != "Deployment" and not from_services and not from_owner)
    if selector is not None:
        assert selector_matches(selector, pod_labels)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-1, 3), st.booleans()), min_size=1, max_size=30),
       st.data())
def test_the_per_zone_shortcut_scores_as_node_by_node(nodes, data):
    """With every node labelled, `scores` works per zone plus the nodes holding matching pods; it must give
    what scoring.go's node-by-node sum gives, on any window."""
    counts = np.array([c for c, _, _ in nodes], dtype=np.int64)
    layout = Layout(np.ones(len(nodes), dtype=bool), np.array([z for _, z, _ in nodes], dtype=np.int64))
    ok = np.array([a for _, _, a in nodes], dtype=bool)
    picked = data.draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=len(nodes), unique=True))
    window = np.array(sorted(picked), dtype=np.int64)
    spread = DefaultSpread(counts.copy(), layout, ok, 2)
    for _ in range(2):
        got = spread.scores(window)
        if got is None:
            assert not counts.any() and layout.uniform
        else:
            assert got.tolist() == spread.scores_each(window).tolist()
        spread.add(int(window[0]))
