"""A served model's memory facts per GPU, from its checkpoint (config.json, optionally the safetensors index) or
from facts written by hand, and the engine's verdict on one device.

`ServedModel` holds what does not depend on the node: the weights each GPU loads, the KV layout, the shape of
the profiled pass and the engine's flags. `ServedModel.on_device(visible, ...)` adds the device and returns
the engine's start-up (gpufleet.nvidia.model_memory.vllm). The manifest annotation carries a ServedModel, so
`gpufleet check` recomputes the verdict on every node a pod may land on.

Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeGuard

from gpufleet.nvidia.model_memory import vllm
from gpufleet.nvidia.model_memory.attention import AttentionConfigError, KvLayout, kv_layout

#: Bytes per weight element for facts written by hand (llm-d `precision_to_byte`; NIM memory guide).
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
#: llm-d's measured activation constants (GiB), used only when the model's widths are not known.
FALLBACK_ACTIVATION_GIB = {"dense": 5.5, "moe": 8.0}


@dataclass(frozen=True)
class ServedModel:
    """Everything about one model server's GPU memory except the device."""

    label: str
    weights: int
    """Bytes of weights on the most loaded GPU."""
    kv: KvLayout
    activation: vllm.ActivationShape | None
    """None: the widths are unknown and llm-d's measured constant is used."""
    args: vllm.VllmArgs
    max_position: int | None = None
    moe: bool = False
    weights_source: str = ""
    activation_override: int | None = None
    """A measured peak activation (bytes) instead of the computed one."""

    def on_device(self, visible: int, *, mig: bool = False, a100: bool = False) -> vllm.Startup:
        shape = self.activation or _fallback_shape(self.moe)
        return vllm.startup(self.weights, self.kv, shape, self.args, visible, mig=mig, a100=a100,
                            max_position=self.max_position, activation=self.activation_override)

    def with_args(self, **changes) -> ServedModel:
        return replace(self, args=replace(self.args, **changes))

    # --- the manifest annotation (JSON, camelCase-free: it is ours alone) ---------------------------------------

    def to_json(self) -> dict:
        doc: dict[str, Any] = {
            "engine": vllm.ENGINE, "label": self.label, "weights": self.weights, "kv": asdict(self.kv),
            "activation": asdict(self.activation) if self.activation else None, "args": asdict(self.args),
            "maxPosition": self.max_position, "moe": self.moe, "weightsSource": self.weights_source,
            "activationOverride": self.activation_override}
        doc["kv"]["sliding_layers"] = [list(p) for p in self.kv.sliding_layers]
        return doc

    @classmethod
    def from_json(cls, doc: dict) -> ServedModel:
        """Inverse of to_json; ValueError naming the bad key (never another exception)."""
        if not isinstance(doc, dict) or doc.get("engine") != vllm.ENGINE:
            raise ValueError(f"engine={doc.get('engine') if isinstance(doc, dict) else doc!r}; allowed: vllm")
        kv = _typed(doc.get("kv"), "kv", KvLayout)
        sliding = kv.get("sliding_layers", ())
        if not isinstance(sliding, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 and all(_is_int(x) and x >= 1 for x in p)
                for p in sliding):
            raise ValueError(f"kv.sliding_layers={sliding!r} is not a list of [window, layers] pairs")
        kv["sliding_layers"] = tuple((int(w), int(n)) for w, n in sliding)
        act = _typed(doc["activation"], "activation", vllm.ActivationShape) if doc.get("activation") else None
        args = _typed(doc.get("args"), "args", vllm.VllmArgs)
        version = args.get("version")
        if version is not None:
            if not isinstance(version, (list, tuple)) or len(version) != 2 or not all(_is_int(v) for v in version):
                raise ValueError(f"args.version={version!r} is not [major, minor]")
            args["version"] = tuple(version)
        extra = {"weights": doc.get("weights"), "maxPosition": doc.get("maxPosition"),
                 "activationOverride": doc.get("activationOverride")}
        for key, value in extra.items():
            if value is not None and not (_is_int(value) and value >= 0):
                raise ValueError(f"{key}={value!r} is not a non-negative integer")
        if extra["weights"] is None:
            raise ValueError("weights is missing")
        served = cls(str(doc.get("label") or ""), extra["weights"], KvLayout(**kv),
                     vllm.ActivationShape(**act) if act else None, vllm.VllmArgs(**args), extra["maxPosition"],
                     bool(doc.get("moe")), str(doc.get("weightsSource") or ""), extra["activationOverride"])
        _check_numbers(served)
        return served


