"""Facts of a Hugging Face config.json (already parsed: no I/O) for the model memory arithmetic."""

from __future__ import annotations

#: torch_dtype / dtype values of a config.json -> our dtype names.
HF_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}
#: Architectures whose parameter count gpufleet derives from config.json (dense decoder, gated MLP).
DENSE_ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM")


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
    arch = arch if isinstance(arch, str) else None
    text = got if isinstance(got := doc.get("text_config"), dict) else doc
    layers = _first(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(text, "num_attention_heads", "n_head")
    hidden = _first(text, "hidden_size", "n_embd", "d_model")
    missing = [n for n, v in (("num_hidden_layers", layers), ("num_attention_heads", heads), ("hidden_size", hidden))
               if not _count(v)]
    if missing:
        raise HfConfigError(f"lacks {', '.join(missing)} (a positive integer)")
    kv = _first(text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num")
    head_dim = _first(text, "head_dim")
    for name, value in (("num_key_value_heads", kv), ("head_dim", head_dim)):
        if value is not None and not _count(value):
            raise HfConfigError(f"has {name}={value!r}; expected a positive integer")
    if head_dim is None and hidden < heads:
        raise HfConfigError(f"has hidden_size={hidden} below num_attention_heads={heads}, and no head_dim")
    facts = {"layers": layers, "kv_heads": kv or heads, "head_dim": head_dim or hidden // heads,
             "hidden_size": hidden, "attention_heads": heads, "architecture": arch,
             "moe": any(_first(text, k) for k in ("num_local_experts", "num_experts", "n_routed_experts",
                                                   "moe_num_experts"))}
    raw_dtype = _first(doc, "torch_dtype", "dtype") or _first(text, "torch_dtype", "dtype")
    if isinstance(raw_dtype, str) and raw_dtype in HF_DTYPES:
        facts["dtype"] = HF_DTYPES[raw_dtype]
    if _count(text.get("max_position_embeddings")):
        facts["max_position_embeddings"] = text["max_position_embeddings"]
    if arch in DENSE_ARCHITECTURES and not facts["moe"]:
        params = dense_parameters(text, qkv_bias=arch == "Qwen2ForCausalLM")
        if params is not None:
            facts["parameters"] = params
    return facts


def _count(value) -> bool:
    """A positive integer a config.json may carry (bounded, so arithmetic on it stays exact and fast)."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1 << 40


def dense_parameters(cfg: dict, qkv_bias: bool = False) -> int | None:
    """Parameters of a dense decoder with a gated MLP (Llama, Mistral, Qwen2): embeddings, q/k/v/o, gate/up/down,
    two RMSNorms per layer, the final norm, and lm_head unless tied. None when a field is missing."""
    need = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    if any(not _count(cfg.get(k)) for k in need) or (cfg.get("num_key_value_heads") is not None
                                                     and not _count(cfg.get("num_key_value_heads"))):
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
