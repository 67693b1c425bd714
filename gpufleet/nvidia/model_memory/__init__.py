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

Pure: no I/O. Budgets and fixes: gpufleet.nvidia.model_budget; config.json facts: gpufleet.nvidia.hf_config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIB = 1 << 20
GIB = 1 << 30

#: Bytes per weight element (llm-d `precision_to_byte`; NVIDIA NIM memory guide table).
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
#: KV cache element types (vLLM `--kv-cache-dtype`); `auto` is the model's compute dtype.
KV_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

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
