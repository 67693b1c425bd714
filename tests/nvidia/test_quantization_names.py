"""One list of quantization names: the config field, vLLM's --quantization flag, the checkpoint reader and the
flag/field comparison all take their names from gpufleet.nvidia.model_memory.quantization, and no other
module writes a list of them out again."""

from __future__ import annotations

import ast
import typing

import pytest

from gpufleet.config.model import Quantization
from gpufleet.nvidia.model_memory.flags import FLAGS, read_flags
from gpufleet.nvidia.model_memory.quantization import (
    METHODS,
    VLLM_FLAG_VALUES,
    VLLM_FROM_CONFIG,
    VLLM_KERNELS,
    method_of,
    read_scheme,
)
from tests.conftest import ROOT


def test_the_config_field_takes_exactly_the_formats_gpufleet_sizes():
    assert typing.get_args(Quantization) == METHODS


def test_the_quantization_flag_accepts_every_format_kernel_and_config_read_name():
    (flag,) = [f for f in FLAGS if "--quantization" in f.names]
    assert set(flag.choices) == set(METHODS) | set(VLLM_KERNELS) | set(VLLM_FROM_CONFIG)
    for name in VLLM_FLAG_VALUES:
        assert read_flags(["--quantization", name])[0]["quantization"] == name


#: what a format's quantization_config needs beyond its name
_MORE = {"compressed-tensors": {"config_groups": {"g": {"targets": ["Linear"], "weights": {"num_bits": 4}}}}}


@pytest.mark.parametrize("name", [*METHODS, *VLLM_KERNELS])
def test_every_format_and_kernel_name_is_sized_as_its_format(name):
    config = {"quantization_config": {"quant_method": name, **_MORE.get(method_of(name), {})}}
    assert read_scheme(config, 2).method == method_of(name) in METHODS


def test_a_name_read_from_config_is_not_sized_from_the_flag_alone():
    with pytest.raises(ValueError, match="is not one of"):
        read_scheme({}, 2, VLLM_FROM_CONFIG[0])


def _string_collections(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            yield {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        elif isinstance(node, ast.Dict):
            yield {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal":
            yield from _string_collections(node.slice)


def test_no_other_module_writes_out_its_own_list_of_quantization_names():
    home = ROOT / "gpufleet/nvidia/model_memory/quantization.py"
    names = set(METHODS) | set(VLLM_KERNELS) | set(VLLM_FROM_CONFIG)
    copies = []
    for path in sorted((ROOT / "gpufleet").rglob("*.py")) + sorted((ROOT / "components").rglob("*.py")):
        if path == home:
            continue
        for found in _string_collections(ast.parse(path.read_text())):
            if len(found & names) >= 2:
                copies.append(f"{path.relative_to(ROOT)}: {sorted(found & names)}")
    assert copies == []
