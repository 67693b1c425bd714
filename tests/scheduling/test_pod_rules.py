"""Topology spread and pod (anti-)affinity as filters and scores, as the real kube-scheduler v1.34.1 gave them.

Seven 2-GPU nodes in three zones (n0, n3, n6 in z0; n1, n4 in z1; n2, n5 in z2). Each expectation was
checked against the real scheduler (in-process over a fake clientset, three runs each); the comments say
what it did.
"""

from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, gpu_container, node, pod, pod_spec

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
NODES = [node(f"n{i}", 2, labels={ZONE: f"z{i % 3}", "pool": "gpu"}) for i in range(7)]


def _dep(name, replicas, **spec):
    d = deployment(name, replicas, pod_spec(gpu_container(1), **spec))
    d["spec"]["template"]["metadata"]["labels"] = {"app": name}
    d["spec"]["selector"] = {"matchLabels": {"app": name}}
    return d


def _term(app, key):
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _placed(result, key):
    return sorted(n for w, n, c in result.placements if w == key for _ in range(c))


def test_required_anti_affinity_on_the_hostname_leaves_replicas_beyond_the_nodes_pending():
    # Real: 7 scheduled, 2 pending, "0/7 nodes are available: 7 node(s) didn't match pod anti-affinity rules."
    result = check_workloads(NODES, [], [_dep("a", 9, affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term("a", HOST)]}})])
    (u,) = result.unschedulable
    assert (u.pending, u.message) == (2, "0/7 nodes are available: 7 node(s) didn't match pod anti-affinity rules.")
    assert _placed(result, "Deployment/default/a") == [f"n{i}" for i in range(7)]


def test_zone_spread_with_max_skew_one_places_every_pod_evenly():
    # Real: all 11 placed (4 + 4 + 3 over the zones' 6 + 4 + 4 GPUs).
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "b"}}}]
    result = check_workloads(NODES, [], [_dep("b", 11, topologySpreadConstraints=spread)])
    assert result.fits and result.warnings == []
    zones = [int(n[1:]) % 3 for n in _placed(result, "Deployment/default/b")]
    assert sorted(zones.count(z) for z in range(3)) == [3, 4, 4]


def test_zone_spread_pends_the_pod_that_would_put_a_zone_two_ahead():
    # 14 pods over zones of 6, 4 and 4 GPUs with maxSkew 1: 5 + 4 + 4 fit, the last would make z0 two ahead.
    # Real, 3 of 3 runs: "0/7 nodes are available: 1 node(s) didn't match pod topology spread constraints,
    # 6 Insufficient nvidia.com/gpu."
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "b"}}}]
    result = check_workloads(NODES, [], [_dep("b", 14, topologySpreadConstraints=spread)])
    (u,) = result.unschedulable
    assert (u.pending, u.message) == (1, "0/7 nodes are available: 1 node(s) didn't match pod topology spread "
                                         "constraints, 6 Insufficient nvidia.com/gpu.")


def test_pod_affinity_follows_a_running_pod_into_its_zone():
    # Real: the 4 pods land on n1 and n4, the zone of the running db pod (z1).
    db = pod("db-0", pod_spec(container(requests={"cpu": "1"})), node_name="n4", phase="Running")
    db["metadata"]["labels"] = {"app": "db"}
    result = check_workloads(NODES, [db], [_dep("d", 4, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term("db", ZONE)]}})])
    assert result.fits and _placed(result, "Deployment/default/d") == ["n1", "n1", "n4", "n4"]


