"""The `vllm serve` flags GPU memory depends on, read from a container's command line (vllm/engine/arg_utils.py).

`read_flags(argv)` returns the values it found, by our field name, and the problems (a flag with a value
vLLM would reject, or a flag the release does not have: vllm_cli), each naming the flag, the value and what
is allowed. Flags are read as vLLM's parser reads them (`-tp` / `--tensor-parallel-size`, `--flag=value`,
`--max_model_len`, `--max-model` for `--max-model-len`); the last occurrence wins, as with argparse. Lengths
take vLLM's human-readable forms: `32k` = 32,000, `32K` = 32,768.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpufleet.nvidia.model_memory.attention import KV_DTYPE_BYTES
from gpufleet.nvidia.model_memory.quantization import VLLM_FLAG_VALUES
from gpufleet.nvidia.model_memory.vllm_cli import Token, options_for, options_in, server_arguments

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
    _Flag(("--quantization", "-q"), "quantization", "choice", VLLM_FLAG_VALUES),
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
            number = float(raw) if len(raw) <= 32 else None
        except ValueError:
            number = None
        if number is not None and not math.isfinite(number):
            number = None
        if number is None or (flag.kind == "float01" and not 0 < number <= 1) or number < 0 or number > 1e6:
            allowed = "a number above 0 and at most 1" if flag.kind == "float01" else "a number >= 0"
            return None, f"{flag.names[0]} {raw!r} is not {allowed}"
        return number, None
    if flag.kind == "choice":
        if raw not in flag.choices:
            return None, f"{flag.names[0]} {raw!r} is not one of: {', '.join(flag.choices)}"
        return (int(raw) if flag.key == "block_size" else raw), None
    return raw, None


def read_flags(argv: list[str] | tuple[str, ...], spelled: dict | None = None,
               version: tuple[int, int] | None = None) -> tuple[dict, list[str]]:
    """({field: value}, [problem]) for the memory flags in a container's command line. `spelled`, when given,
    receives {field: (flag as written, value as written)}.

    On a vLLM server's command line (vllm_cli.server_arguments) every option is read as vLLM's parser of
    release `version` reads it (shortened, with underscores, `=value`), and one that release does not have is
    a problem, as vLLM refuses it; a flag it has that gpufleet does not model is ignored. After another
    program (a shell), only the memory flags written out in full are read."""
    found: dict = {}
    problems: list[str] = []
    spelled = {} if spelled is None else spelled
    args = [str(a) for a in argv]
    server = server_arguments(args)
    if server is not None:
        args = server
        tokens = options_in(args, *options_for(version))
    else:
        tokens = [Token(i, name, name, inline or None) for i, (name, _, inline) in
                  enumerate(a.partition("=") for a in args) if name in _BY_NAME]
    taken = -1  # the last value a flag consumed (a number may look like an option)
    for t in tokens:
        if t.index <= taken:
            continue
        if t.problem is not None:
            problems.append(t.problem)
            continue
        flag = _BY_NAME.get(t.flag) if t.flag is not None else None
        if flag is None:
            continue
        name, inline = t.written, t.inline
        if flag.kind in ("bool", "nobool"):
            if inline is not None:  # argparse's BooleanOptionalAction takes no value
                problems.append(f"{name}={inline}: {name} takes no value (vLLM refuses it: 'ignored explicit "
                                f"argument {inline!r}'); write {_spellings(name)}")
                continue
            found[flag.key] = flag.kind == "bool"
            spelled[flag.key] = (name, "")
            continue
        if inline is None:
            nxt = t.index + 1
            number = nxt < len(args) and args[nxt].lstrip("-").replace(".", "").isdigit()
            if nxt >= len(args) or (args[nxt].startswith("-") and not number):
                problems.append(f"{name} needs a value")
                continue
            inline, taken = args[nxt], nxt
        value, problem = _value(flag, inline)
        if problem:
            problems.append(problem)
        else:
            found[flag.key] = value
            spelled[flag.key] = (name, inline)
    return found, problems


def _spellings(name: str) -> str:
    """How a boolean flag is written: `--x or --no-x` (argparse negates long options only)."""
    if not name.startswith("--"):
        return f"{name} alone"
    return f"{name} or --{name[5:]}" if name.startswith("--no-") else f"{name} or --no-{name[2:]}"


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
