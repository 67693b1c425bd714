"""Any config.json a user keeps, however broken, gives either the engine's figures or a ValueError naming the
field: never another exception, never a crash in the verdict. Real configs are mutated field by field
(deleted, wrong type, zero, negative, huge, nested) and run through the whole path a stack or `gpufleet
memory` takes: the model block, the engine's flags, the served facts, and the verdict on a GPU."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.capacity.model_fit import mig_instance, whole_gpu
from gpufleet.config.model import ModelSpec
from gpufleet.config.model_serving import model_issues, served_model
from gpufleet.nvidia.model_memory.verdict import assess
from gpufleet.nvidia.products import find_product

CHECKPOINTS = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoints"
CONFIGS = sorted(p.parent.name for p in CHECKPOINTS.glob("*/config.json"))
ODD = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(2**40, 2**70), st.floats(allow_nan=True),
                st.text(max_size=5), st.lists(st.integers(0, 4), max_size=3),
                st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
DEVICES = [whole_gpu(find_product("NVIDIA-GeForce-RTX-4090")), whole_gpu(find_product("NVIDIA-H100-80GB-HBM3")),
           mig_instance(find_product("NVIDIA-H100-80GB-HBM3"), "1g.10gb", 9984)]


def _mutate(doc: dict, path: list[str], value) -> dict:
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value == "<delete>":
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return doc


def _paths(doc: dict, prefix=()) -> list[list[str]]:
    out = []
    for key, value in doc.items():
        out.append([*prefix, key])
        if isinstance(value, dict):
            out += _paths(value, (*prefix, key))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_mutated_config_json_gives_figures_or_a_named_problem(tmp_path, data):
    name = data.draw(st.sampled_from(CONFIGS))
    doc = json.loads((CHECKPOINTS / name / "config.json").read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)))
        doc = _mutate(doc, path, data.draw(st.one_of(st.just("<delete>"), ODD)))
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(doc))
    flags = data.draw(st.sampled_from([[], ["--max-model-len", "4096"], ["-tp", "2", "--max-model-len", "8k"],
                                       ["--kv-cache-dtype", "fp8", "--max-model-len", "1024", "-pp", "2"]]))
    try:
        spec = ModelSpec.model_validate({"config": str(folder)})
    except ValueError:
        return  # pydantic's ValidationError: reported with the file's name (tests/config)
    if model_issues("model", spec, 64, flags, "args", "vllm/vllm-openai:v0.11.0"):
        return
    try:
        served = served_model(spec, "vllm/vllm-openai:v0.11.0", flags)
    except ValueError as e:
        assert str(e)
        return
    for device in DEVICES:
        verdict = assess("", served, device)
        assert (verdict.error is None) == verdict.startup.starts or device.kind == "mps"
        assert verdict.startup.kv_tokens >= 0 and verdict.startup.weights >= 0
