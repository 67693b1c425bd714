"""Planned capacity: the nodes a stack declares, with what the device plugin will advertise once it applies.

- Whole GPUs: `nvidia.com/gpu` = GPUs per node.
- MIG, single strategy: `nvidia.com/gpu` = MIG instances per node. Mixed: `nvidia.com/mig-<profile>`
  per profile, plus `nvidia.com/gpu` for GPUs left with MIG off. Strategy none: the GPUs stay whole.
- Sharing (time-slicing or MPS): each shared resource is multiplied by its replicas, and advertised as
  `<name>.shared` with renameByDefault.
- Pool `resources` give cpu, memory, ephemeral-storage and pods; cpu/memory/ephemeral-storage left
  unset are unknown and not checked (`Node.unknown`).
- With `gpuAllocation: dra` no device plugin runs: the nodes advertise no GPU extended resource, and their
  GPUs are the devices of the planned ResourceSlices (`planned_resource_slices`).
"""

from __future__ import annotations

from gpufleet.capacity.model import Capacity, Node, Taint
from gpufleet.capacity.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, to_units
from gpufleet.config.node_pools import NodePool
from gpufleet.config.stack import StackConfig
from gpufleet.nvidia import dra
from gpufleet.nvidia.mig_profiles import resource_name
from gpufleet.nvidia.products import find_product
from gpufleet.nvidia.sharing import GPU, shared_name


def _whole_gpus_left(cfg: StackConfig, pool: NodePool) -> int:
    """GPUs of a node that no MIG-enabled geometry entry covers."""
    covered = 0
    for group in cfg.geometry(pool.mig_geometry) or []:
        if group.mig_enabled:
            covered += pool.gpu.count if group.devices == "all" else len(group.devices)
    return max(pool.gpu.count - covered, 0)


def planned_devices(cfg: StackConfig, pool: NodePool) -> dict[str, int]:
    """Extended resources one node of the pool will advertise (before sharing)."""
    mig = {p: n for p, n in cfg.mig_profiles_of_pool(pool).items() if n}
    strategy = cfg.device_plugin.mig_strategy
    if not mig or strategy == "none":
        return {GPU: pool.gpu.count}
    if strategy == "single":
        return {GPU: sum(mig.values())}
    out = {resource_name(p): n for p, n in mig.items()}
    whole = _whole_gpus_left(cfg, pool)
    if whole:
        out[GPU] = whole
    return out


def planned_resources(cfg: StackConfig, pool: NodePool) -> dict[str, int]:
    """Devices after sharing: replicated resources multiplied, and renamed `.shared` where asked."""
    devices = planned_devices(cfg, pool)
    sharing = cfg.sharing_of_pool(pool)
    if sharing is None:
        return devices
    out = dict(devices)
    for res in sharing.shared_resources():
        if res.name in devices:
            count = out.pop(res.name) * res.replicas
            out[shared_name(res.name, sharing.rename_by_default)] = count
    return out


def _labels(cfg: StackConfig, pool: NodePool, name: str) -> dict[str, str]:
    product = find_product(pool.gpu.product)
    label = product.label if product else pool.gpu.product
    sharing = cfg.sharing_of_pool(pool)
    mig = cfg.mig_profiles_of_pool(pool)
    single = bool(mig) and cfg.device_plugin.mig_strategy == "single"
    count = sum(mig.values()) if single else pool.gpu.count
    if single:
        label += "-MIG-" + next(iter(mig))
    if sharing is not None and not sharing.rename_by_default:
        label += "-SHARED"
    labels = {**pool.labels, **pool.node_selector, "kubernetes.io/hostname": name,
              "nvidia.com/gpu.product": label, "nvidia.com/gpu.count": str(count),
              "nvidia.com/gpu.replicas": str(sharing.replicas if sharing else 1),
              "nvidia.com/gpu.sharing-strategy": {"mps": "mps", "timeSlicing": "time-slicing"}[sharing.strategy]
              if sharing else "none",
              "nvidia.com/mig.strategy": cfg.device_plugin.mig_strategy}
    if product and not single:
        labels["nvidia.com/gpu.memory"] = str(product.memory_mib)
    return labels


