"""Host ports (the NodePorts filter) and what pods already running hold beyond their requests: their host ports
and their pod (anti-)affinity terms. Each expectation here was checked against kube-scheduler v1.34.5."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.capacity.kubectl import bound_pods
from gpufleet.capacity.model import FORMAT, Capacity
from gpufleet.capacity.ports import host_ports
from gpufleet.scheduling import check_workloads
from tests.scheduling.kube import container, deployment, node, pod, pod_spec

PORTS = "node(s) didn't have free ports for the requested pod ports"


def _with_port(host_port=None, container_port=80, **port):
    spec = {"containerPort": container_port, **port}
    if host_port is not None:
        spec["hostPort"] = host_port
    return container(requests={"cpu": "100m"}, ports=[spec])


def _pending(result):
    return {u.workload: (u.pending, u.message) for u in result.unschedulable}


def test_a_second_pod_wanting_a_held_host_port_pends_with_the_scheduler_message():
    result = check_workloads([node("a")], [], [deployment("web", 2, pod_spec(_with_port(8080)))])
    assert _pending(result) == {"Deployment/default/web": (1, f"0/1 nodes are available: 1 {PORTS}.")}
    (u,) = result.unschedulable
    assert "8080/TCP" in u.blocked.summary and "one pod per node" in u.blocked.summary
    assert "Service" in u.blocked.fix and "ask for less" not in u.blocked.fix


def test_one_pod_per_node_fits_when_there_are_as_many_nodes():
    assert check_workloads([node("a"), node("b")], [], [deployment("web", 2, pod_spec(_with_port(8080)))]).fits


def test_host_network_makes_every_container_port_a_host_port():
    spec = pod_spec(_with_port(container_port=29500), hostNetwork=True)
    result = check_workloads([node("a")], [], [deployment("train", 2, spec)])
    assert _pending(result)["Deployment/default/train"][0] == 1
    assert "hostNetwork" in result.unschedulable[0].blocked.summary
    # without hostNetwork a container port alone holds nothing
    assert check_workloads([node("a")], [], [deployment("train", 2, pod_spec(_with_port(container_port=29500)))]).fits


@pytest.mark.parametrize("first, second, clash", [
    ({}, {}, True),
    ({"protocol": "UDP"}, {}, False),
    ({"hostIP": "10.0.0.1"}, {"hostIP": "10.0.0.2"}, False),
    ({"hostIP": "10.0.0.1"}, {"hostIP": "10.0.0.1"}, True),
    ({"hostIP": "10.0.0.1"}, {}, True),  # the second binds every address
    ({}, {"hostIP": "10.0.0.2"}, True),  # the first binds every address
])
def test_ports_clash_on_protocol_and_port_where_the_addresses_overlap(first, second, clash):
    manifests = [pod("one", pod_spec(_with_port(53, **first))), pod("two", pod_spec(_with_port(53, **second)))]
    assert (not check_workloads([node("a")], [], manifests).fits) is clash


def test_a_sidecars_port_is_held_and_an_init_containers_is_not():
    sidecar = {"name": "proxy", "image": "envoy:1", "restartPolicy": "Always",
               "ports": [{"containerPort": 1, "hostPort": 70}]}
    init = {"name": "setup", "image": "busybox:1", "ports": [{"containerPort": 1, "hostPort": 70}]}
    taker = pod("taker", pod_spec(_with_port(70)))
    assert not check_workloads([node("a")], [], [pod("s", pod_spec(container(), initContainers=[sidecar])),
                                                 taker]).fits
    assert check_workloads([node("a")], [], [pod("i", pod_spec(container(), initContainers=[init])), taker]).fits


def test_a_running_pods_host_port_blocks_its_node_and_a_node_failing_ports_is_not_counted_short_of_cpu():
    running = pod("agent", pod_spec(container(requests={"cpu": "15"}, ports=[{"containerPort": 1, "hostPort": 9100}])),
                  node_name="a", phase="Running")
    wants = pod("exporter", pod_spec(container(requests={"cpu": "4"}, ports=[{"containerPort": 1, "hostPort": 9100}])))
    result = check_workloads([node("a"), node("b", cpu="2")], [running], [wants])
    assert _pending(result) == {"Pod/default/exporter": (
        1, f"0/2 nodes are available: 1 Insufficient cpu, 1 {PORTS}.")}


def _running(name, node_name, labels, affinity):
    p = pod(name, pod_spec(container(requests={"cpu": "1"}), affinity=affinity), node_name=node_name, phase="Running")
    p["metadata"]["labels"] = labels
    return p


def _labelled(d, labels):
    d["spec"]["template"]["metadata"]["labels"] = labels
    return d


ZONE = "topology.kubernetes.io/zone"


def test_a_running_pods_required_anti_affinity_keeps_matching_pods_out_of_its_domain():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "noisy"}}, "topologyKey": ZONE}]}}
    nodes = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}), node("c", labels={ZONE: "z2"})]
    running = [_running("quiet", "a", {"app": "quiet"}, anti)]
    noisy = _labelled(deployment("noisy", 1, pod_spec(container(requests={"cpu": "1"}))), {"app": "noisy"})
    result = check_workloads(nodes, running, [noisy])
    assert result.fits and {n for _, n, _ in result.placements} == {"c"}
    result = check_workloads(nodes[:2], running, [noisy])
    assert _pending(result) == {"Deployment/default/noisy": (
        1, "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules.")}
    why = result.unschedulable[0].blocked
    assert "anti-affinity" in why.summary and "too little free" not in why.summary
    other = _labelled(deployment("other", 1, pod_spec(container(requests={"cpu": "1"}))), {"app": "other"})
    assert check_workloads(nodes[:2], running, [other]).fits


def test_a_running_pods_preferred_anti_affinity_moves_matching_pods_away():
    term = {"labelSelector": {"matchLabels": {"app": "new"}}, "topologyKey": "kubernetes.io/hostname"}
    prefer = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}
    busy = pod("busy", pod_spec(container(requests={"cpu": "7"})), node_name="b", phase="Running")
    new = _labelled(deployment("new", 3, pod_spec(container(requests={"cpu": "100m"}))), {"app": "new"})
    # without the term the emptier node a wins; with it (the real scheduler: all three on b) they move to b.
    # Measured with pods made directly (no ReplicaSet): no default spreading.
    plain = check_workloads([node("a"), node("b")], [_running("old", "a", {"app": "old"}, None), busy], [new])
    assert [n for _, n, _ in plain.placements] == ["a"]
    moved = check_workloads([node("a"), node("b")], [_running("old", "a", {"app": "old"}, prefer), busy], [new])
    assert [n for _, n, _ in moved.placements] == ["b"]


def test_host_ports_and_affinity_of_running_pods_survive_the_capacity_file():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    running = _running("held", "a", {"app": "held"}, anti)
    running["spec"]["containers"][0]["ports"] = [{"containerPort": 1, "hostPort": 80, "protocol": "UDP"}]
    (bound,) = bound_pods([running])
    doc = json.loads(json.dumps(bound.to_json()))
    assert doc["hostPorts"] == [{"protocol": "UDP", "hostIP": "0.0.0.0", "hostPort": 80}]
    again = Capacity.from_json({"format": FORMAT, "nodes": [], "pods": [doc]})
    assert again.pods[0].ports == bound.ports and again.pods[0].pod_affinity == anti


def test_host_ports_follow_the_api_servers_defaulting():
    assert host_ports({"hostNetwork": True, "containers": [{"ports": [{"containerPort": 8000}]}],
                       "initContainers": [{"ports": [{"containerPort": 1}]}]}) == (("TCP", "0.0.0.0", 8000),)
    assert host_ports({"containers": [{"ports": [{"containerPort": 8000}]}]}) == ()
    assert host_ports({"containers": [{"ports": [{"containerPort": 1, "hostPort": 0}, "bad"]}]}) == ()
    assert host_ports(None) == ()


def test_a_running_pod_with_a_port_that_is_not_a_number_is_refused_naming_the_field(tmp_path):
    from gpufleet.capacity.kubectl import read_objects

    bad = pod("agent", pod_spec(container(ports=[{"containerPort": 1, "hostPort": "9100"}])), node_name="a",
              phase="Running")
    _, pods, errors = read_objects([node("a")], [bad], "nodes.json", "pods.json")
    assert pods == [] and errors == [
        "pods.json: Pod/agent: spec.containers[0].ports[0].hostPort: must be an integer, not the string '9100'"]


def _clash(a, b) -> bool:
    (pa, ia, na), (pb, ib, nb) = a, b
    return pa == pb and na == nb and (ia == "0.0.0.0" or ib == "0.0.0.0" or ia == ib)


_port = st.fixed_dictionaries({"containerPort": st.integers(1, 3), "hostPort": st.sampled_from([None, 0, 1, 2])},
                              optional={"protocol": st.sampled_from(["TCP", "UDP"]),
                                        "hostIP": st.sampled_from(["10.0.0.1", "10.0.0.2", "0.0.0.0"])})


@st.composite
def _port_workloads(draw):
    out = []
    for i in range(draw(st.integers(1, 6))):
        ports = [{k: v for k, v in p.items() if v is not None} for p in draw(st.lists(_port, max_size=2))]
        spec = pod_spec(container(requests={"cpu": "100m"}, ports=ports), hostNetwork=draw(st.booleans()))
        out.append(deployment(f"w{i}", draw(st.integers(1, 3)), spec))
    return out


@settings(max_examples=60, deadline=None)
@given(_port_workloads(), st.integers(1, 3))
def test_no_node_ever_holds_two_clashing_host_ports(manifests, node_count):
    result = check_workloads([node(f"n{i}") for i in range(node_count)], [], manifests)
    ports = {f"Deployment/default/{m['metadata']['name']}": host_ports(m["spec"]["template"]["spec"])
             for m in manifests}
    held: dict[str, list] = {}
    for workload, node_name, count in result.placements:
        held.setdefault(node_name, []).extend(ports[workload] for _ in range(count))
    for pods_there in held.values():
        for i, a in enumerate(pods_there):
            for b in pods_there[i + 1:]:
                assert not any(_clash(x, y) for x in a for y in b)
    for u in result.unschedulable:  # only ports can stop these small pods
        assert u.message == f"0/{node_count} nodes are available: {node_count} {PORTS}."
