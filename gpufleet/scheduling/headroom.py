"""How many more of a pod fit? The question cluster-capacity (kubernetes-sigs) answers, on the check's own
node choice (docs/capacity.md, "Headroom").

The probe's pod is appended, after any manifests (placed first, exactly as `gpufleet check` places them), as a
Deployment of more replicas than the nodes' free resources could hold. The scheduler places them one after
another; cluster-capacity stops at the first that cannot be placed, and so does the count here: every later
replica is the same pod against the same nodes, so it fails for the same reason.

Where scores tie, the scheduler picks at random, and the count is a random variable: where the earlier pods
landed decides what room is left. The real scheduler's runs spread too (77 and 79 copies of a 1-GPU pod on one
300-node fleet). So the check runs HEADROOM_RUNS seeded runs:
`instances` is their median, `instances_range` the least and most; `by_node`, `by_product` and `by_zone` are
where the first run put its copies.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpufleet.capacity.dra import DRA_KINDS, Device, DraObjects, dra_objects
from gpufleet.capacity.model import BoundPod, Node
from gpufleet.capacity.requests import pod_requests
from gpufleet.errors import InputError
from gpufleet.manifests.workloads import flatten, workload_of
from gpufleet.scheduling.result import Evicted

if TYPE_CHECKING:
    from gpufleet.scheduling.engine import Spreading
    from gpufleet.scheduling.result import CheckResult

PROBE_NAME = "gpufleet-headroom-probe"
#: Replicas tried when nothing bounds them (a probe asking for no resource at all): the pods per node do.
UNBOUNDED = 1_000_000
#: Seeded runs a headroom answer takes: the median of the check's 3 strays from the real runs
#: (tests/fixtures/oracle-headroom).
HEADROOM_RUNS = 15
ZONE_LABEL = "topology.kubernetes.io/zone"


class ProbeError(InputError):
    """The probe itself is unusable (not one pod, refused by the API server, a claim no input holds)."""


@dataclass
class Headroom:
    """The answer for one probe."""

    probe: str
    instances: int
    instances_range: tuple[int, int]
    by_node: dict[str, int] = field(default_factory=dict)
    by_product: dict[str, int] = field(default_factory=dict)
    by_zone: dict[str, int] = field(default_factory=dict)
    stopped_by: str = ""
    tried: int = 0
    priority: int | None = None
    """With preemption: the probe's priority (its copies may evict pods of lower priority); None: free room."""
    victims: tuple[Evicted, ...] = ()
    """With preemption: the pods the first run's copies evict, per workload and node."""

    def to_json(self) -> dict:
        out = {"probe": self.probe, "instances": self.instances, "instancesRange": list(self.instances_range),
               "byNode": self.by_node, "byProduct": self.by_product, "byZone": self.by_zone,
               "stoppedBy": self.stopped_by}
        if self.priority is not None:
            out |= {"priority": self.priority, "victims": [v.to_json() for v in self.victims]}
        return out


def probe_pod(obj: dict) -> tuple[str, dict, dict]:
    """(namespace, pod metadata, pod spec) of a probe: a Pod, or a workload whose pod template is used."""
    if not isinstance(obj, dict):
        raise InputError("the probe is not a Kubernetes object")
    w = workload_of(obj)
    if w is None:
        raise InputError(f"the probe is a {obj.get('kind')!r}; expected a Pod, or a Deployment, ReplicaSet, "
                         "StatefulSet, Job or CronJob whose pod template is the probe")
    if obj.get("kind") == "Pod":
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
    else:
        template = _template(obj)
        meta = template.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
    return w.namespace, {k: v for k, v in meta.items() if k in ("labels", "annotations")}, w.spec


def _template(obj: dict) -> dict:
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    if obj.get("kind") == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {}) if isinstance(spec.get("jobTemplate"), dict) \
            else {}
    template = spec.get("template")
    return template if isinstance(template, dict) else {}


