"""The scheduler emulation against the engine it replaced (tests/scheduling/reference_engine.py), on what
that engine proved: small random clusters and workloads.

Random small clusters (a few nodes of a few shapes, tainted, labelled, cordoned, some resources of unknown
size, pods already running) and random workloads (Pods, Deployments, Jobs; GPU, cpu and memory requests;
tolerations, node selectors, required node affinity; some rejected, some for another scheduler, some with
a GPU memory annotation) go through both engines:
- the API server's rejections and the other-scheduler warnings are the same, word for word;
- what the old engine proved Pending is Pending in the scheduler's too, where every workload before it got
  all its pods (its proof assumed they did);
- the pods the scheduler places never need more than a node has (with the pods already running there), and
  every node they land on passes the reference's own filters (unschedulable, taints and tolerations, node
  selector and affinity), which share no code with the package's;
- the first workload the default scheduler checks, with nothing placed before it, gets exactly the pods the
  reference finds room for, and where it pends, the same FailedScheduling message word for word.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.capacity.kubectl import bound_pods, node_from_object
from gpufleet.capacity.model import Node, Taint
from gpufleet.capacity.requests import pod_requests
from gpufleet.manifests.workloads import workloads_of
from gpufleet.scheduling import check_workloads
from tests.scheduling import reference_engine
from tests.scheduling.kube import container, deployment, job, node, pod, pod_spec

PRODUCTS = ["NVIDIA-A100-SXM4-40GB", "Tesla-T4", "NVIDIA-H100-80GB-HBM3"]
TAINTS = [("nvidia.com/gpu", "present", "NoSchedule"), ("dedicated", "train", "NoExecute"),
          ("soft", "x", "PreferNoSchedule")]


@st.composite
def nodes(draw):
    shapes = draw(st.lists(st.tuples(st.sampled_from([2, 4, 1, 0]), st.sampled_from(["16", "8", "4"]),
                                     st.sampled_from(PRODUCTS),
                                     st.lists(st.sampled_from(TAINTS), max_size=2, unique=True),
                                     st.sampled_from([False, False, False, True]), st.sampled_from(["110", "3"])),
                           min_size=1, max_size=3))
    count = draw(st.integers(2, 7))
    out = []
    for i in range(count):
        gpus, cpu, product, taints, cordoned, slots = shapes[draw(st.integers(0, len(shapes) - 1))]
        labels = {"nvidia.com/gpu.product": product, "pool": f"p{draw(st.integers(0, 1))}",
                  "nvidia.com/gpu.memory": "16384", "nvidia.com/gpu.count": str(gpus)}
        obj = node(f"n{i}", gpus, labels=labels, taints=taints, unschedulable=cordoned, cpu=cpu, pods=slots)
        if draw(st.integers(0, 5)) == 5:  # a planned node: cpu and memory of unknown size
            plain = Node(name=f"n{i}", labels=obj["metadata"]["labels"], taints=tuple(Taint(*t) for t in taints),
                         allocatable={"nvidia.com/gpu": gpus, "pods": 110}, unknown=frozenset({"cpu", "memory"}))
            out.append(plain)
        else:
            out.append(obj)
    return out


@st.composite
def pod_specs(draw):
    limits = {}
    gpus = draw(st.sampled_from([1, 2, 1, 3, 0]))
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    requests = {}
    if draw(st.booleans()):
        requests["cpu"] = draw(st.sampled_from(["500m", "2", "6", "12"]))
    if draw(st.integers(0, 3)) == 3:
        requests["memory"] = draw(st.sampled_from(["1Gi", "48Gi"]))
    if draw(st.integers(0, 12)) == 12:
        limits["nvidia.com/gpu"] = "500m"  # rejected by the API server
    spec = pod_spec(container(limits=limits, requests=requests or None))
    if draw(st.integers(0, 3)):
        spec["tolerations"] = draw(st.lists(st.sampled_from([
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Equal", "value": "train"}, {"operator": "Exists"}]), max_size=2))
    choice = draw(st.integers(0, 4))
    if choice == 1:
        spec["nodeSelector"] = {"pool": draw(st.sampled_from(["p0", "p1"]))}
    elif choice == 2:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": draw(st.sampled_from(["In", "NotIn"])),
                                   "values": draw(st.lists(st.sampled_from(PRODUCTS), min_size=1, max_size=2))}]}]}}}
    elif choice == 3:
        spec["nodeSelector"] = {"kubernetes.io/hostname": f"n{draw(st.integers(0, 3))}"}
    if draw(st.integers(0, 15)) == 15:
        spec["schedulerName"] = "hami-scheduler"
    return spec


@st.composite
def workloads(draw):
    out = []
    for i in range(draw(st.integers(2, 6))):
        spec = draw(pod_specs())
        kind = draw(st.sampled_from(["Deployment", "Pod", "Deployment", "Job"]))
        memory = {"gpufleet.io/expected-gpu-memory-mib": "20000"} if draw(st.integers(0, 6)) == 6 else None
        if kind == "Pod":
            out.append(pod(f"w{i}", spec, annotations=memory))
        elif kind == "Job":
            out.append(job(f"w{i}", draw(st.integers(0, 4)), spec))
        else:
            out.append(deployment(f"w{i}", draw(st.sampled_from([3, 2, 5, 1, 0, 8])), spec, annotations=memory))
    return out


@st.composite
def clusters(draw):
    node_list = draw(nodes())
    names = [n.name if isinstance(n, Node) else n["metadata"]["name"] for n in node_list]
    running = []
    for j in range(draw(st.integers(0, 3))):
        spec = pod_spec(container(limits={"nvidia.com/gpu": draw(st.integers(1, 3))}, requests={"cpu": "1"}))
        running.append(pod(f"r{j}", spec, node_name=draw(st.sampled_from(names)),
                           phase=draw(st.sampled_from(["Running", "Pending", "Succeeded"]))))
    return node_list, running, draw(workloads()), draw(st.booleans())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_scheduler_keeps_what_the_reference_engine_proved_on_small_clusters(cluster):
    _agree(*cluster)


def _agree(node_list, running, manifests, ert):
    expected = reference_engine.check_workloads(node_list, running, manifests, extended_resource_toleration=ert)
    got = check_workloads(node_list, running, manifests, extended_resource_toleration=ert)
    assert [u for u in got.unschedulable if u.reason == "rejected"] == \
        [u for u in expected.unschedulable if u.reason == "rejected"]
    assert [w for w in got.warnings if "scheduled by" in w.message] == \
        [w for w in expected.warnings if "scheduled by" in w.message]
    # The old proof assumed every earlier workload got its pods; where they all do in the scheduler too, what
    # it proved Pending must pend. (Where an earlier one pends, it may leave room: the old engine's false
    # Pending.)
    order = [f"{m['kind']}/default/{m['metadata']['name']}" for m in manifests]
    flagged = {u.workload for u in got.unschedulable} | {w.workload for w in got.warnings}
    first = next((k for k in order if k in flagged), None)
    proven = {u.workload for u in expected.unschedulable if u.reason == "pending"}
    if first in proven:
        assert first in {u.workload for u in got.unschedulable if u.reason == "pending"}
    _placements_fit(node_list, running, manifests, got)
    _placements_pass_the_reference_filters(node_list, manifests, ert, got)
    _first_workload_as_the_reference_finds_it(manifests, expected, got)


def _nodes(node_list) -> dict[str, Node]:
    return {n.name: n for n in (x if isinstance(x, Node) else node_from_object(x) for x in node_list)}


def _specs(manifests) -> dict[str, dict]:
    return {f"{m['kind']}/default/{m['metadata']['name']}":
            m["spec"] if m["kind"] == "Pod" else m["spec"]["template"]["spec"] for m in manifests}


def _placements_pass_the_reference_filters(node_list, manifests, ert, got):
    nodes, specs = _nodes(node_list), _specs(manifests)
    for key, name, n in got.placements:
        assert reference_engine.static_failure(nodes[name], specs[key], ert) is None, (key, name, n)


def _first_workload_as_the_reference_finds_it(manifests, expected, got):
    skipped = {u.workload for u in expected.unschedulable if u.reason == "rejected"} | \
        {w.workload for w in expected.warnings if "scheduled by" in w.message}
    first = next((w for w in workloads_of(manifests) if w.key not in skipped and w.replicas > 0), None)
    if first is None:
        return
    def pending(result):
        return [(u.pending, u.message) for u in result.unschedulable
                if u.workload == first.key and u.reason == "pending"]

    assert pending(got) == pending(expected)
    placed = sum(n for key, _, n in got.placements if key == first.key)
    assert placed == first.replicas - sum(n for n, _ in pending(expected))


def _placements_fit(node_list, running, manifests, got):
    nodes = _nodes(node_list)
    used = {name: {} for name in nodes}
    for p in bound_pods([p for p in running if isinstance(p, dict)]):
        for r, v in p.requests.items():
            used[p.node][r] = used[p.node].get(r, 0) + v
    specs = _specs(manifests)
    placed = {name: set() for name in nodes}  # what placed pods ask for there (running pods may overcommit)
    for key, name, n in got.placements:
        for r, v in pod_requests(specs[key]).items():
            used[name][r] = used[name].get(r, 0) + v * n
            placed[name] |= {r} if v else set()
    for name, known in nodes.items():
        for r in placed[name] - known.unknown - {"pods"}:
            assert used[name][r] <= known.allocatable.get(r, 0), (name, r, used[name][r], known.allocatable)


@st.composite
def packing_clusters(draw):
    """Untainted GPU nodes and workloads of mixed GPU sizes near capacity: where placement decides."""
    gpus = draw(st.lists(st.sampled_from([4, 3, 8, 2]), min_size=3, max_size=6))
    node_list = [node(f"n{i}", g, labels={"pool": f"p{i % 2}"}) for i, g in enumerate(gpus)]
    manifests = []
    for i in range(draw(st.integers(2, 5))):
        spec = pod_spec(container(limits={"nvidia.com/gpu": draw(st.sampled_from([1, 2, 3, 4]))}))
        if draw(st.integers(0, 4)) == 4:
            spec["nodeSelector"] = {"pool": "p1"}
        replicas = draw(st.sampled_from([2, 1, 3, 4]))
        manifests.append(pod(f"w{i}", spec) if replicas == 1 else deployment(f"w{i}", replicas, spec))
    return node_list, [], manifests, False


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packing_clusters())
def test_the_scheduler_keeps_what_the_reference_engine_proved_where_placement_decides(cluster):
    _agree(*cluster)
