"""The fleet-scale engine gives exactly today's results on small inputs (tests/scheduling/reference_engine.py).

Random small clusters (a few nodes of a few shapes, tainted, labelled, cordoned, some resources of unknown
size, pods already running) and random workloads (Pods, Deployments, Jobs; GPU, cpu and memory requests;
tolerations, node selectors, required node affinity; some rejected, some for another scheduler, some with
a GPU memory annotation) go through both engines; verdicts, counts, messages and warnings must be equal.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.capacity.model import Node, Taint
from gpufleet.scheduling import check_workloads
from tests.scheduling import reference_engine
from tests.scheduling.kube import container, deployment, job, node, pod, pod_spec

PRODUCTS = ["NVIDIA-A100-SXM4-40GB", "Tesla-T4", "NVIDIA-H100-80GB-HBM3"]
TAINTS = [("nvidia.com/gpu", "present", "NoSchedule"), ("dedicated", "train", "NoExecute"),
          ("soft", "x", "PreferNoSchedule")]


@st.composite
def nodes(draw):
    shapes = draw(st.lists(st.tuples(st.sampled_from([2, 4, 1, 0]), st.sampled_from(["16", "8", "4"]),
                                     st.sampled_from(PRODUCTS), st.lists(st.sampled_from(TAINTS), max_size=2, unique=True),
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
def test_fleet_engine_matches_the_reference_engine_on_small_clusters(cluster):
    node_list, running, manifests, ert = cluster
    expected = reference_engine.check_workloads(node_list, running, manifests, extended_resource_toleration=ert)
    got = check_workloads(node_list, running, manifests, extended_resource_toleration=ert)
    assert got.to_json() == expected.to_json()


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
def test_fleet_engine_matches_the_reference_engine_where_placement_decides(cluster):
    node_list, running, manifests, ert = cluster
    expected = reference_engine.check_workloads(node_list, running, manifests, extended_resource_toleration=ert)
    got = check_workloads(node_list, running, manifests, extended_resource_toleration=ert)
    assert got.to_json() == expected.to_json()
