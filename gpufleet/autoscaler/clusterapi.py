"""Node groups from Cluster API objects, as cluster-autoscaler 1.34's clusterapi provider reads them
(cloudprovider/clusterapi, cluster-autoscaler-1.34.5).

- Which objects: MachineDeployments, and MachineSets that no MachineDeployment owns (an owned one scales
  with its MachineDeployment). MachinePools are not read.
- Sizes: the annotations `cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size` and `-max-size`, whole
  numbers; a missing min-size is 0. An object whose max-size is missing or 0 is no node group (the autoscaler
  leaves it alone). A value that is not a whole number, a negative one, or a max below the min makes the
  autoscaler refuse every node group; here it exits 2, naming the object and the annotation.
- Target size: `spec.replicas`.
- Nodes: the Machines the object's `spec.selector` matches in its namespace and cluster, each the node its
  `status.nodeRef` names. Without Machines (a file of MachineDeployments alone), the nodes labelled
  `cluster.x-k8s.io/deployment-name` (`set-name` for a MachineSet) with the object's name; a group with
  replicas and no such node then exits 2, asking for the Machines.
- Template: from a node of the group while it has one (nodegroups.py); with none, from the object's
  `capacity.cluster-autoscaler.kubernetes.io/*` annotations (scale from zero): cpu, memory, ephemeral-disk
  and maxPods (110 unless given) as capacity and allocatable, `gpu-count` of the resource `gpu-type` names
  (e.g. `nvidia.com/gpu`: the autoscaler takes the annotation's value as the resource name), `labels`
  (`k=v,...`) and `taints` (`k=v:Effect,...`); the node labels of `spec.template.spec.metadata.labels` in the
  domains Cluster API syncs to nodes (the path the 1.34 provider reads, which Cluster API's own objects leave
  empty); `kubernetes.io/arch: amd64` and `kubernetes.io/os: linux`. Such a template runs a kube-proxy pod of
  100m cpu, held here as that much less allocatable cpu and one pod. Without both cpu and memory the group
  cannot scale from zero: the autoscaler drops it while it has 0 replicas, and cannot template it while none
  of its nodes is registered. Here it stays a group that never grows, `cannot_scale` saying why and what to
  set, so that a pod's verdict names it.
- Not read: capacity from the infrastructure machine template's status (the annotations override it), the
  `dra-driver` annotation's devices (DRA claims are not checked on templates), and `CAPI_GROUP`.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.autoscaler.group import NodeGroup, sanitized
from gpufleet.capacity.model import Node, Taint
from gpufleet.capacity.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, to_units
from gpufleet.errors import InputError, one_line
from gpufleet.k8s_names import label_value_errors, qualified_name_errors
from gpufleet.labels import selector_matches

API_GROUP = "cluster.x-k8s.io"
MIN_SIZE = f"{API_GROUP}/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = f"{API_GROUP}/cluster-api-autoscaler-node-group-max-size"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
GPU_COUNT, GPU_TYPE = CAPACITY + "gpu-count", CAPACITY + "gpu-type"
MAX_PODS, LABELS, TAINTS = CAPACITY + "maxPods", CAPACITY + "labels", CAPACITY + "taints"
#: Annotation -> the resource it gives a node added from zero.
QUANTITIES = {CAPACITY + "cpu": CPU, CAPACITY + "memory": MEMORY, CAPACITY + "ephemeral-disk": EPHEMERAL_STORAGE}
DEPLOYMENT, SET, MACHINE = "MachineDeployment", "MachineSet", "Machine"
KINDS = (DEPLOYMENT, SET, MACHINE)
#: The label Cluster API puts on a MachineDeployment's (MachineSet's) Machines, naming it.
NAME_LABELS = {DEPLOYMENT: f"{API_GROUP}/deployment-name", SET: f"{API_GROUP}/set-name"}
DEFAULT_MAX_PODS = 110
#: The kube-proxy pod the provider puts on a template made from annotations (cloudprovider BuildKubeProxy).
KUBE_PROXY_MILLICPU = 100
#: Node label domains Cluster API syncs from a Machine to its node.
_SYNCED = ("node-role.kubernetes.io", "node-restriction.kubernetes.io", "node.cluster.x-k8s.io")
_WHOLE = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63 - 1
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: Stable labels the autoscaler copies to their deprecated names on a template (labels.UpdateDeprecatedLabels).
_DEPRECATED = {"node.kubernetes.io/instance-type": "beta.kubernetes.io/instance-type",
               "topology.kubernetes.io/region": "failure-domain.beta.kubernetes.io/region",
               "topology.kubernetes.io/zone": "failure-domain.beta.kubernetes.io/zone"}
WHAT = "the output of `kubectl get machinedeployments,machinesets,machines -A -o json`"


def is_cluster_api(obj: Any) -> bool:
    """Whether an object is a Cluster API MachineDeployment, MachineSet or Machine."""
    return (isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str)
            and obj["apiVersion"].split("/")[0] == API_GROUP and obj.get("kind") in KINDS)


def _is_object(value: Any) -> bool:
    return isinstance(value, dict) and "kind" in value and "apiVersion" in value


def cluster_api_items(docs: list, where: str) -> list[dict] | None:
    """The Cluster API objects of a `--node-groups` file's documents (each an object, a kubectl List, or a YAML
    list of objects); None when the file holds none of them (a list of node groups). InputError when it holds
    them beside anything else, naming each other item."""
    items: list[tuple[str, Any]] = []
    for n, doc in enumerate(docs):
        at = f"{where}: document {n + 1}" if len(docs) > 1 else where
        if isinstance(doc, dict) and isinstance(doc.get("items"), list) and not is_cluster_api(doc):
            items += [(f"{at}: items[{i}]", item) for i, item in enumerate(doc["items"])]
        elif isinstance(doc, list):
            items += [(f"{at}: [{i}]", item) for i, item in enumerate(doc)]
        else:
            items.append((at, doc))
    if not any(is_cluster_api(item) for _, item in items):
        if not items and any(isinstance(doc, dict) and "items" in doc for doc in docs):
            raise InputError(f"{where}: no node groups: its List has no items (is it {WHAT} of a cluster without "
                             "MachineDeployments?)")
        if len(docs) > 1 or any(_is_object(item) for _, item in items):
            raise InputError(f"{where}: expected a list of node groups or {WHAT} (MachineDeployment, MachineSet "
                             f"and Machine objects of {API_GROUP})")
        return None
    errors = []
    for at, item in items:
        if not is_cluster_api(item):
            kind = item.get("kind") if isinstance(item, dict) else None
            got = (f"kind {kind!r}" if kind is not None else type(item).__name__ if not isinstance(item, dict)
                   else "a node group entry (a file holds node groups or Cluster API objects, not both)")
            errors.append(f"{at}: expected a {', '.join(KINDS)} of {API_GROUP} (this file is read as {WHAT}), "
                          f"got {got}")
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    return [item for _, item in items]


class _Object:
    """One Cluster API object's parts, with `errors` for what is malformed."""

    def __init__(self, obj: dict, where: str, errors: list[str]):
        self.obj, self.kind = obj, obj["kind"]
        meta = obj.get("metadata")
        self.meta = meta if isinstance(meta, dict) else {}
        name, ns = self.meta.get("name"), self.meta.get("namespace", "default")
        self.ok = isinstance(name, str) and bool(name) and isinstance(ns, str)
        self.name = name if isinstance(name, str) and self.ok else "?"
        self.namespace = ns if isinstance(ns, str) and self.ok else "?"
        self.label = f"{where}: {self.kind} {self.namespace}/{self.name}"
        if not self.ok:
            errors.append(f"{where}: {self.kind}: metadata.name and metadata.namespace must be strings "
                          f"(got {name!r}, {ns!r})")
        spec = obj.get("spec")
        self.spec = spec if isinstance(spec, dict) else {}
        self.annotations = self._strings("annotations", errors)
        self.labels = self._strings("labels", errors)

    def _strings(self, part: str, errors: list[str]) -> dict[str, str]:
        value = self.meta.get(part)
        if value is None:
            return {}
        if not isinstance(value, dict):
            errors.append(f"{self.label}: metadata.{part}: must be a mapping of strings, not {type(value).__name__}")
            return {}
        bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
        for k in bad:
            errors.append(f"{self.label}: metadata.{part}[{k}]: {value[k]!r} is not a string (the API server "
                          "holds every value as a string: quote it)")
        return {k: v for k, v in value.items() if k not in bad}

    @property
    def cluster(self) -> str:
        name = self.spec.get("clusterName")
        return name if isinstance(name, str) else self.labels.get(f"{API_GROUP}/cluster-name", "")

    def owned_by_deployment(self) -> bool:
        refs = self.meta.get("ownerReferences")
        return isinstance(refs, list) and any(isinstance(r, dict) and r.get("kind") == DEPLOYMENT and r.get("name")
                                              for r in refs)


