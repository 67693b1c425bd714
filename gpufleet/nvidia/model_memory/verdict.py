"""The two verdicts on a served model and one GPU (or share), named as vLLM names them, with fixes that hold.

- **Error**: the server would refuse to start (weights beyond the device, no memory left for KV blocks, or
  no room for one `max_model_len` request), or, on an MPS slice, its reservation reaches past the pinned
  limit (CUDA out of memory). The engine's own message is quoted.
- **Warning**: it starts, but its KV cache holds fewer full-length sequences than the declared maxNumSeqs.
  The KV tokens and the maximum concurrency are given as vLLM prints them.

A suggested maxModelLen is the engine's largest accepted length less SAFETY (rounded down to 256 tokens,
to 16 below 8,192): our KV budget is an estimate, and a suggestion the engine refused would be worse than
none. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpufleet.nvidia.model_memory import vllm
from gpufleet.nvidia.model_memory.served import ServedModel
from gpufleet.nvidia.model_memory.vllm import MIB, Startup, gib

#: A suggested maxModelLen stays this far below the largest our estimate accepts.
SAFETY = 0.05


@dataclass(frozen=True)
class Device:
    """One GPU (or share) of a pod, as the engine sees it."""

    kind: str
    """gpu, mig, mps, time-slicing or dra."""
    memory_mib: int
    """The device as labelled: a whole GPU's NVML total or a MIG instance's memory."""
    what: str
    limit_mib: int | None = None
    """MPS: the pinned limit of the slice (the engine still sees the whole GPU)."""
    mig: bool = False
    a100: bool = False
    product: str | None = None
    cuda_total_mib: float | None = None
    """The total the CUDA runtime reports, where known (a start-up log's 'Free memory on device (x/y GiB)')."""

    @property
    def visible(self) -> int:
        if self.cuda_total_mib is not None:
            return int(self.cuda_total_mib * MIB)
        return vllm.cuda_visible_bytes(self.memory_mib, self.mig)


@dataclass
class Assessment:
    startup: Startup
    error: str | None = None
    warning: str | None = None
    fixes: list[str] = field(default_factory=list)

    @property
    def need_mib(self) -> int:
        s = self.startup
        return math.ceil((s.weights + s.activation + s.non_torch + s.cudagraph + s.one_sequence) / MIB)


def safe_length(largest: int) -> int:
    length = largest * (1 - SAFETY)
    step = 256 if length >= 8192 else vllm.BLOCK_SIZE
    return max(vllm.BLOCK_SIZE if largest >= vllm.BLOCK_SIZE else 1, int(length // step * step))


def breakdown(s: Startup, utilization: float) -> str:
    """The start-up in vLLM's terms, with the utilization it ran with."""
    graphs = f" + CUDA graphs {gib(s.cudagraph)}" if s.cudagraph else ""
    return (f"it reserves {gib(s.requested)} (--gpu-memory-utilization {utilization} x {gib(s.visible)}): "
            f"weights {gib(s.weights)} + peak activation {gib(s.activation)} + non-torch {gib(s.non_torch)}"
            f"{graphs}, "
            f"leaving {gib(max(s.kv_available, 0))} for the KV cache")


def capacity(s: Startup, max_model_len: int) -> str:
    return (f"GPU KV cache size: {s.kv_tokens:,} tokens; Maximum concurrency for {max_model_len:,} tokens per "
            f"request: {s.max_concurrency:.2f}x")


def assess(name: str, served: ServedModel, device: Device) -> Assessment:
    """The verdict of `served` on `device`; `name` (the workload, its YAML path), when given, starts each message. The
    concurrency warning needs a declared maxNumSeqs (the engine's default is a cap, not a promise)."""
    s = served.on_device(device.visible, mig=device.mig, a100=device.a100)
    a = Assessment(s)
    name = f"{name}: " if name else ""
    label = f" {served.label}" if served.label else ""
    where = device.what
    mml = served.args.max_model_len
    if device.kind == "mps" and device.limit_mib is not None and s.requested > device.limit_mib * MIB:
        util = _fitting_utilization(served, device, device.limit_mib)
        a.error = (f"{name}vLLM would run out of memory starting{label} on {where}: it reserves "
                   f"{gib(s.requested)} ({gib(s.visible)}, the whole GPU it sees, x --gpu-memory-utilization "
                   f"{served.args.gpu_memory_utilization}), beyond the slice's pinned limit of "
                   f"{device.limit_mib} MiB")
        a.fixes = ([util] if util else []) + _bigger(served, device)
        a.error += ("; fixes: " + ("; or ".join(a.fixes) if a.fixes else "none on this GPU") +
                    ". Expected its reservation inside the slice.")
        return a
    if s.refusal is not None:
        a.fixes = _start_fixes(served, device, s)
        # The weights alone are past the device: the budget's split and the KV cache say nothing more.
        weights = s.refusal.kind == "weights"
        budget = "" if weights else f" ({breakdown(s, served.args.gpu_memory_utilization)})"
        a.error = (f"{name}vLLM would refuse to start{label} on {where}: \"{s.refusal.message}\"{budget}. "
                   + "Fixes: " + ("; or ".join(a.fixes) if a.fixes else "none on this GPU: use a smaller or "
                                  "quantized checkpoint, more tensorParallel GPUs or a larger GPU")
                   + (". Expected the weights to fit in the device's memory." if weights else
                      ". Expected the KV cache to hold one request of maxModelLen tokens."))
        return a
    if s.short_of_seqs and served.args.max_num_seqs is not None:
        at_seqs = _length_for_seqs(served, device, s.max_num_seqs)
        a.fixes = ([f"maxModelLen {at_seqs:,} holds {s.max_num_seqs} full-length sequences"] if at_seqs else [])
        a.fixes += [f"maxNumSeqs {max(1, math.floor(s.max_concurrency))} (what runs at once at full length)"]
        budget = breakdown(s, served.args.gpu_memory_utilization)
        a.warning = (f"{name}vLLM starts{label} on {where}, but its KV cache holds fewer than maxNumSeqs "
                     f"{s.max_num_seqs} sequences of {mml:,} tokens: {capacity(s, mml)}; the other requests "
                     f"queue or are preempted ({budget}). To hold them: " + "; or ".join(a.fixes) +
                     ". Expected room for maxNumSeqs full-length requests.")
    return a


def _start_fixes(served: ServedModel, device: Device, s: Startup) -> list[str]:
    fixes = []
    one_sequence = s.refusal is not None and s.refusal.kind == "one_sequence"
    if one_sequence and s.largest_max_model_len:
        fixes.append(f"maxModelLen {safe_length(s.largest_max_model_len):,} (vLLM's estimate: "
                     f"{s.largest_max_model_len:,})")
    util = _starting_utilization(served, device)
    if util is not None and device.kind != "mps":
        fixes.append(f"--gpu-memory-utilization {util}")
    if served.args.kv_cache_memory_bytes is None and one_sequence:
        fp8 = served.kv.bytes_per_token_layer
        if fp8 > 0 and _starts(served, device, kv=True):
            fixes.append("--kv-cache-dtype fp8 (halves the KV cache per token)")
    return fixes + _bigger(served, device)


def _bigger(served: ServedModel, device: Device) -> list[str]:
    """A larger share of the same GPU on which the server starts: the smallest MIG profile, or the whole GPU."""
    from gpufleet.nvidia.products import find_product

    product = find_product(device.product) if device.product else None
    if product is None or device.kind not in ("mig", "mps"):
        return []
    if device.kind == "mig" and product.mig_table is not None:
        from gpufleet.nvidia.mig_profiles import TABLES

        for p in sorted(TABLES[product.mig_table].profiles.values(), key=lambda p: (p.memory_mib, p.name)):
            if p.memory_mib > device.memory_mib and not p.name.endswith("+me"):
                bigger = Device("mig", p.memory_mib, p.name, mig=True, product=device.product)
                if _starts(served, bigger):
                    return [f"a MIG {p.name} instance ({p.memory_mib} MiB)"]
    whole = Device("gpu", product.memory_mib, product.key, a100=device.a100, product=device.product)
    if _starts(served, whole):
        return [f"a whole {product.key}" + (" (fewer MPS replicas give larger slices)" if device.kind == "mps" else "")]
    return []


def _starts(served: ServedModel, device: Device, kv: bool = False) -> bool:
    model = served
    if kv:
        from dataclasses import replace
        half = max(1, served.kv.bytes_per_token_layer // 2)
        model = replace(served, kv=replace(served.kv, bytes_per_token_layer=half))
    return model.on_device(device.visible, mig=device.mig, a100=device.a100).starts


def _starting_utilization(served: ServedModel, device: Device) -> float | None:
    """The smallest --gpu-memory-utilization (two decimals, at most 0.95) at which it starts; None if none."""
    start = math.ceil(served.args.gpu_memory_utilization * 100) + 1
    for pct in range(start, 96):
        if _starts(served.with_args(gpu_memory_utilization=pct / 100), device):
            return pct / 100
    return None


def _fitting_utilization(served: ServedModel, device: Device, limit_mib: int) -> str | None:
    """MPS: the largest utilization whose reservation stays inside the pinned limit (`limit_mib`, the device's),
    with the maxModelLen it then needs if the declared one does not start; None when nothing starts inside the
    slice."""
    util = math.floor(limit_mib * MIB / device.visible * 100) / 100
    if util <= 0:
        return None
    inside = served.with_args(gpu_memory_utilization=util)
    s = inside.on_device(device.visible, mig=device.mig, a100=device.a100)
    if s.starts:
        return f"--gpu-memory-utilization {util}"
    if s.refusal is not None and s.refusal.kind == "one_sequence" and s.largest_max_model_len:
        length = safe_length(s.largest_max_model_len)
        if _starts(inside.with_args(max_model_len=length), device):
            return f"--gpu-memory-utilization {util} with maxModelLen {length:,}"
    return None


def _length_for_seqs(served: ServedModel, device: Device, seqs: int) -> int | None:
    """The largest maxModelLen (with SAFETY) at which the KV cache holds `seqs` full-length sequences."""
    lo, hi = 0, served.args.max_model_len
    while lo < hi:
        mid = (lo + hi + 1) // 2
        s = served.with_args(max_model_len=mid).on_device(device.visible, mig=device.mig, a100=device.a100)
        if s.starts and s.max_concurrency >= seqs:
            lo = mid
        else:
            hi = mid - 1
    return safe_length(lo) if lo >= vllm.BLOCK_SIZE else None

