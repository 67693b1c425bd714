"""GPU memory budgets (whole GPU, MIG instance, MPS slice, time-sliced GPU, DRA device) and the fixes for a
model that does not fit one: the largest maxModelLen / maxNumSeqs, the smallest MIG profile or MPS share,
and vLLM's --gpu-memory-utilization (docs/model-memory.md). Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from gpufleet.nvidia.mig_profiles import TABLES
from gpufleet.nvidia.model_memory import (
    BLOCK_SIZE, MIB, VLLM_DEFAULT_UTILIZATION, ModelShape, Serving, need_per_gpu,
)
from gpufleet.nvidia.products import GpuProduct

#: Share of the device the need may fill: vLLM's default utilization. The rest is the CUDA context (created
#: before vLLM measures free memory), driver reservations and allocator fragmentation.
USABLE_FRACTION = VLLM_DEFAULT_UTILIZATION

BudgetKind = Literal["gpu", "mig", "mps", "time-slicing", "dra"]


@dataclass(frozen=True)
class Budget:
    """GPU memory one GPU of the workload may use, and what the engine sees as the device's total."""

    kind: BudgetKind
    memory_mib: int
    visible_mib: int
    """The total vLLM multiplies by --gpu-memory-utilization: the instance on MIG, the whole GPU under
    MPS and time-slicing (the MPS pinned limit does not shrink the reported total)."""
    what: str

    @property
    def usable_mib(self) -> int:
        """The share, and at most USABLE_FRACTION of the total the engine sees."""
        return min(self.memory_mib, usable_of(self.visible_mib))


def usable_of(visible_mib: int) -> int:
    return math.floor(visible_mib * USABLE_FRACTION)


def whole_gpu_budget(product: GpuProduct, memory_mib: int | None = None) -> Budget:
    mib = memory_mib or product.memory_mib
    return Budget("gpu", mib, mib, f"a whole {product.key} ({mib} MiB)")


def mig_budget(product: GpuProduct, profile: str, memory_mib: int) -> Budget:
    return Budget("mig", memory_mib, memory_mib, f"a MIG {profile} instance of {product.key} ({memory_mib} MiB)")


def mps_budget(product: GpuProduct, replicas: int, gpu_mib: int | None = None) -> Budget:
    """The MPS control daemon's pinned limit: total / replicas in whole MiB (k8s-device-plugin mps/daemon.go)."""
    total = gpu_mib or product.memory_mib
    return Budget("mps", total // replicas, total,
                  f"an MPS slice (1/{replicas} of {product.key}, {total // replicas} of {total} MiB)")


def time_sliced_budget(product: GpuProduct, gpu_mib: int | None = None) -> Budget:
    total = gpu_mib or product.memory_mib
    return Budget("time-slicing", total, total, f"a time-sliced {product.key} ({total} MiB, shared, not isolated)")


def dra_budget(device: str, memory_mib: int) -> Budget:
    """A device a DRA ResourceClaim allocated (a whole GPU or a MIG device: its published memory)."""
    return Budget("dra", memory_mib, memory_mib, f"the allocated DRA device {device} ({memory_mib} MiB)")


def profile_memory_mib(product: GpuProduct | None, profile: str) -> int | None:
    """A MIG profile's memory from the product's table; None for an unknown product or profile."""
    if product is None or product.mig_table is None:
        return None
    entry = TABLES[product.mig_table].profiles.get(profile)
    return entry.memory_mib if entry else None


def fits(shape: ModelShape, serving: Serving, budget: Budget) -> bool:
    return need_per_gpu(shape, serving).total <= budget.usable_mib * MIB


def largest_max_model_len(shape: ModelShape, serving: Serving, budget: Budget) -> int | None:
    """Largest max_model_len (whole KV blocks) that fits at the declared max_num_seqs; None when none does."""
    need = need_per_gpu(shape, serving)
    free = budget.usable_mib * MIB - (need.total - need.kv_cache)
    blocks = free // (need.kv_bytes_per_token * BLOCK_SIZE * serving.max_num_seqs)
    length = int(blocks) * BLOCK_SIZE
    if shape.max_position_embeddings is not None:
        length = min(length, shape.max_position_embeddings)
    return length if length >= 1 else None


def largest_max_num_seqs(shape: ModelShape, serving: Serving, budget: Budget) -> int | None:
    need = need_per_gpu(shape, serving)
    free = budget.usable_mib * MIB - (need.total - need.kv_cache)
    seqs = free // (need.kv_bytes_per_token * need.tokens_per_sequence)
    return int(seqs) if seqs >= 1 else None


def smallest_mig_profile(product: GpuProduct | None, need_mib: int) -> tuple[str, int] | None:
    """(profile, MiB) of the smallest MIG instance of the product holding `need_mib`; None if none does."""
    if product is None or product.mig_table is None:
        return None
    options = [p for p in TABLES[product.mig_table].profiles.values()
               if not p.name.endswith("+me") and usable_of(p.memory_mib) >= need_mib]
    best = min(options, key=lambda p: (p.memory_mib, p.compute_slices), default=None)
    return (best.name, best.memory_mib) if best else None