def _whole(obj: _Object, key: str, errors: list[str], default: int) -> int | None:
    """A whole-number annotation as Go's strconv reads it; `default` when absent (or empty, for capacity)."""
    value = obj.annotations.get(key)
    if value is None or (value == "" and key.startswith(CAPACITY)):
        return default
    if not _WHOLE.fullmatch(value) or abs(int(value)) > _INT64:
        errors.append(f"{obj.label}: metadata.annotations[{key}]: {value!r} is not a whole number (e.g. \"3\")")
        return None
    if int(value) < 0:
        errors.append(f"{obj.label}: metadata.annotations[{key}]: {value} is negative")
        return None
    return int(value)


def _sizes(obj: _Object, errors: list[str]) -> tuple[int, int] | None:
    """(min, max), or None for an object that is no node group or has a bad size (then in `errors`)."""
    before = len(errors)
    low, high = _whole(obj, MIN_SIZE, errors, 0), _whole(obj, MAX_SIZE, errors, 0)
    if low is None or high is None:
        return None
    if high < low:
        said = f"{high} is below" if MAX_SIZE in obj.annotations else "missing, which the autoscaler reads as 0, below"
        errors.append(f"{obj.label}: metadata.annotations[{MAX_SIZE}]: {said} the min-size {low} (the autoscaler "
                      "then refuses every node group)")
    if len(errors) > before or high == 0:
        return None
    return low, high