def upper_bound(nodes: Sequence[Node], pods: Sequence[BoundPod], requests: dict[str, int]) -> int:
    """Probe pods the nodes' free resources could hold at most (filters and taints aside), plus one."""
    used: dict[str, Counter] = {}
    for pod in pods:
        used.setdefault(pod.node, Counter()).update(pod.requests)
        used[pod.node]["pods"] += 1
    wanted = {r: n for r, n in requests.items() if n > 0}
    wanted.setdefault("pods", 1)
    total = 0
    for node in nodes:
        free = used.get(node.name, Counter())
        fits = UNBOUNDED
        for resource, n in wanted.items():
            if resource in node.unknown:
                continue
            have = node.allocatable.get(resource, 0) - free.get(resource, 0)
            fits = min(fits, max(0, have) // n)
        total += fits
    return min(total, UNBOUNDED) + 1


def device_bound(nodes: Sequence[Node], namespace: str, spec: dict, dra: DraObjects) -> int:
    """Probe pods the nodes' DRA devices could hold at most (every device free, any device taken), plus one:
    per node, the devices it reaches over the devices one pod's template claims ask for at least."""
    from gpufleet.scheduling.dra_offer import node_devices

    per_pod = 0
    for pc in spec.get("resourceClaims") or ():
        template = dra.templates.get((namespace, pc.get("resourceClaimTemplateName")))
        for request in ((template or {}).get("devices") or {}).get("requests") or ():
            alternatives = [request["exactly"]] if request.get("exactly") else request.get("firstAvailable") or ()
            per_pod += min((1 if a.get("allocationMode") == "All" else int(a.get("count") or 1)
                            for a in alternatives), default=0)
    if not per_pod:  # shared claims only: the copies take no devices of their own
        return UNBOUNDED + 1
    return min(sum(len(devices) // per_pod for devices in node_devices(dra, nodes)), UNBOUNDED) + 1


def headroom(nodes: Sequence[Node], pods: Sequence[BoundPod], manifests: list[dict], probe: dict, *,
             extended_resource_toleration: bool = False, tie_runs: int | None = None,
             preemption: bool = False, default_spreading: Spreading = "direct",
             waiting: dict[str, int] | None = None) -> Headroom:
    """How many more of `probe`'s pod fit after `manifests` are placed (see the module docstring).
    `default_spreading`: as check_workloads, for `manifests`; the probe's copies are made directly, as
    cluster-capacity makes them, so only a Service that selects them gives them default spreading.

    `preemption`: copies that fit nowhere may evict pods of lower priority than the probe's (its
    priorityClassName among `manifests`' PriorityClasses), as kube-scheduler's DefaultPreemption does; evicted
    running pods are gone, evicted pods of `manifests` are recreated and wait. Without it, free room only.
    `waiting`: as check_workloads."""
    from gpufleet.scheduling.engine import _nodes, _pods, check_workloads

    node_list, pod_list = _nodes(nodes), _pods(pods)
    one = _Probe.of(node_list, pod_list, manifests, probe, preemption)
    result = check_workloads(node_list, pod_list, [*manifests, one.deployment],
                             extended_resource_toleration=extended_resource_toleration,
                             tie_runs=tie_runs or HEADROOM_RUNS, preemption=preemption,
                             default_spreading=default_spreading, made_directly=frozenset((one.key,)), waiting=waiting)
    return one.answer(result, node_list, manifests)


@dataclass
class _Probe:
    """A probe made ready for a check: its pod, as a Deployment of `bound` replicas (more than could fit)."""

    namespace: str
    spec: dict
    bound: int
    level: int | None
    deployment: dict

    @property
    def key(self) -> str:
        return f"Deployment/{self.namespace}/{self.deployment['metadata']['name']}"

    @classmethod
    def of(cls, node_list: list[Node], pod_list: list[BoundPod], manifests: list[dict], probe: dict,
           preemption: bool = False, name: str = PROBE_NAME) -> _Probe:
        namespace, meta, spec = probe_pod(probe)
        missing = _missing_claim(namespace, spec, manifests)
        if missing is not None:
            raise ProbeError(f"the probe's pod claim {missing}, which none of the inputs holds: put it beside the "
                             "probe's workload in the probe file (every copy of the probe needs it)")
        level = None
        in_the_way = pod_list
        if preemption:  # the room of every pod the copies may evict counts as free for the bound
            from gpufleet.admission.priority import priority_classes

            known = priority_classes(list(flatten(manifests)))
            level = known.of(spec)
            in_the_way = [p for p in pod_list
                          if (p.priority if p.priority is not None else known.of({}, p.priority_class)) >= level]
        bound = upper_bound(node_list, in_the_way, pod_requests(spec))
        if spec.get("resourceClaims"):
            bound = min(bound, device_bound(node_list, namespace, spec, _dra(manifests)))
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": name, "namespace": namespace},
                      "spec": {"replicas": bound, "template": {"metadata": copy.deepcopy(meta), "spec": spec}}}
        return cls(namespace, spec, bound, level, deployment)

    def answer(self, result: CheckResult, node_list: list[Node], manifests: list[dict]) -> Headroom:
        """The probe's copies in a check's result: how many, where, and what stopped the next."""
        key, bound, spec = self.key, self.bound, self.spec
        by_node = {node: n for k, node, n in result.placements if k == key}
        placed = sum(by_node.values())
        mine = [u for u in result.unschedulable if u.workload == key]
        refused = next((u for u in mine if u.reason == "rejected"), None)
        if refused is not None and (refused.refused_by == "Pod" or refused.refused_by.startswith("PriorityClass")):
            raise ProbeError(f"the probe is not a valid pod: {refused.message}")
        # a quota or limit range lets `admitted` copies in (the API server refuses the next): the scheduler
        # sees only those, and what stops the count is the first copy it cannot place, else the refusal
        asked = bound - (refused.pending if refused is not None else 0)
        per_run = sorted(asked - p for p in result.pending_by_run.get(key, ())) or [placed]
        stuck = next((u for u in mine if u.reason != "rejected"), refused)
        middle = per_run[len(per_run) // 2] if len(per_run) % 2 else (per_run[len(per_run) // 2 - 1]
                                                                        + per_run[len(per_run) // 2]) // 2
        named = {n.name: n for n in node_list}
        devices = _device_kinds(result.device_uses, key, manifests) if spec.get("resourceClaims") else {}
        products: Counter = Counter()
        zones: Counter = Counter()
        for node, n in by_node.items():
            labels = named[node].labels if node in named else {}
            products[devices.get(node) or _product(labels, spec)] += n
            zones[labels.get(ZONE_LABEL, "(no zone)")] += n
        victims = next((p.victims for p in result.preemptions if p.workload == key), ())
        return Headroom(key, middle, (min(per_run), max(per_run)), dict(sorted(by_node.items())),
                        dict(sorted(products.items())), dict(sorted(zones.items())),
                        stuck.message if stuck is not None else "", bound, self.level, victims)


def _product(labels: dict[str, str], spec: dict) -> str:
    """The GPU product (or MIG profile) a probe pod got on a node, from the node's GFD labels."""
    mig = sorted(r for r in pod_requests(spec) if r.startswith("nvidia.com/mig-"))
    product = labels.get("nvidia.com/gpu.product", "")
    if mig:
        return f"{product.split('-MIG-')[0] or 'GPU'} {mig[0].removeprefix('nvidia.com/mig-')}"
    return product or "(no GPU product label)"


def _missing_claim(namespace: str, spec: dict, manifests: list[dict]) -> str | None:
    """`NAME names ResourceClaimTemplate NS/T` for the first pod claim whose template or claim is in no input:
    the probe's copies would wait for it forever, which says nothing about the room left."""
    claims = spec.get("resourceClaims") or ()
    if not claims:
        return None
    objects = _dra(manifests)
    for pc in claims:
        template, named = pc.get("resourceClaimTemplateName"), pc.get("resourceClaimName")
        if template is not None and (namespace, template) not in objects.templates:
            return f"{pc.get('name')} names ResourceClaimTemplate {namespace}/{template}"
        if template is None and named is not None and (namespace, named) not in objects.claims:
            return f"{pc.get('name')} names ResourceClaim {namespace}/{named}"
    return None


def _device_kinds(uses: list[tuple[str, str, str]], key: str, manifests: list[dict]) -> dict[str, str]:
    """node -> what the devices allocated to the probe's claims there are (GPU product or MIG profile)."""
    from gpufleet.scheduling.dra_offer import kind_of

    objects = _dra(manifests)
    devices = {f"{spec.get('driver')}/{(spec.get('pool') or {}).get('name')}/{d.get('name')}": (spec, d)
               for spec in objects.slices for d in spec.get("devices") or ()}
    kinds: dict[str, dict[str, None]] = {}
    for workload, node, label in uses:
        if workload == key and label in devices:
            spec, d = devices[label]
            kind = kind_of(Device(spec.get("driver") or "", "", "", d.get("attributes") or {}, {}))
            kinds.setdefault(node, {})[kind[1] if kind else "(device without a product)"] = None
    return {node: " + ".join(found) for node, found in kinds.items()}


def _dra(manifests: list[dict]) -> DraObjects:
    return dra_objects(o for o in flatten(manifests) if o.get("kind") in DRA_KINDS)


# --- standard shapes at a glance (report, `headroom --shapes`) --------------------------------------------------

GPU_COUNTS = (1, 2, 4, 8)
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
#: The pod claim (and the template's request) of a DRA shape's probe.
CLAIM = "devices"


@dataclass(frozen=True)
class Shape:
    """A probe the fleet's pods would use: GPUs of one product (or one MIG profile), with or without the GPU
    taint's toleration. On DRA nodes, a claim of `count` devices of one DeviceClass (of one product or MIG
    profile, by a request selector) instead of an extended resource."""

    label: str
    product: str
    resource: str
    count: int
    tolerates: bool
    device_class: str = ""
    selector: str | None = None
    nodes: frozenset[str] = frozenset()
    """A claim shape's nodes: those that reach its devices."""

    def pod(self, template: str = PROBE_NAME) -> dict:
        """The probe's pod; a claim shape's claims its ResourceClaimTemplate `template` (`objects`)."""
        container: dict = {"name": "probe", "image": "registry.k8s.io/pause:3.10"}
        spec: dict = {"containers": [container]}
        if self.device_class:
            container["resources"] = {"claims": [{"name": CLAIM}]}
            spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
        else:
            container["resources"] = {"limits": {self.resource: self.count}}
        if self.resource == "nvidia.com/gpu":
            spec["nodeSelector"] = {"nvidia.com/gpu.product": self.product}
        if self.tolerates:
            spec["tolerations"] = [GPU_TOLERATION]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": "default"},
                "spec": spec}

    def objects(self, template: str = PROBE_NAME) -> list[dict]:
        """What the probe needs beside its pod: a claim shape's ResourceClaimTemplate, named `template`."""
        if not self.device_class:
            return []
        exactly: dict = {"deviceClassName": self.device_class, "count": self.count}
        if self.selector:
            exactly["selectors"] = [{"cel": {"expression": self.selector}}]
        return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                 "metadata": {"name": template, "namespace": "default"},
                 "spec": {"spec": {"devices": {"requests": [{"name": CLAIM, "exactly": exactly}]}}}}]


def standard_shapes(nodes: Sequence[Node], dra: DraObjects | None = None) -> list[Shape]:
    """1, 2, 4 and 8 `nvidia.com/gpu` per product label that has nodes with that many (whole GPUs, a MIG
    `single` strategy's slices, shared replicas), and one of each MIG profile the nodes advertise (`mixed`);
    on DRA, 1, 2, 4 and 8 devices of each DeviceClass per GPU product or MIG profile, up to the most one node
    reaches; each with and without the toleration of the `nvidia.com/gpu` taint."""
    most: dict[str, int] = {}
    profiles: set[str] = set()
    for node in nodes:
        product = node.labels.get("nvidia.com/gpu.product", "")
        gpus = node.allocatable.get("nvidia.com/gpu", 0)
        if product and gpus > 0:  # MIG `single` (…-MIG-1g.5gb) and shared (…-SHARED) products included
            most[product] = max(most.get(product, 0), gpus)
        profiles |= {r for r, n in node.allocatable.items() if r.startswith("nvidia.com/mig-") and n > 0}
    shapes = []
    for product in sorted(most):
        for count in (c for c in GPU_COUNTS if c <= most[product]):
            for tolerates in (True, False):
                shapes.append(Shape(f"{count}x {product}", product, "nvidia.com/gpu", count, tolerates))
    for resource in sorted(profiles):
        for tolerates in (True, False):
            shapes.append(Shape(resource.removeprefix("nvidia.com/"), "", resource, 1, tolerates))
    if dra and dra.slices:
        from gpufleet.scheduling.dra_offer import offered

        for kind in offered(dra, nodes):
            classes = ", ".join(kind.class_names)
            what = f"{kind.value} ({classes})" if kind.value else classes
            for count in (c for c in GPU_COUNTS if c <= kind.most):
                for tolerates in (True, False):
                    shapes.append(Shape(f"{count}x {what}", kind.value or "", "", count, tolerates,
                                        kind.class_name, kind.selector(), kind.nodes))
    return shapes


def headroom_table(nodes: Sequence[Node], pods: Sequence[BoundPod], manifests: list[dict], *,
                   extended_resource_toleration: bool = False, tie_runs: int = 1,
                   default_spreading: Spreading = "direct") -> list[tuple[Shape, Headroom]]:
    """Headroom of every standard shape after the manifests are placed: at a glance, one seeded run
    (`headroom --probe` gives the median over HEADROOM_RUNS). The manifests are placed once; each shape's probe
    then comes alone on a copy of what they left, as if it were the only one (check_workloads' `apart`),
    unless a ResourceQuota in the probes' namespace would count them all together: then one check per shape.
    `default_spreading`: as check_workloads, for `manifests`."""
    from gpufleet.scheduling.engine import _nodes, _pods, check_workloads

    node_list, pod_list = _nodes(nodes), _pods(pods)
    rows: list[tuple[Shape, Headroom | None]] = []
    for shape in standard_shapes(node_list, _dra(manifests)):
        if not shape.tolerates and not extended_resource_toleration and _all_tainted(node_list, shape):
            # every node that could hold it repels it: the scheduler places none (its Filter, not a guess)
            rows.append((shape, Headroom(f"probe {shape.label}", 0, (0, 0), stopped_by="every node with this "
                                         "GPU has the nvidia.com/gpu taint the probe does not tolerate")))
        else:
            rows.append((shape, None))
    asked = {k: shape for k, (shape, answer) in enumerate(rows) if answer is None}
    if any(o.get("kind") == "ResourceQuota" and _namespace(o) == "default" for o in flatten(manifests)):
        for k, shape in asked.items():
            rows[k] = (shape, headroom(node_list, pod_list, [*manifests, *shape.objects()], shape.pod(),
                                       extended_resource_toleration=extended_resource_toleration, tie_runs=tie_runs,
                                       default_spreading=default_spreading))
    elif asked:
        probes: dict[int, tuple[_Probe, list[dict]]] = {}
        for k, shape in asked.items():
            name = f"{PROBE_NAME}-{k}"
            objects = shape.objects(name)
            probes[k] = (_Probe.of(node_list, pod_list, [*manifests, *objects], shape.pod(name), name=name), objects)
        keys = frozenset(probe.key for probe, _ in probes.values())
        extra = [o for _, objects in probes.values() for o in objects]
        result = check_workloads(node_list, pod_list,
                                 [*manifests, *extra, *(probe.deployment for probe, _ in probes.values())],
                                 extended_resource_toleration=extended_resource_toleration, tie_runs=tie_runs,
                                 preemption=False, default_spreading=default_spreading, made_directly=keys,
                                 apart=keys)
        for k, (probe, objects) in probes.items():
            answer = probe.answer(result, node_list, [*manifests, *objects])
            name = probe.deployment["metadata"]["name"]
            answer.probe = f"Deployment/default/{PROBE_NAME}"  # as a check of that one probe names it
            answer.stopped_by = answer.stopped_by.replace(name, PROBE_NAME)
            rows[k] = (asked[k], answer)
    return [(shape, answer) for shape, answer in rows if answer is not None]


def _namespace(obj: dict) -> str:
    meta = obj.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) and namespace else "default"


def _all_tainted(nodes: Sequence[Node], shape: Shape) -> bool:
    """Every node offering the shape's resource (of its product) or reaching its devices has a NoSchedule or
    NoExecute taint keyed nvidia.com/gpu: TaintToleration filters them all out for a probe without the
    toleration."""
    if shape.device_class:
        offering = [n for n in nodes if n.name in shape.nodes]
    else:
        offering = [n for n in nodes if n.allocatable.get(shape.resource, 0) > 0
                    and (not shape.product or n.labels.get("nvidia.com/gpu.product") == shape.product)]
    return bool(offering) and all(any(t.key == "nvidia.com/gpu" and t.effect in ("NoSchedule", "NoExecute")
                                      for t in n.taints) for n in offering)
