"""A workload's `model:` block and its container's vLLM flags, made into the facts the engine's arithmetic
needs (gpufleet.nvidia.model_memory), and the problems of the block: missing facts, a config.json the
arithmetic cannot read, flags that disagree with the block, more parallel ranks than GPUs."""

from __future__ import annotations

from gpufleet.errors import ConfigIssue
from gpufleet.nvidia.model_memory.attention import AttentionConfigError, kv_layout
from gpufleet.nvidia.model_memory.checkpoint import CheckpointConfigError, read_checkpoint, weights_per_gpu
from gpufleet.nvidia.model_memory.flags import image_version, read_flags
from gpufleet.nvidia.model_memory.quantization import method_of
from gpufleet.nvidia.model_memory.served import ServedModel, activation_shape, from_facts
from gpufleet.nvidia.model_memory.vllm import MIB, VllmArgs, default_utilization

#: flag field (flags.read_flags) -> (the block's field, its YAML key).
_FLAG_FIELDS = {"max_model_len": ("max_model_len", "maxModelLen"), "max_num_seqs": ("max_num_seqs", "maxNumSeqs"),
                "max_num_batched_tokens": ("max_num_batched_tokens", "maxNumBatchedTokens"),
                "gpu_memory_utilization": ("gpu_memory_utilization", "gpuMemoryUtilization"),
                "kv_cache_memory_bytes": ("kv_cache_memory_mib", "kvCacheMemoryMiB"),
                "tensor_parallel": ("tensor_parallel", "tensorParallel"),
                "pipeline_parallel": ("pipeline_parallel", "pipelineParallel"),
                "data_parallel": ("data_parallel", "dataParallel"),
                "expert_parallel": ("expert_parallel", "expertParallel"),
                "enforce_eager": ("enforce_eager", "enforceEager"),
                "kv_cache_dtype": ("kv_cache_dtype", "kvCacheDtype"), "quantization": ("quantization", "quantization")}
_VLLM_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


def is_vllm(image: str) -> bool:
    return "vllm" in image.lower()


def _same(key: str, flag_value, field_value) -> bool:
    if key == "kv_cache_memory_bytes":
        return flag_value == field_value * MIB or flag_value // MIB == field_value
    if key == "kv_cache_dtype":
        norm = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}
        a, b = norm.get(flag_value, flag_value), norm.get(field_value, field_value)
        return a == b or (a.startswith("fp8") and b.startswith("fp8") and "fp8" in (a, b))
    if key == "quantization":
        return method_of(flag_value) == field_value
    return flag_value == field_value


def release(model, image: str) -> tuple[int, int] | None:
    """(major, minor) of the vLLM release: the block's engineVersion, else the image tag's."""
    version = model.engine_version if model is not None else None
    if not version:
        return image_version(image)
    major, minor = version.lstrip("v").split(".")[:2]  # engineVersion's pattern: [v]major.minor[.patch]
    return int(major), int(minor)


def _settings(model, argv, path: str = "model", image: str = "") -> tuple[dict, list[tuple[str, str]]]:
    """The block's serving settings with the flags filled in: ({field: value}, [(where, problem)])."""
    spelled: dict = {}
    flags, problems = read_flags(list(argv), spelled, release(model, image))
    out = [("args", p) for p in problems]
    settings = {}
    for key, (field, yaml_key) in _FLAG_FIELDS.items():
        written = field in model.model_fields_set
        value = getattr(model, field)
        if key in flags:
            if written and value is not None and not _same(key, flags[key], value):
                name, raw = spelled[key]
                out.append(("args", f"{name} {raw} disagrees with {path}.{yaml_key} {_shown(value)}; expected the "
                                    "same value (the GPU memory check uses model:)"))
            if not written or value is None:
                value = flags[key] if key != "kv_cache_memory_bytes" else flags[key] // MIB
        settings[field] = value
    for key in ("block_size", "chunked_prefill", "dtype", "cpu_offload_gb"):
        if key in flags:
            settings[key] = flags[key]
    return settings, out