def _replicas(obj: _Object, errors: list[str]) -> int | None:
    value = obj.spec.get("replicas")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        got = "missing" if value is None else f"{value!r} is not a count of machines (0 or more)"
        errors.append(f"{obj.label}: spec.replicas: {got} (the autoscaler reads the node group's target size "
                      "there)")
        return None
    return value


def _capacity(obj: _Object, errors: list[str]) -> tuple[dict[str, int], str | None]:
    """The resources a node added from zero advertises, and the GPU resource it names (None: none)."""
    found: dict[str, int] = {}
    for key, resource in QUANTITIES.items():
        value = obj.annotations.get(key)
        if not value:
            continue
        try:
            units = to_units(resource, value)
        except (InputError, ArithmeticError, ValueError):
            units = -1
        if not 0 <= units <= _INT64:
            errors.append(f"{obj.label}: metadata.annotations[{key}]: {value!r} is not a quantity of 0 or more "
                          "(e.g. 32, 500m, 256Gi)")
        elif units:
            found[resource] = units
    gpus = _whole(obj, GPU_COUNT, errors, 0)
    kind = obj.annotations.get(GPU_TYPE, "")
    gpu = None
    if gpus and kind:
        if qualified_name_errors(kind):
            errors.append(f"{obj.label}: metadata.annotations[{GPU_TYPE}]: {kind!r} is not a resource name; the "
                          "autoscaler advertises gpu-count of the resource this names (e.g. nvidia.com/gpu)")
        else:
            found[kind], gpu = gpus, kind
    pods = _whole(obj, MAX_PODS, errors, 0)
    found[PODS] = pods or DEFAULT_MAX_PODS
    return found, gpu


def _taints(obj: _Object, errors: list[str]) -> tuple[Taint, ...]:
    text = obj.annotations.get(TAINTS)
    if text is None:
        return ()
    out = []
    for entry in filter(None, text.split(",")):
        key_value, _, effect = entry.partition(":")
        key, _, value = key_value.partition("=")
        problems = (qualified_name_errors(key) + (label_value_errors(value) if value else [])
                    + (["the value holds a '='"] if "=" in value else [])
                    + ([f"effect {effect!r} is not one of {', '.join(_EFFECTS)}"] if effect not in _EFFECTS else []))
        if problems:
            errors.append(f"{obj.label}: metadata.annotations[{TAINTS}]: {entry!r} is not a taint "
                          f"(key[=value]:effect; {problems[0]}); the autoscaler drops it from the template")
        else:
            out.append(Taint(key, value, effect))
    return tuple(out)


