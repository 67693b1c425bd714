"""Weight bytes of a Hugging Face checkpoint, and the share vLLM (V1, >= 0.8) holds on each GPU (pure: no I/O).

`read_checkpoint(config, index)` counts every tensor of the model from its parsed config.json, per module,
the way the transformers modeling files define them (commit references beside each rule), in the bytes
the checkpoint's quantization stores (.quantization). With the parsed `model.safetensors.index.json`,
its `metadata.total_size` (exact stored bytes) rescales the counts so they add up to it.
`weights_per_gpu(ckpt, tp, pp, dp, ep)` splits those bytes the way vLLM's layers shard them:
- VocabParallelEmbedding / ParallelLMHead pad the vocabulary to a multiple of 64 (`DEFAULT_VOCAB_PADDING_SIZE`,
  `pad_vocab_size`) and give each TP rank padded / TP rows (vllm/model_executor/layers/vocab_parallel_embedding.py,
  commit 00db011).
- QKVParallelLinear splits heads by TP; with TP >= KV heads each rank keeps one KV head (`num_kv_head_replicas`,
  vllm/model_executor/layers/linear.py).
- FusedMoE shards each expert over TP x DP ranks (`flatten_tp_across_dp`), or with expert parallel gives each
  of the TP x DP ranks ceil(E / (TP x DP)) whole experts (vllm/model_executor/layers/fused_moe/config.py).
- MLA's q_a_proj / kv_a_proj_with_mqa and the MoE routers are ReplicatedLinear (vllm/model_executor/models/
  deepseek_v2.py); counted in `replicated`.
- Pipeline stages take layers by `get_pp_indices` (vllm/distributed/utils.py: even split, the remainder
  one each to the stages before the last); the first stage holds the embedding, the last the lm_head (an own
  copy when tied and PP > 1: the tied tensor lives only on the first stage).
- DeepSeek's MTP layers (`num_nextn_predict_layers`) are in the checkpoint, but the main model's load_weights
  skips them (`get_spec_layer_idx_from_weight_name`); they count in `not_loaded`, not on the GPU.
- MXFP4 experts (gpt-oss) are padded for the MoE kernel (vllm/model_executor/layers/quantization/mxfp4.py,
  commit 007d500, `Mxfp4MoEMethod.create_weights`): Marlin (A100, and H100 without triton_kernels) rounds the
  per-rank intermediate size up to 128 and hidden to 256; FlashInfer SM90 both to 128; SM100 both to 256;
  the triton path the intermediate to 64. gpt-oss-20b (hidden 2880) stores 13.76 GB but loads 13.67 GiB
  with Marlin (vLLM logged 13.72 GiB on an A100).
- Checkpoints stored in fp32 load in 16 bits (vLLM's dtype "auto" never keeps float32).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace

from gpufleet.nvidia.model_memory.quantization import CheckpointConfigError, Scheme, read_scheme

__all__ = ["Checkpoint", "CheckpointConfigError", "WeightGroups", "read_checkpoint", "weights_per_gpu"]

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "bf16": 2, "fp16": 2,
                "fp32": 4, "auto": 2}
#: model_type values whose config class defaults tie_word_embeddings to True (transformers Gemma*Config).
_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text")
#: model types counted by a rule checked against transformers' modeling file (others: generic, approximate).
_KNOWN = ("llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2",
          "deepseek_v3", "gpt_oss", "gemma", "gemma2", "gemma3", "gemma3_text", "phi3", "gemma3_vision")
#: model types whose q/k/v projections always carry biases (modeling_qwen2.py, modeling_qwen2_moe.py, Qwen2-VL).
_QKV_BIAS = ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl")
_VOCAB_PAD = 64
_MXFP4_PAD = {"marlin": (128, 256), "triton": (64, 1), "flashinfer-sm90": (128, 128),
              "flashinfer-sm100": (256, 256)}


@dataclass(frozen=True)
class WeightGroups:
    """Bytes by how vLLM shards them (all layers, all experts)."""

    embedding: int = 0     # embed_tokens: vocab-parallel, first PP stage
    lm_head: int = 0       # 0 when tied; vocab-parallel, last PP stage
    attention: int = 0     # q/o projections (MLA: q_b, kv_b, o), their biases, sinks: split by TP
    kv_projection: int = 0  # k/v projections: split by TP, one KV head per rank when kv_heads < TP
    dense_mlp: int = 0     # dense MLPs and shared experts: split by TP
    experts: int = 0       # routed experts: over TP x DP ranks
    replicated: int = 0    # norms, routers, MLA's q_a/kv_a projections: whole on every rank
    vision: int = 0        # vision tower and projector of a multimodal model (split by TP, first stage)
    layers: int = 0        # decoder layers (for the PP split)

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self) if f.name != "layers")


@dataclass(frozen=True)
class Checkpoint:
    architecture: str | None
    quantization: str | None   # one of quantization.METHODS, or None
    parameters: int            # all parameters vLLM loads (every expert), MTP layers excluded
    groups: WeightGroups       # bytes as stored
    total_bytes: int           # groups.total (+ not_loaded == metadata.total_size when an index is given)
    source: str                # 'safetensors index total_size' or 'config.json'
    approximate: bool = False  # an architecture counted by the generic decoder rule
    not_loaded: int = 0        # stored bytes vLLM does not load for serving (DeepSeek MTP layers)
    gpu: WeightGroups = WeightGroups()  # bytes once loaded (fp32 checkpoints load as 16-bit)
    vocab_size: int = 0
    kv_heads: int = 0          # 0 for MLA (its latent KV projection is replicated)
    experts: int = 0
    tied: bool = False
    moe_layers: tuple[bool, ...] = ()
    #: (group, bytes in a dense layer, bytes in an MoE layer), loaded bytes
    layer_bytes: tuple[tuple[str, int, int], ...] = ()
    #: hidden, expert intermediate size: the MXFP4 padding needs them
    expert_dims: tuple[int, int] = (0, 0)


def _int(cfg: dict, key: str, where: str, default: int | None = None, lo: int = 1, hi: int = 1 << 20) -> int:
    value = cfg.get(key)
    if value is None:
        if default is None:
            raise CheckpointConfigError(f"config.json lacks {where}{key}")
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise CheckpointConfigError(f"config.json {where}{key} must be an integer in [{lo}, {hi}], not {value!r}")
    return value


def _flag(cfg: dict, key: str, where: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CheckpointConfigError(f"config.json {where}{key} must be true or false, not {value!r}")
    return value


_LAYER0 = "model.layers.0."


class _Count:
    """Tensors of a model: (group, where, params, bytes) with where 'model', 'dense', 'moe', 'all' or 'mtp'."""

    def __init__(self, scheme: Scheme) -> None:
        self.scheme, self.layers = scheme, 1
        self.rows: list[tuple[str, str, int, float]] = []
        #: an ignore list naming single layers (Meta's Llama-3.1-405B-FP8 keeps layers 0 and 125 whole):
        #: a layer's module is then sized layer by layer, and the row carries the mean
        self.per_layer = any(re.search(r"layers\.\d+\.", entry) for entry in scheme.ignore)

    def matrix(self, group: str, where: str, name: str, rows: int, cols: int, n: int = 1) -> None:
        if self.per_layer and name.startswith(_LAYER0) and where in ("all", "dense", "moe"):
            rest = name[len(_LAYER0):]
            total = sum(self.scheme.matrix_bytes(rows, cols, f"model.layers.{i}.{rest}") for i in range(self.layers))
            self.rows.append((group, where, rows * cols * n, total / self.layers * n))
            return
        self.rows.append((group, where, rows * cols * n, self.scheme.matrix_bytes(rows, cols, name) * n))

    def vector(self, group: str, where: str, size: int, n: int = 1, nbytes: int | None = None) -> None:
        self.rows.append((group, where, size * n, size * n * (nbytes or self.scheme.dtype_bytes)))


def _decoder(c: _Count, t: dict, where: str, model_type: str) -> tuple[int, list[bool]]:
    """Count the decoder's tensors into `c`; returns (vocab size, which layers are MoE)."""
    h = _int(t, "hidden_size", where, hi=1 << 17)
    layers = _int(t, "num_hidden_layers", where, hi=4096)
    c.layers = layers
    vocab = _int(t, "vocab_size", where, hi=1 << 24)
    heads = _int(t, "num_attention_heads", where, hi=4096)
    kv = _int(t, "num_key_value_heads", where, default=heads, hi=heads)
    head_dim = _int(t, "head_dim", where, default=h // heads, hi=1 << 14)
    experts = next((_int(t, k, where, lo=0, hi=1 << 16) for k in ("n_routed_experts", "num_local_experts",
                                                                   "num_experts") if t.get(k) is not None), 0)
    moe_inter = _int(t, "moe_intermediate_size", where, default=0, lo=0) if experts else 0
    inter = _int(t, "intermediate_size", where, default=0 if experts and moe_inter else None, lo=0)
    moe_inter = moe_inter or inter
    layer_id = _LAYER0

    # Which layers route to experts: DeepSeek (modeling_deepseek_v3.py: first_k_dense_replace, moe_layer_freq),
    # Qwen2/3-MoE (modeling_qwen3_moe.py: mlp_only_layers, decoder_sparse_step), Mixtral / gpt-oss: all.
    first_dense = _int(t, "first_k_dense_replace", where, default=0, lo=0, hi=layers)
    freq = _int(t, "moe_layer_freq", where, default=1)
    step = _int(t, "decoder_sparse_step", where, default=1)
    only_dense = t.get("mlp_only_layers") or []
    if not isinstance(only_dense, list):
        raise CheckpointConfigError(f"config.json {where}mlp_only_layers must be a list")
    moe = [bool(experts) and i >= first_dense and i % freq == 0 and (i + 1) % step == 0 and i not in only_dense
           for i in range(layers)]

    # Attention
    if t.get("kv_lora_rank") is not None:  # MLA (modeling_deepseek_v3.py DeepseekV3Attention)
        kv_rank = _int(t, "kv_lora_rank", where)
        rope = _int(t, "qk_rope_head_dim", where)
        nope = _int(t, "qk_nope_head_dim", where)
        v_dim = _int(t, "v_head_dim", where)
        q_rank = _int(t, "q_lora_rank", where, default=0, lo=0)
        attn = layer_id + "self_attn."
        if q_rank:
            c.matrix("replicated", "all", attn + "q_a_proj", q_rank, h)
            c.vector("replicated", "all", q_rank)
            c.matrix("attention", "all", attn + "q_b_proj", heads * (nope + rope), q_rank)
        else:
            c.matrix("attention", "all", attn + "q_proj", heads * (nope + rope), h)
        c.matrix("replicated", "all", attn + "kv_a_proj_with_mqa", kv_rank + rope, h)
        c.vector("replicated", "all", kv_rank)
        c.matrix("attention", "all", attn + "kv_b_proj", heads * (nope + v_dim), kv_rank)
        c.matrix("attention", "all", attn + "o_proj", h, heads * v_dim)
    else:
        attn = layer_id + "self_attn."
        c.matrix("attention", "all", attn + "q_proj", heads * head_dim, h)
        c.matrix("kv_projection", "all", attn + "k_proj", kv * head_dim, h, 2)
        c.matrix("attention", "all", attn + "o_proj", h, heads * head_dim)
        # q/k/v biases: Qwen2 and Qwen2-MoE always (modeling_qwen2.py), others with attention_bias
        # (gpt-oss sets it and has an o_proj bias too, modeling_gpt_oss.py).
        bias = _flag(t, "attention_bias", where, model_type in _QKV_BIAS)
        if bias or model_type in _QKV_BIAS:
            c.vector("attention", "all", heads * head_dim)
            c.vector("kv_projection", "all", 2 * kv * head_dim)
        if bias and model_type not in _QKV_BIAS:
            c.vector("attention", "all", h)
        if model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"):  # q_norm, k_norm over head_dim
            c.vector("replicated", "all", 2 * head_dim)
        if model_type == "gpt_oss":  # attention sinks, one per head
            c.vector("attention", "all", heads)
    norms = 4 if model_type in ("gemma2", "gemma3", "gemma3_text") else 2
    c.vector("replicated", "all", norms * h)

    # MLP: gate/up/down (Phi-3 fuses gate_up: same count). mlp_bias (Llama) adds biases.
    def mlp(group: str, where_: str, prefix: str, size: int, n: int = 1, bias: bool = False) -> None:
        c.matrix(group, where_, prefix + "gate_proj", size, h, 2 * n)
        c.matrix(group, where_, prefix + "down_proj", h, size, n)
        if bias:  # gate/up biases and the down bias
            c.vector(group, where_, 2 * size + h, n)

    if not all(moe):
        mlp("dense_mlp", "dense", layer_id + "mlp.", inter, bias=_flag(t, "mlp_bias", where, False))
    if experts:
        expert_bias = model_type == "gpt_oss"  # modeling_gpt_oss.py GptOssExperts: gate_up_proj_bias, down_proj_bias
        mlp("experts", "moe", layer_id + "mlp.experts.0.", moe_inter, experts, bias=expert_bias)
        c.matrix("replicated", "moe", layer_id + "mlp.gate", experts, h)
        if model_type == "gpt_oss":
            c.vector("replicated", "moe", experts)  # router bias
        if t.get("topk_method") == "noaux_tc":  # DeepSeek-V3 e_score_correction_bias, fp32 in the checkpoint
            c.vector("replicated", "moe", experts, nbytes=4)
        shared = _int(t, "n_shared_experts", where, default=0, lo=0, hi=1 << 10)
        if shared:  # DeepSeek: one MLP of n_shared x moe_intermediate_size
            mlp("dense_mlp", "moe", layer_id + "mlp.shared_experts.", shared * moe_inter)
        shared_size = _int(t, "shared_expert_intermediate_size", where, default=0, lo=0)
        if shared_size:  # Qwen2-MoE: shared_expert + shared_expert_gate (1 x hidden)
            mlp("dense_mlp", "moe", layer_id + "mlp.shared_expert.", shared_size)
            c.vector("replicated", "moe", h)  # shared_expert_gate [1 x hidden]

    c.vector("replicated", "model", h)  # final norm
    c.vector("embedding", "model", vocab * h)  # embeddings stay 16-bit under every format here
    tied = _flag(t, "tie_word_embeddings", where, model_type in _TIED_BY_DEFAULT or model_type not in _KNOWN)
    if not tied:
        c.matrix("lm_head", "model", "lm_head", vocab, h)

    # DeepSeek MTP (modeling in DeepSeek-V3's repo; vLLM deepseek_mtp.py): a whole MoE decoder layer plus
    # enorm, hnorm, eh_proj [h x 2h], its own embed_tokens and shared_head (norm + head).
    mtp = _int(t, "num_nextn_predict_layers", where, default=0, lo=0, hi=16)
    if mtp and t.get("kv_lora_rank") is not None:
        moe_layer_rows = [(g, "mtp", p, b) for g, w, p, b in c.rows if w in ("all", "moe")]
        for _ in range(mtp):
            c.rows.extend(moe_layer_rows)
            c.matrix("mtp", "mtp", "model.layers.61.eh_proj", h, 2 * h)
            c.vector("mtp", "mtp", 3 * h)  # enorm, hnorm, shared_head.norm
            c.vector("mtp", "mtp", vocab * h, 2)  # embed_tokens, shared_head.head
    return vocab, moe


def _vision(c: _Count, v: dict, text_hidden: int, model_type: str) -> bool:
    """A SigLIP vision tower (transformers modeling_siglip.py: patch + position embeddings, pre-norm encoder
    layers with biased q/k/v/o and fc1/fc2, post layernorm) and, for Gemma 3, its projector
    (Gemma3MultiModalProjector: mm_input_projection_weight + mm_soft_emb_norm). False, counting nothing,
    when the vision_config is not SigLIP-shaped (Qwen-VL, Pixtral, ...): the tower is then left out."""
    w = "vision_config."
    if any(v.get(k) is None for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "patch_size",
                                      "image_size")):
        return False
    h = _int(v, "hidden_size", w, hi=1 << 15)
    inter = _int(v, "intermediate_size", w)
    layers = _int(v, "num_hidden_layers", w, hi=1024)
    patch = _int(v, "patch_size", w, hi=1024)
    image = _int(v, "image_size", w, hi=1 << 15)
    channels = _int(v, "num_channels", w, default=3, hi=64)
    c.vector("vision", "model", channels * patch * patch * h + h + (image // patch) ** 2 * h)
    per_layer = 4 * (h * h + h) + 2 * h * inter + inter + h + 4 * h
    c.vector("vision", "model", per_layer * layers + 2 * h)
    if model_type == "gemma3":
        c.vector("vision", "model", h * text_hidden + h)
    return True


def read_checkpoint(config: dict, index: dict | None = None, *, dtype: str | None = None,
                    quantization: str | None = None) -> Checkpoint:
    """The weights of a model from its parsed config.json (and safetensors index). `dtype` is vLLM's
    `--dtype` (default: the config's torch_dtype, float32 loading as bf16); `quantization` names the method
    when config.json has no quantization_config. Raises CheckpointConfigError naming a bad field."""
    if not isinstance(config, dict) or not config:
        raise CheckpointConfigError("config.json must be a non-empty JSON object")
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    text = config.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise CheckpointConfigError("config.json text_config must be an object")
    t, where = (text, "text_config.") if text else (config, "")
    model_type = t.get("model_type") or config.get("model_type")
    model_type = model_type if isinstance(model_type, str) else None
    raw_dtype = config.get("torch_dtype") or config.get("dtype") or t.get("torch_dtype") or "bfloat16"
    if not isinstance(raw_dtype, str) or raw_dtype not in _DTYPE_BYTES:
        raise CheckpointConfigError(f"config.json torch_dtype {raw_dtype!r} is not a known dtype")
    if dtype is not None and (not isinstance(dtype, str) or dtype not in _DTYPE_BYTES):
        raise CheckpointConfigError(f"dtype {dtype!r} is not one of {', '.join(_DTYPE_BYTES)}")
    stored_bytes = _DTYPE_BYTES[raw_dtype]
    load_bytes = min(_DTYPE_BYTES[dtype or raw_dtype], 2) if dtype in (None, "auto") else _DTYPE_BYTES[dtype]
    scheme = read_scheme(config, stored_bytes, quantization)

    counts, vision_counted = [], True
    for nbytes in (stored_bytes, load_bytes):
        c = _Count(replace(scheme, dtype_bytes=nbytes))
        vocab, moe = _decoder(c, t, where, model_type or "")
        if isinstance(config.get("vision_config"), dict):
            top_type = got if isinstance(got := config.get("model_type"), str) else ""
            vision_counted = _vision(c, config["vision_config"], _int(t, "hidden_size", where), top_type)
        counts.append(c)
    stored, loaded = counts

    def groups(c: _Count, factor: float) -> tuple[WeightGroups, int, tuple[tuple[str, int, int], ...]]:
        n_moe, n_dense = sum(moe), len(moe) - sum(moe)
        sums: dict[str, float] = {}
        per_layer: dict[str, list[float]] = {}
        for group, w, _p, b in c.rows:
            if w == "mtp":
                sums["mtp"] = sums.get("mtp", 0) + b * factor
                continue
            n = {"model": 1, "all": len(moe), "dense": n_dense, "moe": n_moe}[w]
            sums[group] = sums.get(group, 0) + b * n * factor
            if w != "model":
                slot = per_layer.setdefault(group, [0.0, 0.0])
                if w in ("all", "dense"):
                    slot[0] += b * factor
                if w in ("all", "moe"):
                    slot[1] += b * factor
        wg = WeightGroups(**{k: round(v) for k, v in sums.items() if k != "mtp"}, layers=len(moe))
        table = tuple((g, round(d), round(m)) for g, (d, m) in per_layer.items())
        return wg, round(sums.get("mtp", 0)), table

    raw_groups, raw_mtp, _ = groups(stored, 1.0)
    factor, source = 1.0, "config.json"
    if index is not None:
        meta = index.get("metadata") if isinstance(index, dict) else None
        total = meta.get("total_size") if isinstance(meta, dict) else None
        if isinstance(total, bool) or not isinstance(total, int) or not 0 < total < 1 << 50:
            raise CheckpointConfigError("safetensors index metadata.total_size must be a positive integer")
        factor, source = total / (raw_groups.total + raw_mtp), "safetensors index total_size"
    stored_groups, mtp, _ = groups(stored, factor)
    gpu_groups, _, table = groups(loaded, factor)
    params = sum(p * {"model": 1, "all": len(moe), "dense": len(moe) - sum(moe), "moe": sum(moe), "mtp": 0}[w]
                 for _g, w, p, _b in stored.rows)
    return Checkpoint(
        architecture=arch, quantization=scheme.method, parameters=params, groups=stored_groups,
        total_bytes=stored_groups.total, source=source,
        approximate=model_type not in _KNOWN or not vision_counted,
        not_loaded=mtp, gpu=gpu_groups, vocab_size=vocab,
        kv_heads=0 if t.get("kv_lora_rank") is not None else _int(t, "num_key_value_heads", where,
                                                                   default=_int(t, "num_attention_heads", where)),
        experts=next((t[k] for k in ("n_routed_experts", "num_local_experts", "num_experts") if t.get(k)), 0),
        tied=not stored_groups.lm_head, moe_layers=tuple(moe), layer_bytes=table,
        expert_dims=(_int(t, "hidden_size", where),
                     t.get("moe_intermediate_size") or t.get("intermediate_size") or 0))


def _pp_ranges(layers: int, pp: int) -> list[tuple[int, int]]:
    """vLLM get_pp_indices: even split; the remainder one layer each to the stages before the last."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    starts = [sum(parts[:r]) for r in range(pp)]
    return [(s, s + n) for s, n in zip(starts, parts, strict=True)]


def _mxfp4_expert_bytes(hidden: int, inter: int, backend: str) -> int:
    """Bytes of one MXFP4 expert as Mxfp4MoEMethod.create_weights allocates it (weights, uint8 scales,
    bf16 biases of w13 and w2) after the backend's padding."""
    inter_pad, hidden_pad = _MXFP4_PAD[backend]
    i, hd = math.ceil(inter / inter_pad) * inter_pad, math.ceil(hidden / hidden_pad) * hidden_pad
    return 2 * i * hd // 2 + 2 * i * (hd // 32) + 2 * i * 2 + hd * i // 2 + hd * (i // 32) + hd * 2


def weights_per_gpu(ckpt: Checkpoint, tensor_parallel: int = 1, pipeline_parallel: int = 1,
                    data_parallel: int = 1, expert_parallel: bool = False, *,
                    mxfp4_backend: str = "marlin") -> int:
    """Bytes of weights on the most loaded GPU as vLLM loads `ckpt` (see the module docstring).
    `mxfp4_backend` picks the MXFP4 MoE padding: 'marlin' (A100/L40S/H100 without triton_kernels),
    'triton', 'flashinfer-sm90' or 'flashinfer-sm100'."""
    for name, value in (("tensor_parallel", tensor_parallel), ("pipeline_parallel", pipeline_parallel),
                        ("data_parallel", data_parallel)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
            raise CheckpointConfigError(f"{name} must be an integer in [1, 4096], not {value!r}")
    if mxfp4_backend not in _MXFP4_PAD:
        raise CheckpointConfigError(f"mxfp4_backend must be one of {', '.join(_MXFP4_PAD)}")
    tp, pp, g = tensor_parallel, pipeline_parallel, ckpt.gpu
    layers = len(ckpt.moe_layers)
    if pp > max(layers, 1):
        raise CheckpointConfigError(f"pipeline_parallel {pp} exceeds the {layers} layers")
    vocab_share = (math.ceil(math.ceil(ckpt.vocab_size / _VOCAB_PAD) * _VOCAB_PAD / tp) / ckpt.vocab_size
                   if ckpt.vocab_size else 1 / tp)
    moe_ranks = tp * data_parallel
    per_layer_moe_experts = 0.0
    n_moe = sum(ckpt.moe_layers)
    if n_moe and ckpt.experts:
        per_expert = g.experts / n_moe / ckpt.experts
        if ckpt.quantization == "mxfp4":
            hidden, inter = ckpt.expert_dims
            share = inter if expert_parallel else math.ceil(inter / moe_ranks)
            per_expert = _mxfp4_expert_bytes(hidden, share, mxfp4_backend)
            per_layer_moe_experts = per_expert * (math.ceil(ckpt.experts / moe_ranks) if expert_parallel
                                                  else ckpt.experts)
        elif expert_parallel:
            per_layer_moe_experts = per_expert * math.ceil(ckpt.experts / moe_ranks)
        else:
            per_layer_moe_experts = per_expert * ckpt.experts / moe_ranks
    kv_share = 1 / tp if ckpt.kv_heads >= tp or not ckpt.kv_heads else 1 / ckpt.kv_heads

    def layer(dense_or_moe: int) -> float:
        total = 0.0
        for group, dense, moe in ckpt.layer_bytes:
            b = (dense, moe)[dense_or_moe]
            if group == "experts":
                total += per_layer_moe_experts if dense_or_moe else 0
            elif group == "replicated":
                total += b
            elif group == "kv_projection":
                total += b * kv_share
            else:
                total += b / tp
        return total

    per_kind = (layer(0), layer(1))
    replicated = next(((d, m) for grp, d, m in ckpt.layer_bytes if grp == "replicated"), (0, 0))
    final_norm = g.replicated - sum(replicated[int(m)] for m in ckpt.moe_layers)  # and other model-wide vectors
    worst = 0.0
    for rank, (start, end) in enumerate(_pp_ranges(layers, pp)):
        total = sum(per_kind[int(m)] for m in ckpt.moe_layers[start:end])
        if rank == 0:
            total += g.embedding * vocab_share + g.vision / tp
        if rank == pp - 1:
            head = g.lm_head or (g.embedding if pp > 1 else 0)
            total += head * vocab_share + max(final_norm, 0)
        worst = max(worst, total)
    return round(worst)