def largest_mps_replicas(product: GpuProduct, need_mib: int, gpu_mib: int | None = None) -> int | None:
    """Most MPS replicas (the smallest slice, total // replicas MiB) that still hold `need_mib`; None below 2."""
    total = gpu_mib or product.memory_mib
    if need_mib > usable_of(total):
        return None
    replicas = min(total // max(need_mib, 1), product.mps_max_clients)
    return replicas if replicas >= 2 else None


def gpu_memory_utilization(need_bytes: int, budget: Budget) -> float | None:
    """vLLM's `--gpu-memory-utilization` (a fraction of the total it sees) whose reservation covers the need
    and stays inside the usable share; None when no such value exists."""
    visible = budget.visible_mib * MIB
    for digits in (2, 3):
        scale = 10 ** digits
        value = math.ceil(need_bytes / visible * scale) / scale
        if value * visible <= budget.usable_mib * MIB + MIB:
            return value
    return None


@dataclass(frozen=True)
class Fixes:
    max_model_len: int | None
    max_num_seqs: int | None
    mig_profile: tuple[str, int] | None
    mps_replicas: int | None
    whole_gpu: bool
    utilization: float | None
    """--gpu-memory-utilization for the declared serving on this budget (None: it does not fit)."""
    fixed_utilization: float | None
    """--gpu-memory-utilization after the max_model_len fix."""

    def describe(self, shape: ModelShape, serving: Serving, budget: Budget, product: GpuProduct | None,
                 vllm: bool) -> str:
        options = []
        if self.max_model_len is not None:
            text = f"maxModelLen {self.max_model_len} (at maxNumSeqs {serving.max_num_seqs})"
            if vllm and self.fixed_utilization is not None:
                text += f" with --gpu-memory-utilization {self.fixed_utilization}"
            options.append(text)
        if self.max_num_seqs is not None:
            options.append(f"maxNumSeqs {self.max_num_seqs} (at maxModelLen {serving.max_model_len})")
        if self.mig_profile is not None and budget.kind in ("mig", "dra", "gpu"):
            options.append(f"a MIG {self.mig_profile[0]} instance ({self.mig_profile[1]} MiB) or larger")
        if self.mps_replicas is not None and budget.kind == "mps":
            options.append(f"an MPS slice of 1/{self.mps_replicas} (replicas: {self.mps_replicas}) or larger")
        if self.whole_gpu and budget.kind in ("mig", "mps") and product is not None:
            options.append(f"a whole {product.key}")
        if not options:
            return (f"no maxModelLen, maxNumSeqs, MIG profile or GPU share of this GPU holds the weights and overhead; "
                    f"use a smaller dtype, more tensorParallel GPUs or a larger GPU")
        text = "; or ".join(options)
        if budget.kind == "mig" and self.mig_profile is None and product is not None and not self.whole_gpu:
            text += f" (at the declared context no MIG profile, nor a whole {product.key}, holds it)"
        return text


def fixes_for(shape: ModelShape, serving: Serving, budget: Budget, product: GpuProduct | None,
              gpu_mib: int | None = None) -> Fixes:
    need = need_per_gpu(shape, serving)
    length = largest_max_model_len(shape, serving, budget)
    seqs = largest_max_num_seqs(shape, serving, budget)
    fixed_util = None
    if length is not None:
        fixed_util = gpu_memory_utilization(need_per_gpu(shape, replace(serving, max_model_len=length)).total, budget)
    total = gpu_mib or (product.memory_mib if product else None)
    return Fixes(length, seqs, smallest_mig_profile(product, need.mib),
                 largest_mps_replicas(product, need.mib, total) if product else None,
                 bool(total and need.mib <= usable_of(total)), gpu_memory_utilization(need.total, budget), fixed_util)


# --- vLLM's command line --------------------------------------------------------------------------------

def cli_flag(argv: list[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V` (the last one wins, as argparse does); None when absent."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1:]
    return value


def reservation_problem(argv: list[str], need_bytes: int, budget: Budget) -> str | None:
    """vLLM reserves --gpu-memory-utilization (default 0.9) x the total it sees at startup; under MPS that
    total is the whole GPU, so the reservation can reach past the slice. A sentence, or None when it stays in."""
    raw = cli_flag(argv, "--gpu-memory-utilization")
    try:
        util = float(raw) if raw is not None else VLLM_DEFAULT_UTILIZATION
    except ValueError:
        return None
    reserved = util * budget.visible_mib
    if reserved <= budget.memory_mib:
        return None
    fix = gpu_memory_utilization(need_bytes, budget)
    how = f"--gpu-memory-utilization {raw}" if raw is not None else f"vLLM's default --gpu-memory-utilization {util}"
    return (f"{how} reserves {reserved:.0f} MiB of the {budget.visible_mib} MiB it sees, beyond {budget.what}; "
            + (f"use --gpu-memory-utilization {fix}" if fix is not None else "no value holds the model there"))