def test_an_earlier_workloads_anti_affinity_keeps_later_pods_out_of_its_zones():
    # Real (pods made directly, so no default spreading): e's two pods take two zones; f's four pods fit only
    # in the third.
    apart = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("f", ZONE)]}}
    e = _dep("e", 2, affinity=apart)
    result = check_workloads(NODES, [], [e, _dep("f", 4)])
    zones_e = {int(n[1:]) % 3 for n in _placed(result, "Deployment/default/e")}
    zones_f = {int(n[1:]) % 3 for n in _placed(result, "Deployment/default/f")}
    assert not zones_e & zones_f
    # Seven pods of f fit only if both of e's pods happened to share a zone: real, 3 pending in 4 of 5 runs
    # ("... 5 node(s) didn't satisfy existing pods anti-affinity rules."), all placed in 1. A warning.
    result = check_workloads(NODES, [], [e, _dep("f", 7)])
    (w,) = result.warnings
    assert result.unschedulable == [] and w.workload == "Deployment/default/f"
    assert "didn't satisfy existing pods anti-affinity rules" in w.message


def test_self_affinity_that_depends_on_the_first_pick_is_a_warning():
    # Real: 1 of 5 pods pending in 2 of 3 runs: the first pod picks a zone at random, and only z0 holds 5.
    result = check_workloads(NODES, [], [_dep("g", 5, affinity={"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term("g", ZONE)]}})])
    assert result.unschedulable == []
    (w,) = result.warnings
    assert "didn't match pod affinity rules" in w.message and "runs of the scheduler" in w.message


def test_bad_spread_and_affinity_values_are_rejected_in_the_api_servers_words():
    # Every error below is the real API server's (v1.34.1 validation, through the reference), in its order.
    spec = pod_spec(gpu_container(1), topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Maybe", "minDomains": 2,
         "labelSelector": {"matchLabels": {"a": "b"}}}], affinity={
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 101, "podAffinityTerm": {"topologyKey": "", "labelSelector": {}}}]},
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}})
    (u,) = check_workloads(NODES, [], [deployment("x", 1, spec)]).unschedulable
    p = "spec.template.spec"
    anti = f"{p}.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
    assert (u.reason, u.message) == ("rejected", (
        f'Deployment.apps "x" is invalid: [{p}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution'
        f"[0].weight: Invalid value: 0: must be in the range 1-100, {anti}.weight: Invalid value: 101: must be in "
        f"the range 1-100, {anti}.podAffinityTerm.topologyKey: Required value: can not be empty, "
        f'{anti}.podAffinityTerm.topologyKey: Invalid value: "": name part must be non-empty, '
        f'{anti}.podAffinityTerm.topologyKey: Invalid value: "": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
        "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), "
        f"{p}.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero, "
        f"{p}.topologySpreadConstraints[0].topologyKey: Required value: can not be empty, "
        f'{p}.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: '
        f'"DoNotSchedule", "ScheduleAnyway", {p}.topologySpreadConstraints[0].minDomains: Invalid value: 2: can '
        "only use minDomains if whenUnsatisfiable=DoNotSchedule, not Maybe]"))


def test_a_topology_key_no_node_carries_is_the_missing_label_and_affinity_failure():
    # Real: b pends "7 node(s) didn't match pod topology spread constraints (missing required label)", an
    # anti-affinity over a key no node has keeps no pod out (c fits), an affinity over it places none (d).
    absent = {"labelSelector": {"matchLabels": {"app": "zz"}}, "topologyKey": "absent"}
    workloads = [_dep("b", 1, topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "absent",
                                                          "whenUnsatisfiable": "DoNotSchedule",
                                                          "labelSelector": {"matchLabels": {"app": "b"}}}]),
                 _dep("c", 2, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {**absent, "labelSelector": {"matchLabels": {"app": "c"}}}]}}),
                 _dep("d", 2, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [absent]}})]
    result = check_workloads(NODES, [], workloads)
    assert [(u.workload, u.pending, u.message) for u in result.unschedulable] == [
        ("Deployment/default/b", 1, "0/7 nodes are available: 7 node(s) didn't match pod topology spread "
                                    "constraints (missing required label)."),
        ("Deployment/default/d", 2, "0/7 nodes are available: 7 node(s) didn't match pod affinity rules.")]
