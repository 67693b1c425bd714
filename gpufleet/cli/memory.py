"""`gpufleet memory`: what vLLM takes on one GPU for a checkpoint and its flags, and whether it starts."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from pydantic import ValidationError

from gpufleet.errors import InputError


def _device(gpu: str | None, memory_mib: int | None, mig: str | None, mps: int | None):
    from gpufleet.capacity.model_fit import mig_instance, mps_slice, whole_gpu
    from gpufleet.nvidia.mig_profiles import profile_memory_mib
    from gpufleet.nvidia.products import GpuProduct

    if gpu is None and memory_mib is None:
        raise InputError("--gpu or --gpu-memory-mib is required: the GPU the server runs on")
    product = _product(gpu, memory_mib) if gpu is not None else None
    if product is None:
        assert memory_mib is not None  # _product gives None only when --gpu-memory-mib gives the memory
        product = GpuProduct(gpu or "GPU", gpu or "GPU", memory_mib, (0, 0), "unknown")
    if mig is not None:
        if mps is not None:
            raise InputError("--mig and --mps-replicas exclude each other (the device plugin shares whole GPUs "
                             "with MPS)")
        mib = memory_mib if memory_mib is not None else profile_memory_mib(product, mig)
        if mib is None:
            raise InputError(f"--mig {mig!r} is not a MIG profile of {product.key}; give --gpu-memory-mib with the "
                             "instance's memory (GFD label nvidia.com/mig-<profile>.memory)")
        return mig_instance(product, mig, mib)
    total = memory_mib or product.memory_mib
    if mps is not None:
        if mps < 2:
            raise InputError(f"--mps-replicas {mps}: expected 2 or more")
        return mps_slice(product, mps, total)
    return whole_gpu(product, total)


def _product(gpu: str, memory_mib: int | None):
    """The product --gpu names (whole words of a GFD product name); None for a name the tables do not know when
    --gpu-memory-mib gives the memory. A name of several products, or an unknown one alone, is an InputError
    listing what it could mean."""
    from gpufleet.nvidia.products import PRODUCTS, match_products

    found = match_products(gpu)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        options = ", ".join(f"{p.key} ({p.memory_mib} MiB)" for p in found)
        raise InputError(f"--gpu {gpu!r} names {len(found)} GPUs: {options}; name one of them (more of its "
                         "product name, e.g. the memory)")
    if memory_mib is not None:
        return None
    wanted = gpu.strip().replace(" ", "-").lower()
    partial = [p.key for p in PRODUCTS.values() if wanted and wanted in p.key.lower()]
    known = (f"it is only part of a word of {', '.join(partial)}" if partial else
             f"a name must match whole words of one of: {', '.join(PRODUCTS)}")
    raise InputError(f"--gpu {gpu!r} is no GPU gpufleet knows ({known}); for another GPU give "
                     "--gpu-memory-mib N, its memory as nvidia-smi reports it")


def command(
    model: Path = typer.Argument(..., metavar="MODEL", help="The model's config.json, or the checkpoint folder "
                                 "holding it (with model.safetensors.index.json for exact weight bytes)."),
    flags: list[str] = typer.Argument(None, metavar="[-- VLLM_FLAGS...]",
                                      help="The `vllm serve` flags, after `--` (e.g. -- --max-model-len 32768 "
                                           "--gpu-memory-utilization 0.95 -tp 2)."),
    gpu: str = typer.Option(None, "--gpu", help="The GPU: a GFD product name (NVIDIA-H100-80GB-HBM3) or whole words "
                            "of one that name it alone (H100-PCIe, 4090)."),
    gpu_memory_mib: int = typer.Option(None, "--gpu-memory-mib", min=1,
                                       help="The GPU's (or MIG instance's) memory as NVML reports it (nvidia-smi, "
                                            "or the GFD label nvidia.com/gpu.memory); default: the product's."),
    mig: str = typer.Option(None, "--mig", help="Run on a MIG instance of this profile, e.g. 3g.40gb."),
    mps_replicas: int = typer.Option(None, "--mps-replicas", help="Run on an MPS slice (the device plugin's "
                                     "replicas)."),
    vllm_version: str = typer.Option(None, "--vllm-version", help="The vLLM release, e.g. 0.11.0 (defaults and "
                                     "CUDA graph accounting follow it)."),
    index: Path = typer.Option(None, "--safetensors-index", help="model.safetensors.index.json, if not beside "
                               "config.json."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Show what vLLM takes on one GPU for a checkpoint and its flags, and whether it starts.

    The arithmetic is vLLM's V1 engine's (>= 0.8), and the figures are those its start-up log prints: weights,
    peak activation, non-torch memory, CUDA graphs, the KV cache in GiB and tokens, the maximum concurrency,
    and the largest --max-model-len it accepts.

    Exit 0 when it starts, 1 when vLLM would refuse to start (the reason in its own words, with fixes), 2 for
    unusable input.
    """
    from gpufleet.config.model import ModelSpec
    from gpufleet.config.model_serving import model_issues, served_model, vllm_args
    from gpufleet.nvidia.model_memory.verdict import assess

    doc = {"config": str(model)}
    if index is not None:
        doc["safetensorsIndex"] = str(index)
    if vllm_version is not None:
        doc["engineVersion"] = vllm_version
    try:
        spec = ModelSpec.model_validate(doc, context={"project_dir": Path.cwd()})
    except ValidationError as e:
        raise InputError("\n".join(f"{err['msg']}" if err["loc"][:1] == ("config",) else
                                   f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None
    argv = [str(f) for f in flags or []]
    args, problems = vllm_args(spec, "vllm", argv)
    if problems:
        raise InputError("\n".join(f"vLLM flags: {p}" for _, p in problems))
    if args is None:
        raise InputError(f"{model}: config.json has no max_position_embeddings; pass -- --max-model-len N")
    issues = model_issues("model", spec, 1 << 20, argv, "flags", "vllm")
    if issues:
        raise InputError("\n".join(f"{model}: {_flag_words(i.message)}" for i in issues))
    try:
        served = served_model(spec, "vllm", argv)
    except ValueError as e:
        raise InputError(f"{model}: {e}") from None
    device = _device(gpu, gpu_memory_mib, mig, mps_replicas)
    a = assess("", served, device)
    if as_json:
        typer.echo(json.dumps(_as_json(served, device, a), indent=2))
    else:
        typer.echo(_as_text(served, device, a))
    if a.error:
        raise typer.Exit(code=1)


def _flag_words(message: str) -> str:
    """A config issue in the flags' words (the command takes flags, not a model block)."""
    for key, flag in (("maxModelLen", "--max-model-len"), ("tensorParallel", "--tensor-parallel-size")):
        message = message.replace(key, flag)
    return message


def _gib(n: int) -> float:
    return round(n / (1 << 30), 2)


def _as_json(served, device, a) -> dict:
    s = a.startup
    return {"model": served.label, "device": device.what, "cudaTotalGiB": _gib(s.visible),
            "gpuMemoryUtilization": served.args.gpu_memory_utilization, "requestedGiB": _gib(s.requested),
            "weightsGiB": _gib(s.weights), "weightsSource": served.weights_source,
            "peakActivationGiB": _gib(s.activation), "nonTorchGiB": _gib(s.non_torch),
            "cudaGraphGiB": _gib(s.cudagraph), "availableKvCacheGiB": _gib(s.kv_available),
            "kvCacheTokens": s.kv_tokens, "maxModelLen": served.args.max_model_len,
            "maximumConcurrency": round(s.max_concurrency, 2), "maxNumSeqs": s.max_num_seqs,
            "largestMaxModelLen": s.largest_max_model_len,
            "suggestedMaxModelLen": _suggested(served, s),
            "starts": a.error is None, "refusal": s.refusal.message if s.refusal else None,
            "error": a.error, "warning": a.warning}


def _full_context(served, s) -> int | None:
    """The length the engine's search stopped at when one request of it fits: the model's full context (or
    --max-model-len, when the context is not known); None when the KV cache limits the length."""
    cap = max(served.args.max_model_len, served.max_position or 0)
    return cap if s.largest_max_model_len is not None and s.largest_max_model_len >= cap else None


def _suggested(served, s) -> int | None:
    """A --max-model-len to pass: none when the largest length is not the KV cache's limit."""
    from gpufleet.nvidia.model_memory.verdict import safe_length

    if not s.largest_max_model_len or _full_context(served, s) is not None:
        return None
    return safe_length(s.largest_max_model_len)


def _as_text(served, device, a) -> str:
    s = a.startup
    args = served.args
    rows = [("weights per GPU", s.weights, served.weights_source),
            ("requested", s.requested, f"{_gib(s.visible):.2f} GiB (CUDA total) x --gpu-memory-utilization "
                                       f"{args.gpu_memory_utilization}"),
            ("peak activation", s.activation, "computed" if served.activation_override is None else "declared"),
            ("non-torch", s.non_torch, f"tensor parallel {args.tensor_parallel}"),
            ("CUDA graphs", s.cudagraph, "eager" if args.enforce_eager else
             "counted in the budget" if s.cudagraph else "captured after the KV cache (before v0.21)"),
            ("KV cache", max(s.kv_available, 0), f"{served.kv.bytes_per_token:,} bytes per token")]
    version = ".".join(map(str, args.version)) if args.version else "unknown (pass --vllm-version)"
    lines = [f"{served.label} on {device.what}, as vLLM's V1 engine accounts for it (release {version}):"]
    lines += [f"  {name:<16} {_gib(n):>8.2f} GiB   {note}" for name, n, note in rows]
    if s.starts:
        lines.append(f"GPU KV cache size: {s.kv_tokens:,} tokens")
        lines.append(f"Maximum concurrency for {args.max_model_len:,} tokens per request: {s.max_concurrency:.2f}x")
    full = _full_context(served, s)
    if full is not None:
        what = "the model's full context" if served.max_position else "--max-model-len"
        lines.append(f"One request of {full:,} tokens ({what}) fits: no shorter --max-model-len is needed")
    elif s.largest_max_model_len:
        lines.append(f"Largest --max-model-len it accepts: {s.largest_max_model_len:,} (suggested, with a "
                     f"margin: {_suggested(served, s):,})")
    if a.error:
        lines.append(f"REFUSED: {a.error}")
    elif a.warning:
        lines.append(f"STARTS, WITH A WARNING: {a.warning}")
    else:
        lines.append("STARTS")
    return "\n".join(lines)
