"""GPU memory an LLM inference server needs per GPU, from the model's shape (docs/model-memory.md).

need per GPU = weights + KV cache (max_num_seqs sequences at max_model_len) + activation peak + non-torch

- weights = parameters x bytes per parameter / tensor_parallel (llm-d capacity_planner: model memory
  divided by tp x pp; bytes per dtype from its `precision_to_byte`: bf16/fp16 2, fp8/int8 1, int4 0.5).
- KV bytes per token = 2 (K and V) x layers x kv_heads_per_gpu x head_dim x KV bytes per element, with
  kv_heads_per_gpu = max(1, kv_heads // tensor_parallel) (vLLM `ModelConfig.get_num_kv_heads`: KV heads
  are replicated when there are fewer than TP ranks). The per-layer page is vLLM's
  `AttentionSpec.page_size_bytes` (2 x block_size x kv_heads x head_size x dtype size).
- tokens per sequence = max_model_len rounded up to whole KV blocks of 16 tokens (vLLM's CUDA default
  block size; `FullAttentionSpec.max_memory_usage_bytes` = cdiv(max_model_len, block_size) x page size).
- activation peak: llm-d's measured constants per architecture (`VALIDATED_ACTIVATION_PROFILES`), else
  5.5 GiB dense, 8.0 GiB mixture-of-experts (llm-d-benchmark config_explorer/capacity_planner.py,
  measured with vLLM v0.11.0 on H100); CUDA graphs are inside that figure (llm-d returns 0 for them).
- non-torch (CUDA context growth, NCCL, cuBLAS workspaces): 0.15 GiB at TP 1, 0.6 GiB at TP >= 2 (llm-d).

Pure: no I/O. `hf_config_facts` reads an already-parsed Hugging Face config.json dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from gpufleet.nvidia.mig_profiles import TABLES
from gpufleet.nvidia.products import GpuProduct

MIB = 1 << 20
GIB = 1 << 30

#: Bytes per weight element (llm-d `precision_to_byte`; NVIDIA NIM memory guide table).
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
#: KV cache element types (vLLM `--kv-cache-dtype`); `auto` is the model's compute dtype.
KV_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
#: torch_dtype / dtype values of a config.json -> our dtype names.
HF_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}

#: vLLM's KV block size on CUDA (CacheConfig `DEFAULT_BLOCK_SIZE`).
BLOCK_SIZE = 16
#: llm-d capacity_planner constants, GiB (config_explorer/src/config_explorer/capacity_planner.py).
ACTIVATION_GIB_BY_ARCHITECTURE = {
    "LlamaForCausalLM": 4.8, "Qwen2ForCausalLM": 5.6, "Qwen3ForCausalLM": 5.6,
    "PixtralForConditionalGeneration": 2.5, "Mistral3ForConditionalGeneration": 2.5,
}
ACTIVATION_GIB_DENSE = 5.5
ACTIVATION_GIB_MOE = 8.0
NON_TORCH_GIB_TP1 = 0.15
NON_TORCH_GIB_TPN = 0.6
#: vLLM's default `--gpu-memory-utilization` (vllm/config/cache.py, `Field(default=0.9)`).
VLLM_DEFAULT_UTILIZATION = 0.9
#: Share of the device the need may fill: vLLM's default utilization. The rest is the CUDA context (created
#: before vLLM measures free memory), driver reservations and allocator fragmentation.
USABLE_FRACTION = VLLM_DEFAULT_UTILIZATION
#: Architectures whose parameter count gpufleet derives from config.json (dense decoder, gated MLP).
DENSE_ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM")


@dataclass(frozen=True)
class ModelShape:
    """What the memory of a model depends on (a config.json's facts or the stack's `model:` block)."""

    parameters: int
    layers: int
    kv_heads: int
    head_dim: int
    dtype: str = "bf16"
    kv_cache_dtype: str = "auto"
    architecture: str | None = None
    moe: bool = False
    max_position_embeddings: int | None = None
    activation_bytes: int | None = None
    """Measured activation peak (vLLM log `torch peak memory increase`); default: llm-d's constants."""


@dataclass(frozen=True)
class Serving:
    """How the engine serves it."""

    max_model_len: int
    max_num_seqs: int = 1
    tensor_parallel: int = 1


