"""GPU memory budgets: a check the scheduler cannot make (it counts devices, not bytes).

A workload that declares the GPU memory it expects (stack config `gpu.memoryMiB`; manifest pod-template
annotation `gpufleet.io/expected-gpu-memory-mib`) gets:
- a whole GPU: the product's memory (times the GPUs it requests);
- an MPS slice: the GPU's memory / replicas (the control daemon's pinned-memory limit, integer MiB);
- a MIG instance: the profile's memory;
- a time-sliced GPU: nothing reserved; everything sharing the GPUs must fit their memory together.
On platform-managed sharing (Azure Stack Edge MPS: NVIDIA_VISIBLE_DEVICES pinned, no resource request)
this budget is the only capacity check there is.

A workload with a `model:` and no `memoryMiB` uses the model's computed need instead; a model that does not
fit its GPU (share) is an error (`MemoryProblem.error`), with the fixes (gpufleet.capacity.model_fit).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpufleet.capacity.model import Node

if TYPE_CHECKING:  # the stack models (pydantic) load only where a stack is checked, not for manifests
    from gpufleet.config.node_pools import NodePool
    from gpufleet.config.stack import StackConfig
    from gpufleet.nvidia.products import GpuProduct


def profile_memory_mib(product: GpuProduct | None, profile: str) -> int | None:
    """A MIG profile's memory on the product (gpufleet.nvidia.mig_profiles, whose tables load only where a MIG
    profile is asked about)."""
    from gpufleet.nvidia.mig_profiles import profile_memory_mib as of_profile

    return of_profile(product, profile)


@dataclass(frozen=True)
class MemoryProblem:
    """A workload expecting more GPU memory than it will get."""

    workload: str
    expected_mib: int
    available_mib: int
    message: str
    error: bool = False
    """A model that does not fit the GPU memory it gets (not a declared memoryMiB, which only warns)."""
    advisory: bool = False
    """A model that starts but holds fewer full-length requests than its maxNumSeqs."""

    def to_json(self) -> dict:
        out = {"workload": self.workload, "expectedMiB": self.expected_mib, "availableMiB": self.available_mib,
               "message": self.message}
        if self.error:
            out["error"] = True
        if self.advisory:
            out["advisory"] = True
        return out


def mps_slice_mib(memory_mib: int, replicas: int) -> int:
    """set_default_device_pinned_mem_limit: total / replicas, in whole MiB."""
    return memory_mib // replicas


def _pods(w) -> int:
    from gpufleet.config.workloads import BatchJob, InferenceService

    if isinstance(w, InferenceService):
        return w.replicas
    if isinstance(w, BatchJob):
        return min(w.parallelism, w.completions)
    return 1


def _problem(name: str, expected: int, available: int, what: str) -> MemoryProblem:
    return MemoryProblem(name, expected, available,
                         f"{name} expects {expected} MiB of GPU memory; {what} gives it {available} MiB")


def memory_budget(cfg: StackConfig) -> list[MemoryProblem]:
    """Every stack workload whose declared GPU memory exceeds what its node pool will give it."""
    from gpufleet.nvidia.products import find_product

    problems: list[MemoryProblem] = []
    shared_pools: dict[tuple[str, str], list[tuple[str, int, int]]] = {}  # (pool, device) -> [(name, pods, mib)]
    for i, w in enumerate(cfg.workloads):
        gpu, pool = w.gpu, cfg.pool(w.node_pool)
        model = getattr(w, "model", None)
        if gpu is None or (gpu.memory_mib is None and model is None) or pool is None:
            continue
        product = find_product(pool.gpu.product)
        if product is None:
            continue
        name = f"workloads[{i}] '{w.name}'"
        sharing = cfg.sharing_of_pool(pool)
        expected = gpu.memory_mib
        if expected is None:
            found, expected = _model_problem(name, w, product, sharing)
            problems += found
            if sharing is None or sharing.strategy != "mps":  # co-tenants of a time-sliced GPU: summed below
                if gpu.visible_devices is not None:
                    _pinned(name, expected, _pods(w), pool, product, sharing, gpu.visible_devices, shared_pools)
                elif gpu.shared and sharing is not None:
                    shared_pools.setdefault((pool.name, gpu.profile or "gpu"), []).append((name, _pods(w), expected))
            continue
        if gpu.visible_devices is not None:
            problems += _pinned(name, expected, _pods(w), pool, product, sharing, gpu.visible_devices, shared_pools)
            continue
        if gpu.profile is not None:
            mem = profile_memory_mib(product, gpu.profile)
            if mem is None:
                continue
            what, unit = f"a MIG {gpu.profile} instance of {product.key}", mem
        else:
            what, unit = f"a whole {product.key}", product.memory_mib
        if gpu.shared and sharing is not None and sharing.strategy == "mps":
            budget = mps_slice_mib(unit, sharing.replicas)
            if expected > budget:
                problems.append(_problem(name, expected, budget,
                                         f"an MPS slice (1/{sharing.replicas} of {product.key}, {unit} MiB)"))
        elif gpu.shared and sharing is not None:
            shared_pools.setdefault((pool.name, gpu.profile or "gpu"), []).append((name, _pods(w), expected))
            if expected > unit:
                problems.append(_problem(name, expected, unit, f"a time-sliced share of {what}"))
        elif expected > unit * gpu.count:
            problems.append(_problem(name, expected, unit * gpu.count,
                                     what if gpu.count == 1 else f"{gpu.count}x {what[2:]}"))
    problems += _time_sliced_totals(cfg, shared_pools)
    return problems


def _model_problem(name: str, w, product: GpuProduct, sharing) -> tuple[list[MemoryProblem], int]:
    """(the engine's verdicts: a refusal is an error, a concurrency shortfall advisory; the memory per pod in
    MiB that co-tenants of a shared GPU must leave it) of a workload's model on one GPU of its share."""
    from gpufleet.capacity.model_fit import judge, mig_instance, mps_slice, time_sliced, whole_gpu
    from gpufleet.config.model_serving import served_model

    gpu = w.gpu
    try:
        served = served_model(w.model, w.image, [*(w.command or []), *(w.args or [])])
    except (ValueError, TypeError, ZeroDivisionError):
        return [], 0  # reported by the config rules
    mps = sharing is not None and sharing.strategy == "mps" and (gpu.shared or gpu.visible_devices is not None)
    if gpu.profile is not None:
        mem = profile_memory_mib(product, gpu.profile)
        if mem is None:
            return [], 0
        device = mig_instance(product, gpu.profile, mem)
    elif mps:
        device = mps_slice(product, sharing.replicas)
    elif sharing is not None and (gpu.shared or gpu.visible_devices is not None):
        device = time_sliced(product)
    else:
        device = whole_gpu(product, count=served.args.tensor_parallel)
    verdict = judge(name, served, [device])
    assert verdict.assessment is not None  # judge() assesses every device it is given, and it was given one
    s = verdict.assessment.startup
    per_gpu = -(-(s.requested if served.args.kv_cache_memory_bytes is None else
                  s.weights + s.activation + s.non_torch + s.cudagraph + s.kv_available) // (1 << 20))
    per_pod = per_gpu * served.args.tensor_parallel * served.args.pipeline_parallel * served.args.data_parallel
    problems = []
    if verdict.error is not None:
        problems.append(MemoryProblem(name, verdict.need_mib, verdict.budget_mib, verdict.error, error=True))
    problems += [MemoryProblem(name, verdict.need_mib, verdict.budget_mib, m, advisory=True)
                 for m in verdict.warnings]
    return problems, per_pod


def _pinned(name, expected, pods, pool: NodePool, product, sharing, visible: str, groups) -> list[MemoryProblem]:
    """Platform-managed: the workload pins devices by index; an MPS platform slices each one."""
    devices = [d.strip() for d in visible.split(",") if d.strip()] or ["0"]
    if sharing is not None and sharing.strategy == "mps":
        budget = mps_slice_mib(product.memory_mib, sharing.replicas)
        if expected > budget:
            return [_problem(name, expected, budget,
                             f"the platform's MPS slice (1/{sharing.replicas} of {product.key}, {product.memory_mib} "
                             "MiB)")]
        return []
    for d in devices:
        groups.setdefault((pool.name, f"device {d}"), []).append((name, pods, expected // len(devices)))
    return []


def _time_sliced_totals(cfg: StackConfig, groups) -> list[MemoryProblem]:
    from gpufleet.nvidia.products import find_product

    problems = []
    for (pool_name, device), users in groups.items():
        pool = cfg.pool(pool_name)
        # the groups were filled from this config's pools, each with a GPU product it knows
        assert pool is not None
        product = find_product(pool.gpu.product)
        assert product is not None
        if device == "gpu":
            devices, unit = pool.gpu.count, product.memory_mib
        elif device.startswith("device "):
            devices, unit = 1, product.memory_mib
        else:
            devices = cfg.mig_profiles_of_pool(pool).get(device, 0)
            unit = profile_memory_mib(product, device) or 0
        capacity = devices * pool.most_nodes() * unit  # an autoscaled pool: its devices once grown to max
        total = sum(pods * mib for _, pods, mib in users)
        if total > capacity:
            names = ", ".join(n for n, _, _ in users)
            what = "GPU" if device == "gpu" else device
            problems.append(MemoryProblem(
                names, total, capacity,
                f"{names} share the {what} memory of node pool '{pool_name}' and together expect {total} MiB; "
                f"the {devices * pool.most_nodes()} shared device(s) have {capacity} MiB"))
    return problems


def node_gpu_memory(node: Node, requests: dict[str, int]) -> tuple[int, str, str] | None:
    """(MiB one pod gets, how it is shared, what) for a pod placed on a node; None when unknown.

    Sharing is `whole`, `mps` (budget per pod) or `time-slicing` (budget per device, shared by all pods).
    """
    from gpufleet.nvidia.products import find_product

    gpu_requests = {r: n for r, n in requests.items() if r.startswith("nvidia.com/") and n > 0}
    if not gpu_requests:
        return None
    labels = node.labels
    product_label = labels.get("nvidia.com/gpu.product", "")
    base = product_label.removesuffix("-SHARED")
    product = find_product(base.split("-MIG-")[0]) if base else None
    resource, count = next(iter(sorted(gpu_requests.items())))
    stem = resource.removesuffix(".shared")
    if stem.startswith("nvidia.com/mig-"):
        profile = stem[len("nvidia.com/mig-"):].replace(".me", "+me")
        mem, what = profile_memory_mib(product, profile), f"MIG {profile}"
    elif "-MIG-" in base:
        profile = base.split("-MIG-")[1]
        mem, what = profile_memory_mib(product, profile), f"MIG {profile}"
    else:
        mem = int(labels["nvidia.com/gpu.memory"]) if labels.get("nvidia.com/gpu.memory", "").isdigit() else None
        if mem is None and product is not None:
            mem = product.memory_mib
        if mem is None and node.gpus and node.gpus.gpus:
            mem = node.gpus.gpus[0].memory_mib
        what = product.key if product else (product_label or "GPU")
    if mem is None:
        return None
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "none")
    replicas = int(labels.get("nvidia.com/gpu.replicas", "1") or 1)
    if strategy == "mps" and replicas > 1:
        return mps_slice_mib(mem, replicas), "mps", f"an MPS slice (1/{replicas} of {what}, {mem} MiB)"
    if strategy == "time-slicing" or resource.endswith(".shared"):
        return mem, "time-slicing", f"a time-sliced {what}"
    return mem * count, "whole", f"{count}x {what}" if count > 1 else f"a whole {what}"
