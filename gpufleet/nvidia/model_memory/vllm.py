"""Will vLLM start, and how many full-length sequences will it hold? The V1 engine's own arithmetic (vLLM >= 0.8).

At start-up each worker (vllm/v1/worker/gpu_worker.py, vllm/utils/mem_utils.py, vllm/v1/core/kv_cache_utils.py):
1. reads the device total from the CUDA runtime (`cudaMemGetInfo`: the MIG instance on MIG; a whole GPU shows
   about 0.4 GiB less than NVML's total) and reserves `requested = total x --gpu-memory-utilization`;
2. loads the weights (more than the device holds: CUDA out of memory);
3. profiles one forward pass of `max_num_batched_tokens` tokens and a sampler pass over `max_num_seqs`
   sequences; the torch peak of that pass is the activation;
4. counts memory outside torch (CUDA context growth, NCCL and custom all-reduce buffers), and, where the
   version profiles them, the CUDA graphs;
5. gives the rest of `requested` to the KV cache; `--kv-cache-memory` replaces that budget outright;
6. refuses unless the KV cache holds one request of `max_model_len` tokens (`check_enough_kv_cache_memory`),
   then logs 'GPU KV cache size: N tokens' and 'Maximum concurrency for L tokens per request: X'.

`max_num_seqs` is not part of the start check: past the concurrency vLLM prints, requests queue or are preempted.

The activation model is structural: the largest tensors of the profiled pass are the MLP's input, gated
intermediate and output for `max_num_batched_tokens` tokens (16-bit), and the sampler's float32 copies of the
logits of `max_num_seqs` sequences. SAMPLER_BYTES_PER_LOGIT is calibrated on llm-d's measured profiles
(Llama 4.8 GiB, Qwen2 5.6 GiB on H100 with the defaults: 8,192 tokens, 1,024 sequences; capacity_planner.py)
and checked against the cited vLLM logs in tests/fixtures/vllm-logs/.

Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.nvidia.model_memory.attention import KvLayout

GIB = 1 << 30
MIB = 1 << 20

ENGINE = "vllm"
#: `--gpu-memory-utilization` default (vllm/config/cache.py `Field(default=0.9, gt=0, le=1)`); 0.92 from v0.21,
#: where CUDA graph memory counts in the budget (vllm-project/vllm#38284).
DEFAULT_UTILIZATION = 0.9
DEFAULT_UTILIZATION_FROM_0_21 = 0.92
#: KV block size on CUDA (CacheConfig `DEFAULT_BLOCK_SIZE`).
BLOCK_SIZE = 16
#: NVML total minus the CUDA runtime's total on a whole GPU: H100 81,559 MiB (79.65 GiB) vs 79.18-79.19 GiB in
#: vLLM's 'Free memory on device (x/79.18 GiB)' lines; RTX 3090 24,576 MiB vs 'a total capacity of 23.54 GiB'
#: (tests/fixtures/vllm-logs). vLLM multiplies the utilization by the smaller one.
CUDA_RESERVED_BYTES = round(0.45 * GIB)
#: Defaults of `vllm serve` (arg_utils `_set_default_args`): large devices (>= 70 GiB, not A100) batch more.
LARGE_DEVICE_BYTES = 70 * GIB
SERVE_BATCHED_TOKENS = {"large": 8192, "small": 2048}
SERVE_MAX_NUM_SEQS = {"large": 1024, "small": 256}
#: Bytes per logit the profiled sampler pass peaks at: the float32 logits, the top-k/top-p sort's values and
#: int64 indices and the probabilities, for max_num_seqs rows of the vocabulary (`_dummy_sampler_run` runs
#: with top_k = vocab - 1). 32 matches llm-d's profiles (Llama 4.76 GiB, Qwen3-32B 5.64 GiB, gpt-oss-20b
#: 7.38 GiB on H100, 8,192 tokens and 1,024 sequences); logs of releases from v0.12 on show about 8-24
#: (tests/fixtures/vllm-logs: RTX 3090 v0.17.1, A100 v0.15.1 and v0.19.0), taken as 14.
SAMPLER_BYTES_PER_LOGIT = 32
SAMPLER_BYTES_PER_LOGIT_FROM_0_12 = 14
#: Memory outside torch (llm-d measured 0.13 GiB at TP 1 and 0.55 GiB at TP 2; custom all-reduce and NCCL
#: buffers appear with a second rank).
NON_TORCH_TP1 = round(0.15 * GIB)
NON_TORCH_TPN = round(0.6 * GIB)
#: CUDA graph pool where the version counts it in the budget (profiling on by default from v0.21,
#: vllm-project/vllm#38284; 0.09-0.22 GiB in the cited records). Before, graphs are captured after the KV
#: cache is allocated, out of the utilization's headroom.
CUDAGRAPH_BYTES = round(0.2 * GIB)
CUDAGRAPH_PROFILED_FROM = (0, 21)


def default_utilization(version: tuple[int, int] | None) -> float:
    return DEFAULT_UTILIZATION_FROM_0_21 if version is not None and version >= CUDAGRAPH_PROFILED_FROM \
        else DEFAULT_UTILIZATION


@dataclass(frozen=True)
class VllmArgs:
    """The `vllm serve` flags the memory depends on (None: the engine's default)."""

    max_model_len: int
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float = DEFAULT_UTILIZATION
    kv_cache_memory_bytes: int | None = None
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    expert_parallel: bool = False
    enforce_eager: bool = False
    chunked_prefill: bool = True
    block_size: int = BLOCK_SIZE
    version: tuple[int, int] | None = None


@dataclass(frozen=True)
class ActivationShape:
    """What the profiled forward pass allocates per token, per GPU."""

    hidden_size: int
    mlp_width: int
    """The MLP's intermediate width on one GPU (MoE: the routed experts a token visits plus shared ones)."""
    vocab_size: int
    experts_per_token: int = 0
    """MoE: the fused kernel also keeps each routed expert's output (top_k x hidden) per token."""


@dataclass(frozen=True)
class Refusal:
    kind: str
    """`weights` (CUDA out of memory loading them), `no_cache` (nothing left for KV blocks) or `one_sequence`."""
    message: str


@dataclass(frozen=True)
class Startup:
    """One GPU of the server at start-up, as vLLM accounts for it (bytes)."""

    visible: int
    requested: int
    weights: int
    activation: int
    non_torch: int
    cudagraph: int
    kv_available: int
    kv_tokens: int
    max_concurrency: float
    one_sequence: int
    """KV bytes one request of max_model_len tokens needs."""
    max_num_seqs: int
    largest_max_model_len: int | None
    """The largest max_model_len the KV cache holds (None: not even one token)."""
    refusal: Refusal | None = None

    @property
    def starts(self) -> bool:
        return self.refusal is None

    @property
    def short_of_seqs(self) -> bool:
        """Starts, but holds fewer full-length sequences than max_num_seqs."""
        return self.starts and self.max_concurrency < self.max_num_seqs


def gib(n: float) -> str:
    """Two decimals, as vLLM's logs print GiB."""
    return f"{n / GIB:.2f} GiB"


def cuda_visible_bytes(nvml_mib: int, mig: bool) -> int:
    """What `cudaMemGetInfo` reports as the total: a MIG instance as labelled, a whole GPU minus the reserve."""
    total = nvml_mib * MIB
    return total if mig else max(0, total - CUDA_RESERVED_BYTES)


def _size(visible: int, mig: bool) -> str:
    return "large" if visible >= LARGE_DEVICE_BYTES and not mig else "small"


def default_batched_tokens(args: VllmArgs, visible: int, mig: bool, a100: bool = False) -> int:
    if args.max_num_batched_tokens is not None:
        tokens = args.max_num_batched_tokens
    else:
        tokens = SERVE_BATCHED_TOKENS["small" if a100 else _size(visible, mig)]
    if not args.chunked_prefill:
        tokens = max(tokens, args.max_model_len)
    return tokens


def default_max_num_seqs(args: VllmArgs, visible: int, mig: bool, a100: bool = False) -> int:
    if args.max_num_seqs is not None:
        return args.max_num_seqs
    return SERVE_MAX_NUM_SEQS["small" if a100 else _size(visible, mig)]


def activation_bytes(shape: ActivationShape, tokens: int, seqs: int, version: tuple[int, int] | None = None) -> int:
    """Peak of the profiled pass: the MLP's tensors for `tokens` tokens, and the sampler over `seqs` logits rows."""
    mlp = tokens * ((2 + shape.experts_per_token) * shape.hidden_size + 3 * shape.mlp_width) * 2
    per_logit = SAMPLER_BYTES_PER_LOGIT_FROM_0_12 if version is not None and version >= (0, 12) \
        else SAMPLER_BYTES_PER_LOGIT
    return mlp + min(seqs, tokens) * shape.vocab_size * per_logit


def non_torch_bytes(tensor_parallel: int, pipeline_parallel: int = 1, data_parallel: int = 1) -> int:
    return NON_TORCH_TP1 if tensor_parallel * pipeline_parallel * data_parallel == 1 else NON_TORCH_TPN


def cudagraph_bytes(args: VllmArgs) -> int:
    if args.enforce_eager or args.version is None or args.version < CUDAGRAPH_PROFILED_FROM:
        return 0
    return CUDAGRAPH_BYTES


# --- the KV cache: groups, blocks, the start check ------------------------------------------------------------

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _layer_usage_blocks(window: int | None, max_model_len: int, batched: int, block: int) -> int:
    """Blocks one layer needs for one request (FullAttentionSpec / SlidingWindowSpec.max_memory_usage_bytes)."""
    if window is None:
        return _cdiv(max_model_len, block)
    return _cdiv(min(window - 1 + batched, max_model_len), block) + 1


def _groups(kv: KvLayout) -> tuple[int, list[tuple[int | None, int]]]:
    """(layers per group, [(window, groups of that kind)]): vLLM's grouping of a hybrid model's layers into
    groups of equal size, so one block pool serves them all
    (kv_cache_utils `_get_kv_cache_groups_uniform_page_size`)."""
    kinds: list[tuple[int | None, int]] = [(None, kv.full_layers)] if kv.full_layers else []
    kinds += list(kv.sliding_layers)
    if len(kinds) <= 1:
        return (kinds[0][1] if kinds else 0), [(kinds[0][0], 1)] if kinds else []
    counts = [n for _, n in kinds]
    size = min(counts)
    if max(counts) < 1.5 * size:
        size = max(counts)
    return size, [(w, _cdiv(n, size)) for w, n in kinds]


def one_sequence_bytes(kv: KvLayout, max_model_len: int, batched: int, block: int) -> int:
    """What the start check asks for: every layer's cache for one request of max_model_len tokens."""
    page = kv.bytes_per_token_layer * block
    usage = kv.full_layers * _layer_usage_blocks(None, max_model_len, batched, block)
    usage += sum(n * _layer_usage_blocks(w, max_model_len, batched, block) for w, n in kv.sliding_layers)
    return usage * page


def kv_capacity(kv: KvLayout, available: int, max_model_len: int, batched: int, block: int) -> tuple[int, float]:
    """(the 'GPU KV cache size' tokens, the 'Maximum concurrency' for max_model_len) vLLM logs."""
    size, groups = _groups(kv)
    page = kv.bytes_per_token_layer * block
    if size == 0 or available <= 0:
        return 0, 0.0
    blocks = available // (page * size)
    n_groups = sum(n for _, n in groups)
    tokens = blocks // n_groups * block
    per_request = sum(n * _layer_usage_blocks(w, max_model_len, batched, block) for w, n in groups)
    return tokens, blocks / per_request


def largest_accepted_len(kv: KvLayout, available: int, batched: int, block: int, limit: int) -> int | None:
    """The largest max_model_len <= limit whose one request fits `available` (vLLM's binary search)."""
    if available <= 0 or one_sequence_bytes(kv, 1, batched, block) > available:
        return None
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if one_sequence_bytes(kv, mid, batched, block) <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo


# --- the start-up --------------------------------------------------------------------------------------------

def startup(weights: int, kv: KvLayout, shape: ActivationShape, args: VllmArgs, visible: int, *, mig: bool = False,
            a100: bool = False, max_position: int | None = None, activation: int | None = None) -> Startup:
    """One GPU's start-up, with `weights` the bytes it loads and `visible` the CUDA total it sees."""
    requested = math.floor(visible * args.gpu_memory_utilization)
    batched = default_batched_tokens(args, visible, mig, a100)
    seqs = default_max_num_seqs(args, visible, mig, a100)
    if activation is None:
        activation = activation_bytes(shape, batched, seqs, args.version)
    non_torch = non_torch_bytes(args.tensor_parallel, args.pipeline_parallel, args.data_parallel)
    graphs = cudagraph_bytes(args)
    if args.kv_cache_memory_bytes is not None:
        available = args.kv_cache_memory_bytes
    else:
        available = requested - weights - activation - non_torch - graphs
    one = one_sequence_bytes(kv, args.max_model_len, batched, args.block_size)
    tokens, concurrency = kv_capacity(kv, available, args.max_model_len, batched, args.block_size)
    limit = max(args.max_model_len, max_position or 0)
    largest = largest_accepted_len(kv, available, batched, args.block_size, limit)
    refusal = _refusal(weights, visible, available, one, args, largest, weights + activation + non_torch + graphs)
    return Startup(visible, requested, weights, activation, non_torch, graphs, available, tokens, concurrency, one,
                   seqs, largest, refusal)


def _refusal(weights: int, visible: int, available: int, one: int, args: VllmArgs, largest: int | None,
             fixed: int) -> Refusal | None:
    if weights > visible:
        return Refusal("weights", f"CUDA out of memory while loading the model: its weights need {gib(weights)} per "
                                  f"GPU and the device has {gib(visible)} in all")
    if args.kv_cache_memory_bytes is not None and fixed + available > visible:
        return Refusal("no_cache", f"CUDA out of memory allocating the KV cache: --kv-cache-memory {gib(available)} "
                                   f"and {gib(fixed)} for weights, activation and runtime exceed the device's "
                                   f"{gib(visible)}")
    if available <= 0:
        return Refusal("no_cache", "No available memory for the cache blocks. Try increasing "
                                   "`gpu_memory_utilization` when initializing the engine.")
    if one > available:
        estimate = (f" Based on the available memory, the estimated maximum model length is {largest}."
                    if largest else "")
        return Refusal("one_sequence", f"To serve at least one request with the models's max seq len "
                                       f"({args.max_model_len}), ({one / GIB:.2f} GiB KV cache is needed, which is "
                                       f"larger than the available KV cache memory ({available / GIB:.2f} GiB)."
                                       f"{estimate} Try increasing `gpu_memory_utilization` or decreasing "
                                       "`max_model_len` when initializing the engine.")
    return None
