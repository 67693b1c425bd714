"""Bytes a checkpoint stores per weight matrix under each quantization format (pure; used by .checkpoint).

A `Scheme` is read from a config.json `quantization_config` and answers `matrix_bytes(rows, cols, name)`:
the stored bytes of one weight matrix (rows = output features, cols = input features) including its
scales, zero points and act-order indices, or its 16-bit size when the format leaves the module alone.

Per format (the tensors a checkpoint of that format holds; vLLM loads the same tensors):
- fp8 (vLLM `quantization/fp8.py`, Fp8Config): e4m3 weights, 1 byte each; with `weight_block_size`
  [bn, bk] one fp32 `weight_scale_inv` per bn x bk block (DeepSeek-V3), else one fp32 scale per matrix.
  `modules_to_not_convert` / `ignored_layers` stay 16-bit.
- compressed-tensors (vLLM `compressed_tensors/compressed_tensors.py`): the group whose `targets` hold
  "Linear" gives num_bits, type, strategy (tensor/channel/group/block), group_size, symmetric, actorder;
  scales in the model dtype (fp8 e4m3 for nvfp4, 16-element groups), zero points when asymmetric,
  `weight_g_idx` (int32 per input column) with actorder "group"; `ignore` entries stay 16-bit.
- awq (AutoAWQ GEMM layout, vLLM `awq.py`/`awq_marlin.py`): qweight int32 [in, out/8], qzeros int32
  [in/g, out/8], scales fp16 [in/g, out]; `modules_to_not_convert` stay 16-bit.
- gptq (AutoGPTQ layout, vLLM `gptq.py`/`gptq_marlin.py`): qweight int32 [in*bits/32, out], qzeros int32
  [in/g, out*bits/32], scales fp16 [in/g, out], g_idx int32 [in] (AutoGPTQ writes g_idx whether or not
  desc_act is set). `lm_head` only when the config says `lm_head: true`.
- bitsandbytes (vLLM `bitsandbytes.py`; transformers `quantizers/quantizer_bnb_4bit.py`): 4-bit packs two
  values a byte plus one absmax per 64 values (fp32, or uint8 with double quant plus one fp32 per 256
  absmax); 8-bit is int8 plus one fp32 SCB per output row. `llm_int8_skip_modules` stay 16-bit; transformers
  never converts the output embedding.
- mxfp4 (gpt-oss; vLLM `quantization/mxfp4.py` commit 007d500): only fused-MoE expert weights, e2m1 packed
  two a byte plus one uint8 e8m0 scale per 32 values (4.25 bits); attention, router, embeddings, lm_head
  and expert biases stay bf16.
Routers (`mlp.gate`), norms and embeddings are never quantized here: vLLM builds routers with
`quant_config=None` and quantized checkpoints keep them 16-bit.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass


class CheckpointConfigError(ValueError):
    """config.json (or the safetensors index) lacks a field, or has a bad value; the message names it."""


# The one list of quantization names: the config's `quantization:` field, vLLM's `--quantization` flag and
# config.json's `quant_method` are all read through these (tests/nvidia/test_quantization_names.py).

#: The quantization formats gpufleet sizes, by the names it reports (and `model.quantization` takes).
METHODS = ("fp8", "compressed-tensors", "awq", "gptq", "bitsandbytes", "mxfp4")
#: vLLM `--quantization` kernels that load a format's checkpoint as it is stored -> that format.
VLLM_KERNELS = {"fbgemm_fp8": "fp8", "awq_marlin": "awq", "gptq_marlin": "gptq"}
#: vLLM `--quantization` values accepted but not sized from the flag: config.json's quantization_config says.
VLLM_FROM_CONFIG = ("modelopt", "modelopt_fp4", "experts_int8")
#: Every `--quantization` value gpufleet accepts.
VLLM_FLAG_VALUES = (*METHODS, *VLLM_KERNELS, *VLLM_FROM_CONFIG)
#: Every name of a sized format (config.json also writes `compressed_tensors`) -> the format.
_ALIASES = {**{m: m for m in METHODS}, **VLLM_KERNELS, "compressed_tensors": "compressed-tensors"}


def method_of(name: str) -> str:
    """The format a vLLM kernel name loads (`awq_marlin` -> `awq`); any other name as it is."""
    return VLLM_KERNELS.get(name, name)


@dataclass(frozen=True)
class Scheme:
    """How a checkpoint stores quantized weight matrices (None method: every matrix at `dtype_bytes`)."""

    method: str | None = None
    dtype_bytes: int = 2          # unquantized tensors (bf16/fp16: 2, fp32: 4)
    bits: int = 16                # per quantized weight value
    strategy: str = "tensor"      # where scales sit: tensor | channel | group | block
    group_size: int = 0           # input columns per scale (strategy group)
    block: tuple[int, int] = (0, 0)  # rows x cols per scale (strategy block)
    scale_bytes: int = 4
    zero_points: bool = False     # stored zero points, packed at `bits` each
    g_idx: bool = False           # int32 per input column
    ignore: tuple[str, ...] = ()
    lm_head: bool = False         # lm_head quantized too
    bnb_double_quant: bool = False

    def quantizes(self, name: str) -> bool:
        """Whether the format quantizes the module `name` (e.g. 'model.layers.0.self_attn.q_proj')."""
        if self.method is None or name.endswith(("mlp.gate", "router")):
            return False
        if name == "lm_head" and not self.lm_head:
            return False
        if self.method == "mxfp4":
            return ".experts." in name
        for entry in self.ignore:
            if entry.startswith("re:"):
                if re.match(entry[3:], name):
                    return False
            elif "*" in entry:
                if fnmatch.fnmatchcase(name, entry) or fnmatch.fnmatchcase(name, entry + ".*"):
                    return False
            elif entry == name or entry in name.split(".") or (len(entry) > 4 and entry in name):
                return False
        return True

    def matrix_bytes(self, rows: int, cols: int, name: str) -> int:
        """Stored bytes of one [rows x cols] weight matrix (rows: outputs, cols: inputs) named `name`."""
        n = rows * cols
        if not self.quantizes(name):
            return n * self.dtype_bytes
        if self.method == "mxfp4":
            return n // 2 + rows * math.ceil(cols / 32)
        if self.method == "bitsandbytes":
            if self.bits == 8:
                return n + 4 * rows
            absmax = math.ceil(n / 64)
            if self.bnb_double_quant:
                return n // 2 + absmax + 4 * math.ceil(absmax / 256) + 4 * 256 + 4
            return n // 2 + 4 * absmax
        if self.strategy == "channel":
            scales = rows
        elif self.strategy == "group":
            scales = rows * math.ceil(cols / (self.group_size or cols))
        elif self.strategy == "block":
            scales = math.ceil(rows / self.block[0]) * math.ceil(cols / self.block[1])
        else:
            scales = 1
        total = math.ceil(n * self.bits / 8) + scales * self.scale_bytes
        if self.zero_points:
            total += math.ceil(scales * self.bits / 8)
        if self.g_idx:
            total += 4 * cols
        return total


def _pos_int(q: dict, key: str, default: int | None = None, lo: int = 1, hi: int = 1 << 20) -> int:
    value = q.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise CheckpointConfigError(f"quantization_config.{key} must be an integer in [{lo}, {hi}], "
                                    f"not {value!r}")
    return value


def _names(q: dict, *keys: str) -> tuple[str, ...]:
    out: list[str] = []
    for key in keys:
        value = q.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise CheckpointConfigError(f"quantization_config.{key} must be a list of module names")
        out.extend(value)
    return tuple(out)


def _compressed_tensors(q: dict, dtype_bytes: int) -> Scheme:
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise CheckpointConfigError("quantization_config.config_groups must be a non-empty object")
    group = next((g for g in groups.values() if isinstance(g, dict) and isinstance(g.get("targets"), list)
                  and "Linear" in g["targets"]), next(iter(groups.values())))
    weights = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(weights, dict):
        raise CheckpointConfigError("quantization_config.config_groups.*.weights must be an object")
    bits = _pos_int(weights, "num_bits", lo=1, hi=16)
    strategy = weights.get("strategy") or "tensor"
    if strategy not in ("tensor", "channel", "group", "block", "tensor_group"):
        raise CheckpointConfigError(f"quantization_config weights.strategy {strategy!r} is not known")
    group_size, block = 0, (0, 0)
    if strategy in ("group", "tensor_group"):
        group_size = _pos_int(weights, "group_size")
        strategy = "group"
    if strategy == "block":
        bs = weights.get("block_structure")
        if not (isinstance(bs, list) and len(bs) == 2 and all(isinstance(b, int) and b > 0 for b in bs)):
            raise CheckpointConfigError("quantization_config weights.block_structure must be [rows, cols]")
        block = (bs[0], bs[1])
    nvfp4 = weights.get("type") == "float" and bits == 4
    return Scheme("compressed-tensors", dtype_bytes, bits, strategy, group_size, block,
                  scale_bytes=1 if nvfp4 else dtype_bytes,
                  zero_points=weights.get("symmetric", True) is False,
                  g_idx=weights.get("actorder") == "group",
                  ignore=_names(q, "ignore"), lm_head=True)


def read_scheme(config: dict, dtype_bytes: int, override: str | None = None) -> Scheme:
    """The quantization of a parsed config.json (its `quantization_config`); `override` names the method
    (vLLM `--quantization`) when the config has none (a bare bitsandbytes load quantizes at 4 bits)."""
    q = config.get("quantization_config")
    if q is None and isinstance(config.get("text_config"), dict):
        q = config["text_config"].get("quantization_config")
    if q is None:
        if override is None:
            return Scheme(None, dtype_bytes)
        q = {"quant_method": override, "load_in_4bit": override == "bitsandbytes"}
    if not isinstance(q, dict):
        raise CheckpointConfigError("quantization_config must be an object")
    raw = q.get("quant_method") or override
    if not isinstance(raw, str) or raw.lower() not in _ALIASES:
        raise CheckpointConfigError(f"quantization_config.quant_method {raw!r} is not one of {', '.join(METHODS)}")
    method = _ALIASES[raw.lower()]
    if method == "fp8":
        block = q.get("weight_block_size")
        if block is not None:
            if not (isinstance(block, list) and len(block) == 2
                    and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
                raise CheckpointConfigError("quantization_config.weight_block_size must be [rows, cols]")
            return Scheme("fp8", dtype_bytes, 8, "block", block=(block[0], block[1]), scale_bytes=4,
                          ignore=_names(q, "modules_to_not_convert", "ignored_layers"))
        return Scheme("fp8", dtype_bytes, 8, "tensor", scale_bytes=4,
                      ignore=_names(q, "modules_to_not_convert", "ignored_layers"))
    if method == "compressed-tensors":
        return _compressed_tensors(q, dtype_bytes)
    if method in ("awq", "gptq"):
        bits = _pos_int(q, "bits" if "bits" in q else "w_bit", 4, lo=2, hi=8)
        group = q.get("group_size", q.get("q_group_size", 128))
        if isinstance(group, bool) or not isinstance(group, int) or group == 0 or group < -1 or group > 1 << 20:
            raise CheckpointConfigError(f"quantization_config.group_size must be -1 or a positive integer, "
                                        f"not {group!r}")
        return Scheme(method, dtype_bytes, bits, "group" if group > 0 else "channel", max(group, 0),
                      scale_bytes=2, zero_points=method == "gptq" or q.get("zero_point", True) is not False,
                      g_idx=method == "gptq", ignore=_names(q, "modules_to_not_convert"),
                      lm_head=method == "gptq" and q.get("lm_head") is True)
    if method == "bitsandbytes":
        eight = q.get("load_in_8bit") is True
        return Scheme("bitsandbytes", dtype_bytes, 8 if eight else 4,
                      bnb_double_quant=q.get("bnb_4bit_use_double_quant") is True,
                      ignore=_names(q, "llm_int8_skip_modules"))
    return Scheme("mxfp4", dtype_bytes, 4)
