"""Where gpu-capacity-fit gets nodes from, and the call into the engine `gpufleet check` uses.

Sources (policy config `capacitySource`): `stack` (default: the stack's node pools as planned nodes,
`gpufleet.capacity.capacity_from_stack`, its autoscaled pools at the nodes they have now and as node groups the
autoscaler may grow, `stack_groups`), `nodesFile` (`kubectl get nodes -o json` or a capacity.json
from `gpufleet discover`, with optional `podsFile`), `kubeconfig` (a live cluster, nodes and running pods).
"""

from __future__ import annotations

from pathlib import Path

from gpufleet.capacity.files import CAPACITY_SOURCES
from gpufleet.capacity.model import Capacity
from gpufleet.config.stack import StackConfig
from gpufleet.scheduling import check_workloads
from gpufleet.scheduling.result import CheckResult
from policies._common import PACK_DIR, StackRef, load_stack_config, stack_ref

SOURCES = tuple(CAPACITY_SOURCES)

#: Config keys of every policy that checks against capacity (gpu-capacity-fit, model-fits-gpu).
CAPACITY_PROPERTIES: dict = {
    "capacitySource": {"type": "string", "enum": list(SOURCES), "description": "stack (the stack's node pools, "
                       "planned), nodesFile or kubeconfig. Default: nodesFile / kubeconfig when set, else stack."},
    "nodesFile": {"type": "string", "description": "kubectl get nodes -o json output or a gpufleet capacity.json "
                  "(relative to the project directory)."},
    "podsFile": {"type": "string", "description": "kubectl get pods -A -o json output: pods already using the nodes."},
    "kubeconfig": {"type": "string", "description": "Discover nodes and running pods from this cluster."},
    "context": {"type": "string", "description": "kubeconfig context."},
    "extendedResourceToleration": {"type": "boolean", "description": "The API server runs the "
                                   "ExtendedResourceToleration admission plugin. Default: the stack's cluster config."},
}
#: Pulumi types of the claim objects a DRA pod's allocation reads (the pods reference them by name).
CLAIM_TYPES = ("kubernetes:resource.k8s.io/v1:ResourceClaim", "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")


class CapacityUnavailable(Exception):
    """The configured capacity source cannot be used (reported as the violation's reason)."""


def extended_resource_toleration(config: dict, cfg) -> bool:
    """The policy config's `extendedResourceToleration`, else the stack's cluster setting."""
    ert = config.get("extendedResourceToleration")
    if ert is None:
        return bool(cfg and cfg.cluster.extended_resource_toleration)
    return bool(ert)


def _path(value: str, ref: StackRef | None) -> Path:
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    return (ref.project_dir if ref else (PACK_DIR / "..").resolve()) / path


def load_capacity(config: dict, cfg, ref: StackRef | None) -> Capacity:
    from gpufleet.errors import GpufleetError

    source = config.get("capacitySource") or ("nodesFile" if config.get("nodesFile") else
                                              "kubeconfig" if config.get("kubeconfig") else "stack")
    try:
        if source == "stack":
            if cfg is None:
                raise CapacityUnavailable("no stack config to plan capacity from (set `stack`, or `nodesFile` / "
                                          "`kubeconfig` in the policy config)")
            from gpufleet.capacity import stack_capacity

            return stack_capacity(cfg)
        if source == "nodesFile":
            from gpufleet.capacity.files import load_capacity as load_files

            pods = config.get("podsFile")
            return load_files(_path(config["nodesFile"], ref), _path(pods, ref) if pods else None)
        if source == "kubeconfig":
            from gpufleet.capacity import capacity_from_cluster
            from gpufleet.discovery.kubernetes import KubeconfigCluster

            return capacity_from_cluster(KubeconfigCluster(_path(config["kubeconfig"], ref), config.get("context")))
    except KeyError as e:
        raise CapacityUnavailable(f"capacitySource {source} needs `{e.args[0]}` in the policy config") from e
    except GpufleetError as e:
        raise CapacityUnavailable(str(e)) from e
    raise CapacityUnavailable(f"unknown capacitySource '{source}'; allowed: {', '.join(SOURCES)}")


def plan_capacity(args, config: dict) -> tuple[Capacity, StackConfig | None]:
    """The capacity a pack run checks against, and the stack config it was planned from (None without one).
    Raises CapacityUnavailable."""
    ref = stack_ref(config, args.resources[0].urn if args.resources else None)
    cfg = load_stack_config(ref)
    return load_capacity(config, cfg, ref), cfg


def manifests_to_check(capacity: Capacity, cfg, claims: list[dict], workloads: list[dict]) -> list[dict]:
    """What the engine checks: on planned capacity of a DRA stack, first the DeviceClasses and ResourceSlices
    the driver will publish (gpufleet.capacity.stack.planned_dra_objects), then the stack's claims and
    claim templates, then its workloads. An engine that does not allocate DRA claims ignores the objects
    that are not pods' owners."""
    planned: list[dict] = []
    if capacity.source == "stack" and cfg is not None:
        from gpufleet.capacity.stack import planned_dra_objects

        planned = planned_dra_objects(cfg)
    return [*planned, *claims, *workloads]


def stack_groups(capacity: Capacity, cfg) -> list:
    """The stack's autoscaled node pools as cluster-autoscaler node groups when the capacity is the stack's
    planned one (gpufleet.autoscaler.stack_groups); [] for discovered capacity or a stack without them."""
    if capacity.source != "stack" or cfg is None:
        return []
    from gpufleet.autoscaler.stack_groups import stack_node_groups

    return stack_node_groups(cfg)


def capacity_words(capacity: Capacity, groups: list) -> str:
    """`the stack capacity (3 node(s))`, with the node groups it may grow to when there are some."""
    words = f"the {capacity.source or 'planned'} capacity ({len(capacity.nodes)} node(s)"
    if groups:
        words += " now; after scale-up of " + ", ".join(f"{g.name} up to {g.max_size}" for g in groups)
    return words + ")"


def check_fit(capacity: Capacity, manifests: list[dict], extended_resource_toleration: bool,
              groups: list | None = None) -> CheckResult:
    """The `gpufleet check` engine on planned/discovered capacity; with node groups, as `check --stack` checks:
    what stays Pending once the autoscaler has grown them (`result.scale_up` holds its verdicts)."""
    objects = [*capacity.admission, *manifests]
    if not groups:
        return check_workloads(capacity.nodes, capacity.pods, objects,
                               extended_resource_toleration=extended_resource_toleration, waiting=capacity.waiting)
    from gpufleet.scheduling.scaleup import ScaleUpOptions, check_with_scale_up

    result, verdicts = check_with_scale_up(capacity.nodes, capacity.pods, objects, groups, ScaleUpOptions(),
                                           extended_resource_toleration=extended_resource_toleration)
    result.scale_up = verdicts
    return result