def _is_int(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value < 2**62


#: Field types the annotation may carry (dataclass annotations are strings under `from __future__`).
_KINDS = {"int": _is_int, "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v == v,
          "bool": lambda v: isinstance(v, bool)}


def _typed(doc, where: str, kind) -> dict:
    """The fields of `kind` in `doc`, each of its declared type (None allowed where optional); ValueError."""
    import dataclasses

    if not isinstance(doc, dict):
        raise ValueError(f"{where} is not an object")
    names = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(str(k) for k in doc if k not in names)
    if unknown:
        raise ValueError(f"{where} has unknown keys: {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        if f.name not in doc:
            if f.default is dataclasses.MISSING:
                raise ValueError(f"{where}.{f.name} is missing")
            continue
        value, declared = doc[f.name], str(f.type)
        base = declared.split("|")[0].strip()
        if value is None and "None" in declared:
            out[f.name] = None
            continue
        check = _KINDS.get(base)
        if check is not None and not check(value):
            raise ValueError(f"{where}.{f.name}={value!r} is not {base}")
        out[f.name] = value
    return out


def _check_numbers(served: ServedModel) -> None:
    a = served.args
    ints = {"weights": served.weights, "kv.bytes_per_token_layer": served.kv.bytes_per_token_layer,
            "kv.full_layers": served.kv.full_layers, "args.max_model_len": a.max_model_len,
            "args.tensor_parallel": a.tensor_parallel, "args.pipeline_parallel": a.pipeline_parallel,
            "args.data_parallel": a.data_parallel, "args.block_size": a.block_size,
            "args.max_num_seqs": a.max_num_seqs, "args.max_num_batched_tokens": a.max_num_batched_tokens,
            "args.kv_cache_memory_bytes": a.kv_cache_memory_bytes}
    if served.activation is not None:
        ints.update({f"activation.{k}": v for k, v in asdict(served.activation).items()})
    for key, value in ints.items():
        if value is None and key.startswith("args.") and key not in ("args.max_model_len",):
            continue
        low = 0 if key in ("weights", "kv.full_layers") or key.startswith("activation.") else 1
        if not _is_int(value) or value < low or value > 2**50:
            raise ValueError(f"{key}={value!r} is not an integer from {low}")
    if a.max_model_len > 2**31 or a.block_size > 256:
        raise ValueError(f"args.max_model_len={a.max_model_len} or args.block_size={a.block_size} is out of range")
    util = served.args.gpu_memory_utilization
    if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
        raise ValueError(f"args.gpu_memory_utilization={util!r}; allowed: above 0, at most 1")


def _fallback_shape(moe: bool) -> vllm.ActivationShape:
    """A shape whose MLP term alone is llm-d's constant at vLLM's large-device default of 8,192 tokens."""
    target = FALLBACK_ACTIVATION_GIB["moe" if moe else "dense"] * vllm.GIB
    width = int(target / (8192 * 2 * 3))
    return vllm.ActivationShape(0, width, 0)


def _text(cfg: dict) -> dict:
    inner = cfg.get("text_config")
    return inner if isinstance(inner, dict) else cfg


def activation_shape(cfg: dict, tensor_parallel: int = 1) -> vllm.ActivationShape | None:
    """The profiled pass's widths on one GPU from config.json; None when a width is missing."""
    text = _text(cfg)
    hidden, vocab = text.get("hidden_size"), text.get("vocab_size") or cfg.get("vocab_size")
    if not (_positive(hidden) and _positive(vocab)):
        return None
    experts = text.get("num_experts_per_tok") or text.get("num_selected_experts") or text.get("moe_topk")
    moe_width = text.get("moe_intermediate_size")
    if moe_width is None and (text.get("num_local_experts") or text.get("num_experts")):
        moe_width = text.get("intermediate_size")
    dense = text.get("intermediate_size") or text.get("ffn_hidden_size") or 4 * hidden
    fanout = 0
    if _positive(experts) and _positive(moe_width):
        shared = (text.get("n_shared_experts") or 0) * moe_width + (text.get("shared_expert_intermediate_size") or 0)
        width, fanout = experts * moe_width + (shared if _positive(shared) else 0), experts
    else:
        width = dense if _positive(dense) else 4 * hidden
    return vllm.ActivationShape(hidden, math.ceil(width / tensor_parallel), vocab, fanout)


def _positive(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**40


def from_facts(label: str, *, parameters: int, layers: int, kv_heads: int, head_dim: int, dtype: str,
               args: vllm.VllmArgs, kv_cache_dtype: str = "auto", moe: bool = False,
               max_position: int | None = None, hidden_size: int | None = None,
               intermediate_size: int | None = None, vocab_size: int | None = None,
               activation_override: int | None = None) -> ServedModel:
    """A model described by hand (no config.json): every parameter at `dtype`'s width, split over TP x PP."""
    tp, pp = args.tensor_parallel, args.pipeline_parallel
    weights = math.ceil(parameters * DTYPE_BYTES[dtype] / (tp * pp))
    cfg = {"num_hidden_layers": layers, "num_attention_heads": kv_heads, "num_key_value_heads": kv_heads,
           "head_dim": head_dim}
    layout = kv_layout(cfg, kv_cache_dtype, 4 if dtype == "fp32" else 2, tp, pp)
    shape = None
    if hidden_size and vocab_size:
        shape = vllm.ActivationShape(hidden_size, math.ceil((intermediate_size or 4 * hidden_size) / tp), vocab_size)
    return ServedModel(label, weights, layout, shape, args, max_position, moe, f"{parameters:,} parameters x {dtype}",
                       activation_override)


def legacy_annotation(doc: dict) -> ServedModel:
    """An annotation written before the engine's arithmetic (parameters, layers, kvHeads, headDim, ...)."""
    def number(key: str, default=None, minimum: int = 1):
        value = doc.get(key, default)
        if value is None and default is None:
            return None
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or value != int(value) or not minimum <= value <= 2**50):
            raise ValueError(f"{key}={value!r} is not an integer from {minimum} to 2**50")
        return int(value)

    dtype, kv = doc.get("dtype", "bf16"), doc.get("kvCacheDtype", "auto")
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype={dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    if not isinstance(kv, str):
        raise ValueError(f"kvCacheDtype={kv!r} is not a string")
    for key in ("parameters", "layers", "kvHeads", "headDim", "maxModelLen"):
        if doc.get(key) is None:
            raise ValueError(f"{key} is missing")
    seqs = number("maxNumSeqs", 1)
    args = vllm.VllmArgs(max_model_len=number("maxModelLen"), max_num_seqs=seqs if seqs > 1 else None,
                         tensor_parallel=number("tensorParallel", 1))
    try:
        return from_facts(str(doc.get("model") or ""), parameters=number("parameters"), layers=number("layers"),
                          kv_heads=number("kvHeads"), head_dim=number("headDim"), dtype=dtype, args=args,
                          kv_cache_dtype=kv, moe=bool(doc.get("moe")),
                          max_position=number("maxPositionEmbeddings"),
                          activation_override=number("activationBytes", minimum=0))
    except AttentionConfigError as e:  # a bad kv dtype
        raise ValueError(str(e)) from None


#: flags (gpufleet.nvidia.model_memory.flags) that change only the engine's arithmetic, not the weights or layout.
_RUNTIME_FLAGS = ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
                  "kv_cache_memory_bytes", "enforce_eager", "chunked_prefill", "block_size")


def with_flags(served: ServedModel, argv: list[str]) -> ServedModel:
    """The served model as a container's command line runs it: its runtime flags (utilization, lengths,
    batching, eager) replace the recorded ones. Flags that would change the weights or the KV layout
    (parallelism, dtypes) are left to the recorded facts."""
    from gpufleet.nvidia.model_memory.flags import read_flags

    found, _ = read_flags(argv)
    changes = {k: v for k, v in found.items() if k in _RUNTIME_FLAGS}
    return served.with_args(**changes) if changes else served
