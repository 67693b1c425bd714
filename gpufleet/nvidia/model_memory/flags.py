"""The `vllm serve` flags GPU memory depends on, read from a container's command line (vllm/engine/arg_utils.py).

`read_flags(argv)` returns the values it found, by our field name, and the problems (a flag with a value
vLLM would reject), each naming the flag, the value and what is allowed. Flags vLLM spells two ways
(`--tensor-parallel-size` / `-tp`, `--flag=value` / `--flag value`) are both read; the last occurrence wins,
as with argparse. Lengths take vLLM's human-readable forms: `32k` = 32,000, `32K` = 32,768.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpufleet.nvidia.model_memory.attention import KV_DTYPE_BYTES

#: vLLM --quantization values gpufleet sizes (others are read from config.json's quantization_config).
QUANTIZATIONS = ("fp8", "awq", "awq_marlin", "gptq", "gptq_marlin", "bitsandbytes", "mxfp4", "compressed-tensors",
                 "modelopt", "modelopt_fp4", "fbgemm_fp8", "experts_int8")
DTYPES = ("auto", "bfloat16", "float16", "half", "float32", "float")
BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class _Flag:
    names: tuple[str, ...]
    key: str
    kind: str  # int, length, float01, bytes, bool, nobool, choice, str
    choices: tuple[str, ...] = ()


FLAGS = (
    _Flag(("--max-model-len",), "max_model_len", "length"),
    _Flag(("--max-num-seqs",), "max_num_seqs", "int"),
    _Flag(("--max-num-batched-tokens",), "max_num_batched_tokens", "length"),
    _Flag(("--gpu-memory-utilization",), "gpu_memory_utilization", "float01"),
    _Flag(("--kv-cache-memory", "--kv-cache-memory-bytes"), "kv_cache_memory_bytes", "bytes"),
    _Flag(("--tensor-parallel-size", "-tp"), "tensor_parallel", "int"),
    _Flag(("--pipeline-parallel-size", "-pp"), "pipeline_parallel", "int"),
    _Flag(("--data-parallel-size", "-dp"), "data_parallel", "int"),
    _Flag(("--enable-expert-parallel", "-ep"), "expert_parallel", "bool"),
    _Flag(("--enforce-eager",), "enforce_eager", "bool"),
    _Flag(("--enable-chunked-prefill",), "chunked_prefill", "bool"),
    _Flag(("--no-enable-chunked-prefill",), "chunked_prefill", "nobool"),
    _Flag(("--kv-cache-dtype",), "kv_cache_dtype", "choice", ("auto", *KV_DTYPE_BYTES)),
    _Flag(("--block-size",), "block_size", "choice", tuple(str(b) for b in BLOCK_SIZES)),
    _Flag(("--quantization", "-q"), "quantization", "choice", QUANTIZATIONS),
    _Flag(("--dtype",), "dtype", "choice", DTYPES),
    _Flag(("--cpu-offload-gb",), "cpu_offload_gb", "float"),
)
_BY_NAME = {name: flag for flag in FLAGS for name in flag.names}
_LENGTH = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,6})?)([kKmMgG]?)$")
#: Largest value a count or length flag may take (vLLM's are int32), and a byte size.
MAX_COUNT = 2**31 - 1
MAX_BYTES = 2**50
_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def parse_length(text: str) -> int | None:
    """vLLM's human-readable integer: 32k = 32,000, 32K = 32,768, 1.5k = 1,500; None when not one."""
    match = _LENGTH.match(text.strip())
    if not match:
        return None
    value = float(match.group(1)) * _UNITS[match.group(2)]
    return int(value) if value == int(value) else None


def _value(flag: _Flag, raw: str):
    """(value, problem)."""
    if flag.kind in ("length", "int", "bytes"):
        value = parse_length(raw) if flag.kind != "int" else (
            int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 15 else None)
        if value is not None and value > (MAX_BYTES if flag.kind == "bytes" else MAX_COUNT):
            value = None
        if value is None or value < 1:
            form = "a positive integer" + ("" if flag.kind == "int" else " (k/m/g = 1000s, K/M/G = 1024s)")
            return None, f"{flag.names[0]} {raw!r} is not {form}"
        return value, None
    if flag.kind in ("float01", "float"):
        try:
            value = float(raw) if len(raw) <= 32 else None
        except ValueError:
            value = None
        if value is not None and not math.isfinite(value):
            value = None
        if value is None or (flag.kind == "float01" and not 0 < value <= 1) or value < 0 or value > 1e6:
            allowed = "a number above 0 and at most 1" if flag.kind == "float01" else "a number >= 0"
            return None, f"{flag.names[0]} {raw!r} is not {allowed}"
        return value, None
    if flag.kind == "choice":
        if raw not in flag.choices:
            return None, f"{flag.names[0]} {raw!r} is not one of: {', '.join(flag.choices)}"
        return (int(raw) if flag.key == "block_size" else raw), None
    return raw, None


def read_flags(argv: list[str] | tuple[str, ...], spelled: dict | None = None) -> tuple[dict, list[str]]:
    """({field: value}, [problem]) for the memory flags in argv (unknown flags are ignored). `spelled`, when
    given, receives {field: (flag as written, value as written)}."""
    found: dict = {}
    problems: list[str] = []
    spelled = {} if spelled is None else spelled
    args = [str(a) for a in argv]
    i = 0
    while i < len(args):
        arg = args[i]
        name, _, inline = arg.partition("=")
        flag = _BY_NAME.get(name)
        i += 1
        if flag is None:
            continue
        if flag.kind in ("bool", "nobool"):
            if inline and inline.lower() not in ("true", "false"):
                problems.append(f"{name} takes no value (or true/false), got {inline!r}")
                continue
            on = inline.lower() != "false" if inline else True
            found[flag.key] = on if flag.kind == "bool" else not on
            spelled[flag.key] = (name, inline or "")
            continue
        if not inline and "=" not in arg:
            if i >= len(args) or (args[i].startswith("-") and not args[i].lstrip("-").replace(".", "").isdigit()):
                problems.append(f"{name} needs a value")
                continue
            inline = args[i]
            i += 1
        value, problem = _value(flag, inline)
        if problem:
            problems.append(problem)
        else:
            found[flag.key] = value
            spelled[flag.key] = (name, inline)
    return found, problems


def image_version(image: str) -> tuple[int, int] | None:
    """(major, minor) of a vLLM image tag such as vllm/vllm-openai:v0.11.0; None when the tag says no version."""
    tag = image.rsplit("@", 1)[0]
    tag = tag.rsplit(":", 1)[1] if ":" in tag.rsplit("/", 1)[-1] else ""
    match = re.match(r"^v?(\d+)\.(\d+)", tag)
    return (int(match.group(1)), int(match.group(2))) if match else None


def flag_value(argv: list[str], flag: str) -> str | None:
    """The raw value of `--flag V` or `--flag=V` (the last one wins, as argparse does); None when absent."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1:]
    return value