def _labels(obj: _Object, errors: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    template = obj.spec.get("template")
    inner = (template.get("spec") if isinstance(template, dict) else None) or {}
    meta = (inner.get("metadata") if isinstance(inner, dict) else None) or {}
    synced = meta.get("labels") if isinstance(meta, dict) else None
    for key, value in (synced.items() if isinstance(synced, dict) else ()):
        domain = str(key).split("/")[0]
        if isinstance(value, str) and any(domain == d or domain.endswith("." + d) for d in _SYNCED):
            out[str(key)] = value
    for entry in (obj.annotations.get(LABELS) or "").split(","):
        key, sep, value = entry.partition("=")
        if not sep:
            if entry:
                errors.append(f"{obj.label}: metadata.annotations[{LABELS}]: {entry!r} is not key=value; the "
                              "autoscaler leaves it out of the template")
            continue
        out[key] = value
    return out


def _template(obj: _Object, group: str, errors: list[str]) -> Node | None:
    """The node a scale-up from zero adds, as the provider templates it; None without cpu and memory."""
    capacity, gpu = _capacity(obj, errors)
    labels = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", **_labels(obj, errors)}
    for stable, old in _DEPRECATED.items():
        if stable in labels:
            labels[old] = labels[stable]
    taints = _taints(obj, errors)
    if not (capacity.get(CPU) and capacity.get(MEMORY)):
        return None
    allocatable = {**capacity, CPU: max(capacity[CPU] - KUBE_PROXY_MILLICPU, 0), PODS: max(capacity[PODS] - 1, 0)}
    node = Node(name=group, labels=labels, taints=taints, allocatable=allocatable, capacity=capacity)
    return sanitized(node, group)


_GPU_ANNOTATIONS = f"{GPU_COUNT} (GPUs per node) and {GPU_TYPE}: nvidia.com/gpu"


def gpu_fix(obj: _Object) -> str:
    """What to set so that a node added from zero holds GPUs (for the reason of a group whose template has none)."""
    kind = obj.annotations.get(GPU_TYPE)
    said = (f" (gpu-type is {kind!r}: the autoscaler gives the node gpu-count of a resource by that name)"
            if kind and kind != "nvidia.com/gpu" else "")
    return f"set {_GPU_ANNOTATIONS} on {obj.kind} {obj.namespace}/{obj.name}{said}"


def cannot_scale(obj: _Object) -> str:
    """Why a group with no node and no cpu and memory annotations never grows, and the fix."""
    return (f"the autoscaler cannot add a node to it from zero ({obj.kind} {obj.namespace}/{obj.name} has no "
            f"{CAPACITY}cpu and memory annotations and no registered node to copy; with 0 replicas it is no node "
            f"group at all): set those two on it, and for GPUs {_GPU_ANNOTATIONS}")


def _selector_ok(selector: Any) -> bool:
    if not isinstance(selector, dict):
        return False
    labels, expressions = selector.get("matchLabels") or {}, selector.get("matchExpressions") or []
    return (isinstance(labels, dict) and isinstance(expressions, list)
            and all(isinstance(e, dict) and isinstance(e.get("values") or [], list) for e in expressions))


def _members(obj: _Object, machines: list[_Object] | None, nodes: dict[str, Node]) -> list[str]:
    """The fleet's nodes that belong to the object's group (module docstring)."""
    if machines is None:
        return [n.name for n in nodes.values() if n.labels.get(NAME_LABELS[obj.kind]) == obj.name]
    selector = obj.spec.get("selector")
    out = []
    for m in machines:
        if m.namespace != obj.namespace or (obj.cluster and m.cluster != obj.cluster):
            continue
        if not selector_matches(selector, m.labels):
            continue
        status = m.obj.get("status")
        ref = status.get("nodeRef") if isinstance(status, dict) else None
        name = ref.get("name") if isinstance(ref, dict) else None
        if isinstance(name, str) and name in nodes and name not in out:
            out.append(name)
    return out


def node_groups_from_cluster_api(objects: list[dict], nodes: list[Node], where: str,
                                 machines_listed: bool | None = None) -> list[NodeGroup]:
    """The node groups the autoscaler makes of these Cluster API objects, with the fleet's nodes that belong to
    each; InputError naming every malformed object at once. `machines_listed`: whether the Machines were read
    (default: whether any is among the objects); without them, a group's nodes are found by label."""
    by_name = {n.name: n for n in nodes}
    errors: list[str] = []
    parsed = [_Object(o, where, errors) for o in objects if is_cluster_api(o)]
    known = machines_listed if machines_listed is not None else any(p.kind == MACHINE for p in parsed)
    machines = [p for p in parsed if p.kind == MACHINE and p.ok] if known else None
    groups: list[NodeGroup] = []
    # The provider lists MachineSets before MachineDeployments.
    for obj in sorted((p for p in parsed if p.ok and p.kind != MACHINE), key=lambda p: p.kind != SET):
        if obj.kind == SET and obj.owned_by_deployment():
            continue
        sizes = _sizes(obj, errors)
        replicas = _replicas(obj, errors) if sizes is not None else None
        if sizes is None or replicas is None:
            continue
        name = f"{obj.kind}/{obj.namespace}/{obj.name}"
        if machines is not None and not _selector_ok(obj.spec.get("selector")):
            errors.append(f"{obj.label}: spec.selector: {obj.spec.get('selector')!r} is not a label selector "
                          "(matchLabels, matchExpressions): the autoscaler finds a group's Machines with it")
            continue
        members = _members(obj, machines, by_name)
        template = _template(obj, name, errors)
        if replicas and not members and machines is None:
            errors.append(f"{obj.label}: spec.replicas is {replicas} but no node of the fleet is known to be one of "
                          f"its machines: give its Machines too ({WHAT}), whose status.nodeRef names each node")
            continue
        if members:
            template = sanitized(by_name[members[0]], name)
        reason = "" if template is not None else cannot_scale(obj)  # no template: no nodes on their way either
        groups.append(NodeGroup(name, sizes[0], sizes[1], template or Node(name=name), members,
                                max(replicas, len(members)) if template is not None else len(members), where,
                                gpu_fix=gpu_fix(obj), cannot_scale=reason))
    if errors:
        raise InputError("\n".join(one_line(e) for e in errors))
    return groups
