"""Where a served model meets a GPU: the device a pod gets, from a stack's node pool or a node's GFD labels,
and the engine's two verdicts on it (gpufleet.nvidia.model_memory.verdict: will it start; how many
full-length requests at once). The arithmetic lives in gpufleet.nvidia.model_memory; this module only finds
the device and words the result for a workload.

A declared `gpu.memoryMiB` wins over the model; if the two disagree by more than the tolerance, a warning
names both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from gpufleet.capacity.model import Node
from gpufleet.errors import InputError
from gpufleet.nvidia.mig_profiles import profile_memory_mib
from gpufleet.nvidia.model_memory.served import ServedModel, legacy_annotation, with_flags
from gpufleet.nvidia.model_memory.verdict import Assessment, Device, assess
from gpufleet.nvidia.products import GpuProduct, find_product

MODEL_ANNOTATION = "gpufleet.io/model-memory"
EXPECTED_MEMORY_ANNOTATION = "gpufleet.io/expected-gpu-memory-mib"


def _a100(product: GpuProduct | None) -> bool:
    return product is not None and "A100" in product.key.upper()


def whole_gpu(product: GpuProduct, memory_mib: int | None = None, count: int = 1) -> Device:
    mib = memory_mib or product.memory_mib
    what = f"a whole {product.key} ({mib} MiB)" if count == 1 else f"each of {count}x {product.key} ({mib} MiB)"
    return Device("gpu", mib, what, a100=_a100(product), product=product.key)


def mig_instance(product: GpuProduct, profile: str, memory_mib: int) -> Device:
    return Device("mig", memory_mib, f"a MIG {profile} instance of {product.key} ({memory_mib} MiB)", mig=True,
                  product=product.key)


def mps_slice(product: GpuProduct, replicas: int, gpu_mib: int | None = None) -> Device:
    """The MPS control daemon's pinned limit: total / replicas in whole MiB (k8s-device-plugin mps/daemon.go);
    the engine still sees the whole GPU."""
    total = gpu_mib or product.memory_mib
    return Device("mps", total, f"an MPS slice (1/{replicas} of {product.key}, {total // replicas} of {total} MiB)",
                  limit_mib=total // replicas, a100=_a100(product), product=product.key)


def time_sliced(product: GpuProduct, gpu_mib: int | None = None) -> Device:
    total = gpu_mib or product.memory_mib
    return Device("time-slicing", total, f"a time-sliced {product.key} ({total} MiB, shared, not isolated)",
                  a100=_a100(product), product=product.key)


def dra_device(device: str, memory_mib: int) -> Device:
    """A device a DRA ResourceClaim allocated (a whole GPU or a MIG device: its published memory)."""
    mig = "mig" in device.lower()
    return Device("dra", memory_mib, f"the allocated DRA device {device} ({memory_mib} MiB)", mig=mig)


def node_device(node: Node, requests: dict[str, int]) -> Device | None:
    """The device one GPU of a pod placed on a node gets, from its GFD labels; None when unknown."""
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
        return mig_instance(product, profile, mib)
    mib = int(label_mib) if label_mib.isdigit() else (product.memory_mib if product else None)
    if mib is None and node.gpus and node.gpus.gpus:
        mib = node.gpus.gpus[0].memory_mib
    if not mib:
        return None
    product = product or GpuProduct(base or "GPU", base or "GPU", mib, (0, 0), "unknown")
    strategy = labels.get("nvidia.com/gpu.sharing-strategy", "none")
    replicas = int(labels.get("nvidia.com/gpu.replicas", "1") or 1) if labels.get(
        "nvidia.com/gpu.replicas", "1").isdigit() else 1
    if strategy == "mps" and replicas > 1:
        return mps_slice(product, replicas, mib)
    if strategy == "time-slicing" or gpu[0].endswith(".shared"):
        return time_sliced(product, mib)
    return whole_gpu(product, mib)


def container_argv(spec: dict) -> list[str]:
    """Command and args of a pod spec's containers, in order (where the engine's flags are)."""
    return [str(a) for c in spec.get("containers") or [] if isinstance(c, dict)
            for a in [*(c.get("command") or []), *(c.get("args") or [])]]


def read_annotation(key: str, raw: str) -> ServedModel:
    """The served model an annotation carries; InputError naming the workload and the problem."""
    try:
        doc = json.loads(raw)
        if isinstance(doc, dict) and "engine" not in doc:
            return legacy_annotation(doc)
        return ServedModel.from_json(doc)
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise InputError(f"{key}: annotation {MODEL_ANNOTATION} is not usable: {e}") from e


@dataclass
class Verdict:
    """The model check of one manifest workload: an error (refused on every eligible node) and warnings."""

    error: str | None = None
    need_mib: int = 0
    budget_mib: int = 0
    warnings: list[str] = field(default_factory=list)
    overridden: bool = False
    """A declared memoryMiB is checked instead of the model, as in the stack check."""
    assessment: Assessment | None = None


def expected_mib(raw: str) -> int | None:
    """The need per pod the rendering wrote beside the facts (`expectedMiB`); None when absent."""
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return None
    value = doc.get("expectedMiB") if isinstance(doc, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_manifest_model(key: str, annotations: dict[str, str], nodes: list[Node], requests: dict[str, int],
                         argv: list[str] | None = None) -> Verdict | None:
    """None when the workload declares no model."""
    raw = annotations.get(MODEL_ANNOTATION)
    if raw is None:
        return None
    served = read_annotation(key, raw)
    verdict = Verdict()
    declared = annotations.get(EXPECTED_MEMORY_ANNOTATION, "")
    if declared.isdigit() and int(declared) != expected_mib(raw):  # a declared gpu.memoryMiB wins
        verdict.overridden = True
        return verdict
    devices = [d for d in (node_device(n, requests) for n in nodes) if d is not None]
    return judge("", with_flags(served, argv or []), devices, verdict)  # the check names the workload


def judge(key: str, served: ServedModel, devices: list[Device], verdict: Verdict | None = None) -> Verdict:
    """The verdict over the devices a pod may get: an error when it starts on none; warnings when it starts on
    some only, or holds fewer full-length requests than maxNumSeqs."""
    verdict = verdict or Verdict()
    seen: dict[tuple, Assessment] = {}
    results = []
    for d in devices:
        ident = (d.kind, d.memory_mib, d.limit_mib, d.mig, d.a100, d.what)
        if ident not in seen:
            seen[ident] = assess(key, served, d)
        results.append(seen[ident])
    if not results:
        return verdict
    refused = [a for a in results if a.error]
    best = max(results, key=lambda a: (a.error is None, a.startup.kv_available))
    verdict.assessment = best
    verdict.need_mib = best.need_mib
    verdict.budget_mib = best.startup.requested >> 20
    if len(refused) == len(results):
        verdict.error = best.error
        return verdict
    if refused:
        verdict.warnings.append(f"{refused[0].error} (on {len(refused)} of {len(results)} eligible nodes; it "
                                "starts on the others)")
    short = [a for a in results if a.error is None and a.warning]
    if short:
        worst = min(short, key=lambda a: a.startup.max_concurrency)
        where = "" if len(short) == len(results) else f" (on {len(short)} of {len(results)} eligible nodes)"
        verdict.warnings.append(f"{worst.warning}{where}")
    return verdict
