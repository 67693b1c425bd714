"""The KV cache a model keeps per token, layer by layer, as vLLM V1 lays it out (docs/model-memory.md).

A layer holds one of three kinds of cache (vLLM `vllm/v1/kv_cache_interface.py`):
- full attention: K and V for every token, `2 x kv_heads_per_gpu x head_dim x bytes` per token;
- sliding-window attention: the same page, but only the last `window` tokens (plus one scheduler chunk) are
  kept (`SlidingWindowSpec.max_memory_usage_bytes`);
- multi-head latent attention (DeepSeek V2/V3/R1, Kimi K2): one latent of `kv_lora_rank + qk_rope_head_dim`
  values per token, the same on every tensor-parallel rank (`MLAAttentionSpec`, `num_kv_heads = 1`); the
  `fp8_ds_mla` cache is a fixed 656 bytes per token.

Under tensor parallelism each GPU keeps `max(1, kv_heads // tp)` heads (vLLM `ModelConfig.get_num_kv_heads`:
heads are replicated when there are fewer than ranks); under pipeline parallelism it keeps its stage's layers.

Which layers slide comes from config.json: `layer_types` (gpt-oss, Gemma 3, newer Qwen), else Gemma 2's
alternation, Gemma 3's `sliding_window_pattern`, or a `sliding_window` applying to every layer (Mistral-7B
v0.1), unless `use_sliding_window` is false (Qwen2 carries the key unused). Linear-attention and Mamba layers
keep a fixed state per sequence and are not counted here.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, overload

#: `--kv-cache-dtype` -> bytes per element (vLLM CacheDType); `auto` is the model's compute dtype.
KV_DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2,
                  "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 1}
#: vLLM's fixed per-token page of the fp8_ds_mla cache (DeepSeek V3.2), bytes per layer.
FP8_DS_MLA_BYTES = 656
#: config.json layer_types values that are attention with a KV cache (others: linear attention, Mamba).
_FULL = {"full_attention", "attention", "global_attention", "full"}
_SLIDING = {"sliding_attention", "sliding_window_attention", "local_attention", "sliding", "local"}


class AttentionConfigError(ValueError):
    """config.json lacks, or has a bad, attention field (the message names it)."""


@dataclass(frozen=True)
class KvLayout:
    """The KV cache of one GPU: bytes per token in one layer, and how many layers of each kind."""

    bytes_per_token_layer: int
    full_layers: int
    sliding_layers: tuple[tuple[int, int], ...] = ()
    """(window in tokens, layers) pairs, one per distinct window."""
    latent: bool = False
    """Multi-head latent attention: the same cache on every tensor-parallel rank."""

    @property
    def layers(self) -> int:
        return self.full_layers + sum(n for _, n in self.sliding_layers)

    @property
    def bytes_per_token(self) -> int:
        """Per GPU, as if every layer kept every token (what vLLM's 'GPU KV cache size' divides by)."""
        return self.bytes_per_token_layer * self.layers


def _text(cfg: dict) -> dict:
    inner = cfg.get("text_config")
    return inner if isinstance(inner, dict) else cfg


@overload
def _int(cfg: dict, *keys: str, required: Literal[True] = True) -> int: ...
@overload
def _int(cfg: dict, *keys: str, required: Literal[False]) -> int | None: ...
def _int(cfg: dict, *keys: str, required: bool = True) -> int | None:
    """The first of `keys` that is set, as a positive integer; None when none is set and it is not required."""
    for key in keys:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise AttentionConfigError(f"{key}={value!r} is not a positive integer")
        return value
    if required:
        raise AttentionConfigError(f"lacks {keys[0]} (a positive integer)")
    return None


def layer_windows(cfg: dict, layers: int) -> list[int | None]:
    """Each layer's sliding window (None: full attention; 0: no KV cache, e.g. linear attention)."""
    text = _text(cfg)
    window = text.get("sliding_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        window = None
    if text.get("use_sliding_window") is False:
        window = None
    types = text.get("layer_types")
    if isinstance(types, list) and types:
        if len(types) != layers:
            raise AttentionConfigError(f"layer_types has {len(types)} entries for {layers} layers")
        out: list[int | None] = []
        for i, kind in enumerate(types):
            if not isinstance(kind, str):
                raise AttentionConfigError(f"layer_types[{i}]={kind!r} is not a layer type name")
            if kind in _FULL:
                out.append(None)
            elif kind in _SLIDING:
                if window is None:
                    raise AttentionConfigError(f"layer_types names '{kind}' layers but sliding_window is not set")
                out.append(window)
            else:
                out.append(0)
        return out
    if window is None:
        return [None] * layers
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    pattern = text.get("sliding_window_pattern")
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern >= 1:  # Gemma 3: every pattern-th is full
        return [None if (i + 1) % pattern == 0 else window for i in range(layers)]
    if model_type.startswith("gemma2") or model_type == "gemma2_text":  # Gemma 2 alternates, sliding first
        return [window if i % 2 == 0 else None for i in range(layers)]
    if model_type.startswith("gemma3"):  # Gemma 3 default pattern: 5 sliding, then 1 full
        return [None if (i + 1) % 6 == 0 else window for i in range(layers)]
    return [window] * layers


def kv_layout(cfg: dict, kv_cache_dtype: str = "auto", model_dtype_bytes: int = 2, tensor_parallel: int = 1,
              pipeline_parallel: int = 1) -> KvLayout:
    """The per-GPU KV layout of a parsed config.json; AttentionConfigError naming a missing or bad field."""
    if not isinstance(cfg, dict):
        raise AttentionConfigError("is not a JSON object")
    text = _text(cfg)
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers")
    if not isinstance(kv_cache_dtype, str) or (kv_cache_dtype != "auto" and kv_cache_dtype not in KV_DTYPE_BYTES):
        raise AttentionConfigError(f"kv cache dtype {kv_cache_dtype!r}; allowed: auto, {', '.join(KV_DTYPE_BYTES)}")
    element = model_dtype_bytes if kv_cache_dtype == "auto" else KV_DTYPE_BYTES[kv_cache_dtype]
    windows = layer_windows(cfg, layers)
    stage = _stage_layers(windows, pipeline_parallel)
    rank = _int(text, "kv_lora_rank", required=False)
    if rank is not None:
        rope = _int(text, "qk_rope_head_dim")
        per_layer = FP8_DS_MLA_BYTES if kv_cache_dtype == "fp8_ds_mla" else (rank + rope) * element
        return KvLayout(per_layer, sum(1 for w in stage if w is None), _sliding(stage), latent=True)
    heads = _int(text, "num_attention_heads", "n_head")
    kv_heads = _int(text, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                    required=False) or heads
    head_dim = _int(text, "head_dim", required=False)
    if head_dim is None:
        head_dim = _int(text, "hidden_size", "n_embd", "d_model") // heads
        if head_dim < 1:
            raise AttentionConfigError(f"hidden_size is smaller than num_attention_heads ({heads}); expected "
                                       "head_dim, or a hidden_size of at least one value per head")
    per_layer = 2 * max(1, kv_heads // tensor_parallel) * head_dim * element
    return KvLayout(per_layer, sum(1 for w in stage if w is None), _sliding(stage))


def _stage_layers(windows: list[int | None], pipeline_parallel: int) -> list[int | None]:
    """The layers of the most loaded pipeline stage (vLLM `get_pp_indices`: an even split, the remainder on
    the later stages)."""
    n = len(windows)
    if pipeline_parallel <= 1:
        return [w for w in windows if w != 0]
    base, extra = divmod(n, pipeline_parallel)
    best: list[int | None] = []
    start = 0
    for stage in range(pipeline_parallel):
        size = base + (1 if stage >= pipeline_parallel - extra else 0)
        part = [w for w in windows[start:start + size] if w != 0]
        start += size
        if len(part) > len(best):
            best = part
    return best


def _sliding(windows: list[int | None]) -> tuple[tuple[int, int], ...]:
    counts: dict[int, int] = {}
    for w in windows:
        if w is not None:
            counts[w] = counts.get(w, 0) + 1
    return tuple(sorted(counts.items()))