def _node_resources(pool: NodePool) -> tuple[dict[str, int], frozenset[str]]:
    res = pool.resources
    out, unknown = {PODS: res.pods}, set()
    for name, value in ((CPU, res.cpu), (MEMORY, res.memory), (EPHEMERAL_STORAGE, res.ephemeral_storage)):
        if value is None:
            unknown.add(name)
        else:
            out[name] = to_units(name, value)
    return out, frozenset(unknown)


def advertised_resources(cfg: StackConfig, pool: NodePool) -> dict[str, int]:
    """Extended resources one node of the pool advertises once the stack applies: none in a DRA stack (no
    device plugin runs; its GPUs are devices in the DRA driver's ResourceSlices), else `planned_resources`."""
    return {} if cfg.uses_dra() else planned_resources(cfg, pool)


def node_names(pool: NodePool) -> list[str]:
    """Listed node names, or `<pool>-0 .. <pool>-<count-1>` for planned pools (an autoscaled pool's nodes now)."""
    return list(pool.nodes) or [f"{pool.name}-{i}" for i in range(pool.node_count())]


def planned_node(cfg: StackConfig, pool: NodePool, name: str) -> Node:
    """One node of the pool, named `name`, with the labels, taints and allocatable it will have once this stack
    applies (also what a node the autoscaler adds to an autoscaled pool looks like)."""
    base, unknown = _node_resources(pool)
    allocatable = {**base, **advertised_resources(cfg, pool)}
    taints = tuple(Taint(t.key, t.value, t.effect) for t in pool.taints)
    return Node(name=name, labels=_labels(cfg, pool, name), taints=taints, allocatable=dict(allocatable),
                capacity=dict(allocatable), unknown=unknown)


def capacity_from_stack(cfg: StackConfig) -> list[Node]:
    """The stack's node pools as nodes, with the capacity they will have once this stack applies (an autoscaled
    pool with the nodes it has now; gpufleet.autoscaler.stack_groups makes it a node group)."""
    return [planned_node(cfg, pool, name) for pool in cfg.node_pools for name in node_names(pool)]


def stack_capacity(cfg: StackConfig) -> Capacity:
    return Capacity("stack", capacity_from_stack(cfg))


def _gpu_device(cfg: StackConfig, product, node: str, index: int) -> dict:
    per_root = dra.gpus_per_pcie_root(product.max_gpus_per_node)
    major, minor = product.compute_capability
    attributes = {
        "type": {"string": "gpu"},
        "uuid": {"string": dra.fake_uuid(node, index)},
        "productName": {"string": dra.product_name(product.label)},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": dra.architecture(product.family)},
        "cudaComputeCapability": {"version": f"{major}.{minor}.0"},
        "driverVersion": {"version": dra.semver(cfg.operator.driver.version)},
        dra.PCIE_ROOT_ATTRIBUTE: {"string": f"pci0000:{0x10 * (1 + index // per_root):02x}"},
    }
    return {"name": f"gpu-{index}", "attributes": attributes,
            "capacity": {"memory": {"value": f"{product.memory_mib}Mi"}}}


def planned_resource_slices(cfg: StackConfig) -> list[dict]:
    """The ResourceSlices NVIDIA's DRA driver will publish for the stack's node pools (gpuAllocation dra):
    one pool per node, named after it, in one node-local slice of whole GPUs `gpu-<index>` with the
    driver's attributes (deterministic stand-in UUIDs) and their memory. Pools of unknown products publish
    nothing here. No MIG devices: a DRA stack has no MIG geometry (docs/dra.md)."""
    if not cfg.uses_dra():
        return []
    slices = []
    for pool in cfg.node_pools:
        product = find_product(pool.gpu.product)
        if product is None:
            continue
        for node in node_names(pool):
            slices.append({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-{dra.GPU_DRIVER}"},
                "spec": {"driver": dra.GPU_DRIVER, "nodeName": node,
                         "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                         "devices": [_gpu_device(cfg, product, node, i) for i in range(pool.gpu.count)]}})
    return slices


def planned_dra_objects(cfg: StackConfig) -> list[dict]:
    """What the DRA driver will serve once the stack applies: its DeviceClasses (the driver chart's, or
    gpu-operator's copies without `extendedResourceName`) and the planned ResourceSlices ([] unless
    gpuAllocation is dra)."""
    if not cfg.uses_dra():
        return []
    classes = dra.device_class_manifests(compute_domains=cfg.dra_driver.compute_domains,
                                         extended_resource=cfg.mode != "operator")
    return [*classes, *planned_resource_slices(cfg)]