@dataclass(frozen=True)
class Need:
    """Bytes per GPU, by part."""

    weights: int
    kv_cache: int
    activation: int
    non_torch: int
    kv_bytes_per_token: int
    tokens_per_sequence: int

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.activation + self.non_torch

    @property
    def mib(self) -> int:
        return -(-self.total // MIB)

    def describe(self, serving: Serving) -> str:
        return (f"{gib(self.total)} per GPU (weights {gib(self.weights)} + KV cache {gib(self.kv_cache)} for "
                f"{serving.max_num_seqs} x {serving.max_model_len} tokens + activation {gib(self.activation)} + "
                f"runtime {gib(self.non_torch)})")


def gib(n_bytes: float) -> str:
    """Two decimals, as vLLM's logs print GiB."""
    return f"{n_bytes / GIB:.2f} GiB"


def kv_element_bytes(shape: ModelShape) -> int:
    """KV bytes per element: `auto` is the compute dtype, 16-bit for quantized weights (activations stay 16-bit)."""
    if shape.kv_cache_dtype != "auto":
        return KV_DTYPE_BYTES[shape.kv_cache_dtype]
    return 4 if shape.dtype == "fp32" else 2


def kv_bytes_per_token(shape: ModelShape, tensor_parallel: int = 1) -> int:
    """2 x layers x max(1, kv_heads // tp) x head_dim x bytes per element, on one GPU."""
    heads = max(1, shape.kv_heads // tensor_parallel)
    return 2 * shape.layers * heads * shape.head_dim * kv_element_bytes(shape)


def tokens_per_sequence(max_model_len: int) -> int:
    return -(-max_model_len // BLOCK_SIZE) * BLOCK_SIZE


def weights_bytes(shape: ModelShape, tensor_parallel: int = 1) -> int:
    return math.ceil(shape.parameters * DTYPE_BYTES[shape.dtype] / tensor_parallel)


def activation_bytes(shape: ModelShape) -> int:
    if shape.activation_bytes is not None:
        return shape.activation_bytes
    gib_ = ACTIVATION_GIB_BY_ARCHITECTURE.get(shape.architecture or "")
    if gib_ is None:
        gib_ = ACTIVATION_GIB_MOE if shape.moe else ACTIVATION_GIB_DENSE
    return round(gib_ * GIB)


def non_torch_bytes(tensor_parallel: int) -> int:
    return round((NON_TORCH_GIB_TP1 if tensor_parallel == 1 else NON_TORCH_GIB_TPN) * GIB)


def need_per_gpu(shape: ModelShape, serving: Serving) -> Need:
    tp = serving.tensor_parallel
    per_token = kv_bytes_per_token(shape, tp)
    tokens = tokens_per_sequence(serving.max_model_len)
    return Need(weights_bytes(shape, tp), per_token * tokens * serving.max_num_seqs, activation_bytes(shape),
                non_torch_bytes(tp), per_token, tokens)


#: Relative difference between a declared gpu.memoryMiB and the computed need that is reported.
CONFLICT_TOLERANCE = 0.10


def conflict_message(name: str, declared_mib: int, need_mib: int) -> str | None:
    """A warning when a declared memoryMiB and the model's need (both per pod) disagree beyond the tolerance."""
    if abs(declared_mib - need_mib) <= CONFLICT_TOLERANCE * need_mib:
        return None
    return (f"{name}: gpu.memoryMiB {declared_mib} disagrees with the {need_mib} MiB the model needs (computed); "
            "the declared value is used")


# --- budgets and fixes -------------------------------------------------------------------------------------

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
        return "; or ".join(options)


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

#: vLLM flags that must agree with the `model:` block -> its YAML key.
VLLM_FLAGS = {"--max-model-len": "maxModelLen", "--max-num-seqs": "maxNumSeqs",
              "--tensor-parallel-size": "tensorParallel", "--kv-cache-dtype": "kvCacheDtype"}


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


# --- config.json ----------------------------------------------------------------------------------------------

class HfConfigError(ValueError):
    """A config.json lacks a field gpufleet needs (the message names it)."""


def _first(cfg: dict, *keys: str):
    return next((cfg[k] for k in keys if cfg.get(k) is not None), None)


def hf_config_facts(doc: dict) -> dict:
    """The facts of a parsed Hugging Face config.json: layers, kvHeads, headDim, hiddenSize, dtype,
    architecture, moe, maxPositionEmbeddings, and parameters for dense Llama-style architectures
    (DENSE_ARCHITECTURES; docs/model-memory.md). Multimodal configs use their `text_config`.
    Raises HfConfigError naming a missing field."""
    if not isinstance(doc, dict):
        raise HfConfigError("is not a JSON object")
    architectures = doc.get("architectures") or []
    arch = architectures[0] if isinstance(architectures, list) and architectures else None
    text = doc.get("text_config") if isinstance(doc.get("text_config"), dict) else doc
    layers = _first(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(text, "num_attention_heads", "n_head")
    hidden = _first(text, "hidden_size", "n_embd", "d_model")
    missing = [n for n, v in (("num_hidden_layers", layers), ("num_attention_heads", heads), ("hidden_size", hidden))
               if not isinstance(v, int) or isinstance(v, bool) or v < 1]
    if missing:
        raise HfConfigError(f"lacks {', '.join(missing)} (a positive integer)")
    if _first(text, "kv_lora_rank") is not None:
        raise HfConfigError("uses multi-head latent attention (kv_lora_rank), which gpufleet does not model; "
                            "declare the model's facts instead of config")
    kv = _first(text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num") or heads
    head_dim = _first(text, "head_dim") or hidden // heads
    facts = {"layers": layers, "kv_heads": kv, "head_dim": head_dim, "hidden_size": hidden, "architecture": arch,
             "moe": any(_first(text, k) for k in ("num_local_experts", "num_experts", "n_routed_experts",
                                                   "moe_num_experts"))}
    raw_dtype = _first(doc, "torch_dtype", "dtype") or _first(text, "torch_dtype", "dtype")
    if raw_dtype in HF_DTYPES:
        facts["dtype"] = HF_DTYPES[raw_dtype]
    if isinstance(text.get("max_position_embeddings"), int):
        facts["max_position_embeddings"] = text["max_position_embeddings"]
    if arch in DENSE_ARCHITECTURES and not facts["moe"]:
        params = dense_parameters(text, qkv_bias=arch == "Qwen2ForCausalLM")
        if params is not None:
            facts["parameters"] = params
    return facts


def dense_parameters(cfg: dict, qkv_bias: bool = False) -> int | None:
    """Parameters of a dense decoder with a gated MLP (Llama, Mistral, Qwen2): embeddings, q/k/v/o, gate/up/down,
    two RMSNorms per layer, the final norm, and lm_head unless tied. None when a field is missing."""
    need = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    if any(not isinstance(cfg.get(k), int) for k in need):
        return None
    vocab, h, layers = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
    q = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or q
    hd = cfg.get("head_dim") or h // q
    attn = 2 * h * q * hd + 2 * h * kv * hd + ((q + 2 * kv) * hd if qkv_bias else 0)
    mlp = 3 * h * cfg["intermediate_size"]
    per_layer = attn + mlp + 2 * h
    lm_head = 0 if cfg.get("tie_word_embeddings", True) else vocab * h
    return vocab * h + layers * per_layer + h + lm_head


# --- the manifest annotation ------------------------------------------------------------------------------

def to_annotation(label: str, shape: ModelShape, serving: Serving, vllm: bool) -> dict:
    """The facts `gpufleet check` needs to recompute the need on any node (JSON-able, camelCase)."""
    return {"model": label, "parameters": shape.parameters, "layers": shape.layers, "kvHeads": shape.kv_heads,
            "headDim": shape.head_dim, "dtype": shape.dtype, "kvCacheDtype": shape.kv_cache_dtype,
            "architecture": shape.architecture, "moe": shape.moe,
            "maxPositionEmbeddings": shape.max_position_embeddings, "activationBytes": shape.activation_bytes,
            "maxModelLen": serving.max_model_len, "maxNumSeqs": serving.max_num_seqs,
            "tensorParallel": serving.tensor_parallel, "vllm": vllm}


def from_annotation(doc: dict) -> tuple[str, ModelShape, Serving, bool]:
    """Inverse of to_annotation; ValueError naming the bad key."""
    def number(key: str, default=None, minimum: int = 1):
        value = doc.get(key, default)
        if value is None and default is None and key in ("activationBytes", "maxPositionEmbeddings"):
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < minimum:
            raise ValueError(f"{key}={value!r} is not an integer >= {minimum}")
        return int(value)

    dtype, kv = doc.get("dtype", "bf16"), doc.get("kvCacheDtype", "auto")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    if kv != "auto" and kv not in KV_DTYPE_BYTES:
        raise ValueError(f"kvCacheDtype={kv!r}; allowed: auto, {', '.join(KV_DTYPE_BYTES)}")
    shape = ModelShape(number("parameters"), number("layers"), number("kvHeads"), number("headDim"), dtype, kv,
                       doc.get("architecture"), bool(doc.get("moe")), number("maxPositionEmbeddings"),
                       number("activationBytes", minimum=0))
    serving = Serving(number("maxModelLen"), number("maxNumSeqs", 1), number("tensorParallel", 1))
    return str(doc.get("model") or ""), shape, serving, bool(doc.get("vllm"))
