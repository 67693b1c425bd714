"""Does a workload's model fit the GPU memory it gets? (docs/model-memory.md)

The need comes from the model (gpufleet.nvidia.model_memory); the budget is one GPU of the workload: a
whole GPU, a MIG instance, an MPS slice (the pinned limit), a time-sliced GPU (alone; the sum over
co-tenants stays memory_budget's check) or an allocated DRA device. A model that does not fit is an
error, with the fixes. A declared `gpu.memoryMiB` wins over the model; if the two disagree by more than
model_memory.CONFLICT_TOLERANCE, a warning names both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from gpufleet.errors import InputError
from gpufleet.nvidia.model_budget import (
    Budget, fixes_for, mig_budget, mps_budget, profile_memory_mib, reservation_problem, time_sliced_budget, whole_gpu_budget,
)
from gpufleet.nvidia.model_memory import ModelShape, Serving, conflict_message, from_annotation, gib, need_per_gpu
from gpufleet.nvidia.products import GpuProduct, find_product

MODEL_ANNOTATION = "gpufleet.io/model-memory"
EXPECTED_MEMORY_ANNOTATION = "gpufleet.io/expected-gpu-memory-mib"


def is_vllm(image: str) -> bool:
    """A vLLM image (the fixes then include --gpu-memory-utilization)."""
    return "vllm" in image.lower()


def misfit_message(name: str, label: str, shape: ModelShape, serving: Serving, budget: Budget,
                   product: GpuProduct | None, vllm: bool, argv: list[str] | None = None) -> str | None:
    """The error when the need exceeds the usable budget, with the fixes; None when it fits. For a vLLM
    workload with its command line, also when its reservation reaches past an MPS slice."""
    need = need_per_gpu(shape, serving)
    if need.total <= budget.usable_mib << 20:
        reservation = reservation_problem(argv, need.total, budget) if vllm and argv is not None else None
        if reservation is None:
            return None
        return (f"{name}: the model{' ' + label if label else ''} needs {need.describe(serving)}, which "
                f"fits {budget.what}, but {reservation}. Expected vLLM to reserve no more than the slice.")
    fixes = fixes_for(shape, serving, budget, product, budget.visible_mib if budget.kind in ("mps", "time-slicing")
                      else None)
    usable = budget.usable_mib << 20
    return (f"{name}: the model{' ' + label if label else ''} needs {need.describe(serving)}; {budget.what} gives it {gib(usable)} "
            f"({budget.usable_mib} MiB usable, at most 90% of what the engine sees). Expected it to fit; fixes: "
            f"{fixes.describe(shape, serving, budget, product, vllm)}")


# --- nodes (gpufleet check) -----------------------------------------------------------------------------------

def node_budget(node: Node, requests: dict[str, int]) -> tuple[Budget, GpuProduct | None] | None:
    """The budget of one GPU of a pod placed on a node, from its GFD labels; None when unknown."""
    gpu = sorted(r for r, n in requests.items() if r.startswith("nvidia.com/") and n > 0)
    if not gpu:
        return None
    labels = node.labels
    base = labels.get("nvidia.com/gpu.product", "").removesuffix("-SHARED")
    product = find_product(base.split("-MIG-")[0]) if base else None
    stem = gpu[0].removesuffix(".shared")
    profile = (stem[len("nvidia.com/mig-"):].replace(".me", "+me") if stem.startswith("nvidia.com/mig-")
               else base.split("-MIG-")[1] if "-MIG-" in base else None)
    label_mib = labels.get("nvidia.com/gpu.memory", "")
    if profile is not None:
        memory = labels.get(f"nvidia.com/mig-{profile}.memory", "")
        mib = int(memory) if memory.isdigit() else (int(label_mib) if label_mib.isdigit() and "-MIG-" in base
                                                      else profile_memory_mib(product, profile))
        if mib is None or product is None:
            return None
        return mig_budget(product, profile, mib), product
    mib = int(label_mib) if label_mib.isdigit() else (product.memory_mib if product else None)
    if mib is None and node.gpus and node.gpus.gpus:
        mib = node.gpus.gpus[0].memory_mib
    if mib is None:
        return None
    product = product or GpuProduct(base or "GPU", base or "GPU", mib, (0, 0), "unknown")
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "none")
    replicas = int(labels.get("nvidia.com/gpu.replicas", "1") or 1)
    if strategy == "mps" and replicas > 1:
        return mps_budget(product, replicas, mib), product
    if strategy == "time-slicing" or gpu[0].endswith(".shared"):
        return time_sliced_budget(product, mib), product
    return whole_gpu_budget(product, mib), product


@dataclass
class Verdict:
    """The model check of one manifest workload: an error (misfit on every eligible node) and warnings."""

    error: str | None = None
    need_mib: int = 0
    budget_mib: int = 0
    warnings: list[str] = field(default_factory=list)
    overridden: bool = False
    """A declared memoryMiB is checked instead of the model (memory_budget's warnings), as in the stack check."""


def container_argv(spec: dict) -> list[str]:
    """Command and args of a pod spec's containers, in order (where vLLM's flags are)."""
    return [str(a) for c in spec.get("containers") or [] for a in [*(c.get("command") or []), *(c.get("args") or [])]]


def check_manifest_model(key: str, annotations: dict[str, str], nodes: list[Node], requests: dict[str, int],
                         argv: list[str] | None = None) -> Verdict | None:
    """None when the workload declares no model; `argv`: its containers' command lines."""
    raw = annotations.get(MODEL_ANNOTATION)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
        label, shape, serving, vllm = from_annotation(doc if isinstance(doc, dict) else {})
    except (json.JSONDecodeError, ValueError) as e:
        raise InputError(f"{key}: annotation {MODEL_ANNOTATION} is not usable: {e}") from e
    need = need_per_gpu(shape, serving)
    verdict = Verdict(need_mib=need.mib)
    declared, per_pod = annotations.get(EXPECTED_MEMORY_ANNOTATION, ""), need.mib * serving.tensor_parallel
    if declared.isdigit() and int(declared) != per_pod:  # a declared gpu.memoryMiB (rendered: the need itself)
        conflict = conflict_message(key, int(declared), per_pod)
        if conflict is not None:
            verdict.warnings.append(conflict)
        verdict.overridden = True
        return verdict
    budgets = [b for b in (node_budget(n, requests) for n in nodes) if b is not None]
    misfits = [(b, p, m) for b, p in budgets
               if (m := misfit_message(key, label, shape, serving, b, p, vllm, argv)) is not None]
    if budgets and len(misfits) == len(budgets):
        budget, _, verdict.error = min(misfits, key=lambda x: -x[0].usable_mib)
        verdict.budget_mib = budget.usable_mib
    elif misfits:
        verdict.warnings.append(f"{misfits[0][2]} (on {len(misfits)} of {len(budgets)} eligible nodes; it fits "
                                "on the others)")
    return verdict