def _shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def vllm_args(model, image: str, argv=(), path: str = "model") -> tuple[VllmArgs | None, list[tuple[str, str]]]:
    """The engine's flags for the block (None when maxModelLen cannot be known) and the problems."""
    s, problems = _settings(model, argv if is_vllm(image) else (), path, image)
    length = s["max_model_len"] or model.fact("max_position_embeddings")
    if length is None:
        return None, problems
    parsed = release(model, image)
    kv_mib = s["kv_cache_memory_mib"]
    args = VllmArgs(max_model_len=length, max_num_seqs=s["max_num_seqs"],
                    max_num_batched_tokens=s["max_num_batched_tokens"],
                    gpu_memory_utilization=s["gpu_memory_utilization"] or default_utilization(parsed),
                    kv_cache_memory_bytes=kv_mib * MIB if kv_mib else None,
                    tensor_parallel=s["tensor_parallel"], pipeline_parallel=s["pipeline_parallel"],
                    data_parallel=s["data_parallel"], expert_parallel=bool(s["expert_parallel"]),
                    enforce_eager=bool(s["enforce_eager"]), chunked_prefill=s.get("chunked_prefill", True),
                    block_size=s.get("block_size", 16), version=parsed)
    return args, problems


def served_model(model, image: str = "", argv=()) -> ServedModel:
    """The block as the engine's facts; ValueError naming the problem (model_issues reports it first)."""
    args, _ = vllm_args(model, image, argv)
    if args is None:
        raise ValueError("maxModelLen is not known")
    settings, _ = _settings(model, argv if is_vllm(image) else (), image=image)
    kv_dtype = settings["kv_cache_dtype"] or "auto"
    doc = model.hf_config
    by_hand = model.parameters is not None or doc is None
    if by_hand:
        head_dim = model.fact("head_dim") or model.fact("hidden_size") // model.fact("attention_heads")
        return from_facts(model.label, parameters=model.fact("parameters") or model.parameters,
                          layers=model.fact("layers"), kv_heads=model.fact("kv_heads"), head_dim=head_dim,
                          dtype=model.fact("dtype") or "bf16", args=args, kv_cache_dtype=kv_dtype,
                          moe=bool(model.fact("moe")), max_position=model.fact("max_position_embeddings"),
                          hidden_size=model.fact("hidden_size"), intermediate_size=model.intermediate_size,
                          vocab_size=model.vocab_size, activation_override=_activation(model))
    dtype = settings.get("dtype") or {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(model.dtype or "")
    quant = settings["quantization"] or ("fp8" if model.dtype == "fp8" else None)  # vLLM's online FP8
    try:
        ckpt = read_checkpoint(doc, model.index, dtype=None if dtype in (None, "auto") else dtype,
                               quantization=None if quant is None else method_of(quant))
        weights = weights_per_gpu(ckpt, args.tensor_parallel, args.pipeline_parallel, args.data_parallel,
                                  args.expert_parallel)
        element = 4 if dtype in ("float32", "float") else 2
        layout = kv_layout(doc, kv_dtype, element, args.tensor_parallel, args.pipeline_parallel)
    except (CheckpointConfigError, AttentionConfigError) as e:
        raise ValueError(f"config.json {e}") from None
    offload = int((settings.get("cpu_offload_gb") or 0) * (1 << 30))
    if model.layers or model.kv_heads or model.head_dim:  # facts by hand win over the file's
        layout = kv_layout({"num_hidden_layers": model.fact("layers"), "num_attention_heads": model.fact("kv_heads"),
                            "num_key_value_heads": model.fact("kv_heads"), "head_dim": model.fact("head_dim")},
                           kv_dtype, 2, args.tensor_parallel, args.pipeline_parallel)
    source = ckpt.source + (" (approximate: architecture counted by the generic rule)" if ckpt.approximate else "")
    return ServedModel(model.label, max(0, weights - offload), layout, activation_shape(doc, args.tensor_parallel),
                       args, model.fact("max_position_embeddings"), bool(model.fact("moe")), source,
                       _activation(model))


def _activation(model) -> int | None:
    return None if model.activation_mib is None else model.activation_mib * MIB


def model_issues(path: str, model, gpu_count: int, argv=(), args_path: str = "", image: str = "") -> list[ConfigIssue]:
    """Facts a workload's `model:` block (at YAML path `path`) lacks or contradicts; `argv`: the command line
    of its image (a vLLM image's flags must say what the block says, at `args_path`)."""
    source = " or in its config.json" if model.config else " (or set config: to a config.json)"
    issues = []
    if model.hf_config is None or model.parameters is not None:
        for key, name in (("parameters", "parameters"), ("layers", "layers"), ("kvHeads", "kv_heads")):
            if model.fact(name) is None:
                issues.append(ConfigIssue(f"{path}.{key}", f"required to compute GPU memory; expected it here{source}"))
        if model.fact("head_dim") is None and not (model.fact("hidden_size") and model.fact("attention_heads")):
            issues.append(ConfigIssue(f"{path}.headDim", f"required (or hiddenSize and attentionHeads){source}"))
    args, problems = vllm_args(model, image, argv, path.split(":", 1)[-1])
    issues += [ConfigIssue(args_path or path, f"{p}") for _, p in problems]
    settings, _ = _settings(model, argv if is_vllm(image) else (), image=image)
    if model.hf_config is not None and model.parameters is None and model.dtype in ("int8", "int4"):
        issues.append(ConfigIssue(f"{path}.dtype", f"{model.dtype} with config: the checkpoint's config.json decides "
                                  "the weights' width; allowed here: bf16, fp16, fp32, fp8 (vLLM's online "
                                  "--quantization fp8); for int8 or int4, point config: at a quantized checkpoint "
                                  "(AWQ, GPTQ, compressed-tensors, bitsandbytes)"))
    position = model.fact("max_position_embeddings")
    if args is None:
        issues.append(ConfigIssue(f"{path}.maxModelLen", "required: the longest request served (no "
                                  "maxPositionEmbeddings to default to)"))
    elif position and args.max_model_len > position:
        issues.append(ConfigIssue(f"{path}.maxModelLen", f"{args.max_model_len} exceeds the model's context "
                                  f"(maxPositionEmbeddings {position}); allowed: 1 to {position}"))
    tp, pp, dp = settings["tensor_parallel"], settings["pipeline_parallel"], settings["data_parallel"]
    if tp * pp * dp > gpu_count:
        issues.append(ConfigIssue(f"{path}.tensorParallel", f"tensorParallel {tp} x pipelineParallel {pp} x "
                                  f"dataParallel {dp} = {tp * pp * dp} GPUs, but gpu.count is {gpu_count}; "
                                  f"allowed: at most {gpu_count}"))
    heads = model.fact("attention_heads")
    if tp > 1 and heads and heads % tp:
        issues.append(ConfigIssue(f"{path}.tensorParallel", f"{heads} attention heads do not divide by {tp} (vLLM "
                                  f"refuses: 'Total number of attention heads ({heads}) must be divisible by "
                                  f"tensor parallel size ({tp})'); allowed: a divisor of {heads}"))
    if not issues:
        try:
            served_model(model, image, argv)
        except (ValueError, TypeError, ZeroDivisionError) as e:
            issues.append(ConfigIssue(f"{path}.config" if model.config else path, str(e)))
    return issues


def check_model(i: int, w) -> list[ConfigIssue]:
    """The problems of workload i's `model:` block (with its GPU request and its vLLM flags)."""
    from gpufleet.config._paths import yaml_path

    if w.gpu is None:
        return [ConfigIssue(yaml_path("workloads", i, "gpu"), "required with model: the model's memory is checked "
                            "against the GPU (or share) the workload requests")]
    argv = [*(w.command or []), *(w.args or [])]
    return model_issues(yaml_path("workloads", i, "model"), w.model, w.gpu.count, argv,
                        yaml_path("workloads", i, "args" if w.args else "command"), w.image)


def check_vllm_flags(i: int, w) -> list[ConfigIssue]:
    """A vLLM workload without a `model:` block: flags its release refuses (with the block, check_model
    reports them)."""
    from gpufleet.config._paths import yaml_path

    if not is_vllm(w.image) or w.model is not None:
        return []
    _, problems = read_flags([*(w.command or []), *(w.args or [])], None, image_version(w.image))
    where = yaml_path("workloads", i, "args" if w.args else "command")
    return [ConfigIssue(where, p) for p in problems]


def minimum_mib(served: ServedModel) -> int:
    """The least GPU memory per GPU the server starts in (weights, activation, runtime and one request),
    before the utilization's headroom."""
    s = served.on_device(0)
    return -(-(s.weights + s.activation + s.non_torch + s.cudagraph + s.one_sequence) // MIB)


#: Relative difference between a declared gpu.memoryMiB and the model's need that is reported.
CONFLICT_TOLERANCE = 0.10


def memory_conflicts(workloads) -> list[str]:
    """Warnings for workloads whose declared gpu.memoryMiB disagrees with their model's computed need."""
    from gpufleet.config._paths import yaml_path

    out = []
    for i, w in enumerate(workloads):
        if w.model is None or w.gpu is None or w.gpu.memory_mib is None:
            continue
        try:
            served = served_model(w.model, w.image, [*(w.command or []), *(w.args or [])])
        except (ValueError, TypeError, ZeroDivisionError):
            continue
        need = minimum_mib(served) * served.args.tensor_parallel
        if abs(w.gpu.memory_mib - need) > CONFLICT_TOLERANCE * need:
            out.append(f"{yaml_path('workloads', i)}: gpu.memoryMiB {w.gpu.memory_mib} disagrees with the {need} "
                       "MiB the model needs to start (computed); the declared value is used")
    return out
