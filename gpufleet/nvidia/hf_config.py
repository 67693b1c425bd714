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
    text = doc.get("text_config") if isinstance(doc.get("text_config"), dict) else doc
    layers = _first(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = _first(text, "num_attention_heads", "n_head")
    hidden = _first(text, "hidden_size", "n_embd", "d_model")
    missing = [n for n, v in (("num_hidden_layers", layers), ("num_attention_heads", heads), ("hidden_size", hidden))
               if not isinstance(v, int) or isinstance(v, bool) or v < 1]
    if missing:
        raise HfConfigError(f"lacks {', '.join(missing)} (a positive integer)")
    kv = _first(text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num") or heads
    head_dim = _first(text, "head_dim") or hidden // heads
    facts = {"layers": layers, "kv_heads": kv, "head_dim": head_dim, "hidden_size": hidden, "attention_heads": heads,
             "architecture": arch,
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
