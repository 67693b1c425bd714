"""`workloads[].model`: the model an inference workload serves, for the GPU memory it needs (docs/model-memory.md).

Either the architecture facts (`parameters`, `layers`, `kvHeads`, `headDim` or `hiddenSize` + `attentionHeads`),
or `config:`, the path (relative to the project directory) of a Hugging Face config.json kept in the
repository; it is read offline when the stack is loaded, never downloaded. Facts written beside `config:`
win over the file's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from gpufleet.config._base import Model
from gpufleet.errors import ConfigIssue
from gpufleet.nvidia.hf_config import HfConfigError, hf_config_facts
from gpufleet.nvidia.model_memory import ModelShape, Serving

Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp32"]
KvDtype = Literal["auto", "bf16", "fp16", "fp8", "fp32"]
#: config.json fact (the field's Python name) -> its YAML key.
_FACT_FIELDS = {"layers": "layers", "kv_heads": "kvHeads", "head_dim": "headDim", "hidden_size": "hiddenSize",
                "attention_heads": "attentionHeads",
                "parameters": "parameters", "architecture": "architecture", "dtype": "dtype",
                "max_position_embeddings": "maxPositionEmbeddings", "moe": "moe"}


def _read_hf_config(path: str, project_dir: Path) -> dict:
    """The facts of a config.json under the project; ValueError with the path and the problem."""
    where = (project_dir / path) if not Path(path).is_absolute() else Path(path)
    shown = f"'{path}'" + ("" if str(where) == path else f" ({where})")
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"config.json {shown} does not exist; expected the path of a Hugging Face config.json "
                         "kept in the project (it is never downloaded)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"config.json {shown} cannot be read: {e.__class__.__name__}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"config.json {shown} is not JSON: {e.msg} at line {e.lineno}") from None
    try:
        return hf_config_facts(doc)
    except HfConfigError as e:
        raise ValueError(f"config.json {shown} {e}") from None


def _project_dir(info: ValidationInfo) -> Path:
    context = info.context or {}
    return Path(context.get("project_dir") or ".")


class ModelSpec(Model):
    """The served model and how the engine serves it."""

    name: str | None = None
    """A label for messages, e.g. meta-llama/Llama-3.1-8B-Instruct."""
    config: str | None = None
    """Path of the model's Hugging Face config.json in the project (read offline)."""
    parameters: int | None = Field(default=None, ge=1)
    """Total parameters (e.g. 8030261248). Derived from config.json for Llama, Mistral and Qwen2 models."""
    layers: int | None = Field(default=None, ge=1)
    """num_hidden_layers."""
    kv_heads: int | None = Field(default=None, ge=1)
    """num_key_value_heads (GQA); the attention heads for MHA models."""
    head_dim: int | None = Field(default=None, ge=1)
    """head_dim; default hiddenSize / attentionHeads."""
    hidden_size: int | None = Field(default=None, ge=1)
    attention_heads: int | None = Field(default=None, ge=1)
    """num_attention_heads (only to derive headDim)."""
    architecture: str | None = None
    """architectures[0] of config.json, e.g. LlamaForCausalLM: picks the activation constant."""
    moe: bool = False
    """Mixture of experts (larger activation constant)."""
    max_position_embeddings: int | None = Field(default=None, ge=1)
    """The model's longest context; maxModelLen may not exceed it."""
    dtype: Dtype | None = None
    """Weight dtype: bf16, fp16, fp8, int8, int4 (fp32). Default: config.json torch_dtype, else bf16."""
    kv_cache_dtype: KvDtype = "auto"
    """KV cache dtype (vLLM --kv-cache-dtype); auto is the compute dtype (16-bit for quantized weights)."""
    max_model_len: int | None = Field(default=None, ge=1)
    """Longest sequence (prompt + output) served; default maxPositionEmbeddings."""
    max_num_seqs: int = Field(default=1, ge=1)
    """Sequences served at once at full context (vLLM --max-num-seqs). Default 1: vLLM's own startup check."""
    tensor_parallel: int = Field(default=1, ge=1)
    """GPUs the model is split over (vLLM --tensor-parallel-size); at most gpu.count."""
    activation_mib: int | None = Field(default=None, ge=0, alias="activationMiB")
    """Measured activation peak in MiB (vLLM log 'torch peak memory increase'); default llm-d's constants."""

    @model_validator(mode="before")
    @classmethod
    def _merge_config_json(cls, data: Any, info: ValidationInfo) -> Any:
        """Facts from config.json for the keys not written in the stack file (a bad file: see `_check_config`)."""
        if not isinstance(data, dict) or not isinstance(data.get("config"), str):
            return data
        try:
            facts = _read_hf_config(data["config"], _project_dir(info))
        except ValueError:
            return data
        merged = dict(data)
        for fact, key in _FACT_FIELDS.items():
            if fact in facts and key not in data and fact not in data:
                merged[key] = facts[fact]
        return merged

    @field_validator("config")
    @classmethod
    def _check_config(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            try:
                _read_hf_config(value, _project_dir(info))
            except ValueError as e:
                raise PydanticCustomError("config_json", str(e).replace("{", "{{").replace("}", "}}")) from None
        return value

    def shape(self) -> ModelShape:
        """The facts, once `model_issues` found none missing."""
        head_dim = self.head_dim or self.hidden_size // self.attention_heads
        return ModelShape(self.parameters, self.layers, self.kv_heads, head_dim, self.dtype or "bf16",
                          self.kv_cache_dtype, self.architecture, self.moe, self.max_position_embeddings,
                          None if self.activation_mib is None else self.activation_mib << 20)

    def serving(self) -> Serving:
        return Serving(self.max_model_len or self.max_position_embeddings, self.max_num_seqs, self.tensor_parallel)

    @property
    def label(self) -> str:
        return self.name or self.config or ""


def model_issues(path: str, model: ModelSpec, gpu_count: int, argv: list[str] | tuple[str, ...] = (),
                 args_path: str = "") -> list[ConfigIssue]:
    """Facts a workload's `model:` block (at YAML path `path`) lacks or contradicts; `argv`: the command line
    of a vLLM image (its flags must say what the block says, at `args_path`)."""
    source = " or in its config.json" if model.config else " (or set config: to a config.json)"
    issues = []
    for key, value in (("parameters", model.parameters), ("layers", model.layers), ("kvHeads", model.kv_heads)):
        if value is None:
            issues.append(ConfigIssue(f"{path}.{key}", f"required to compute GPU memory; expected it here{source}"))
    if model.head_dim is None and not (model.hidden_size and model.attention_heads):
        issues.append(ConfigIssue(f"{path}.headDim", f"required (or hiddenSize and attentionHeads){source}"))
    if model.max_model_len is None and model.max_position_embeddings is None:
        issues.append(ConfigIssue(f"{path}.maxModelLen", "required: the longest sequence served (no "
                                  "maxPositionEmbeddings to default to)"))
    elif (model.max_model_len and model.max_position_embeddings
          and model.max_model_len > model.max_position_embeddings):
        issues.append(ConfigIssue(f"{path}.maxModelLen", f"{model.max_model_len} exceeds the model's context "
                                  f"(maxPositionEmbeddings {model.max_position_embeddings}); allowed: 1 to "
                                  f"{model.max_position_embeddings}"))
    if model.tensor_parallel > gpu_count:
        issues.append(ConfigIssue(f"{path}.tensorParallel", f"{model.tensor_parallel} GPUs, but gpu.count is "
                                  f"{gpu_count}; allowed: 1 to {gpu_count}"))
    issues += _flag_issues(path, model, argv, args_path)
    if model.tensor_parallel > 1 and model.attention_heads and model.attention_heads % model.tensor_parallel:
        issues.append(ConfigIssue(f"{path}.tensorParallel", f"{model.attention_heads} attention heads do not "
                                  f"divide by {model.tensor_parallel} (vLLM refuses)"))
    return issues


def check_model(i: int, w) -> list[ConfigIssue]:
    """The problems of workload i's `model:` block (with its GPU request and, for vLLM images, its flags)."""
    from gpufleet.config._paths import yaml_path

    if w.gpu is None:
        return [ConfigIssue(yaml_path("workloads", i, "gpu"), "required with model: the model's memory is checked "
                            "against the GPU (or share) the workload requests")]
    argv = [*(w.command or []), *(w.args or [])] if "vllm" in w.image.lower() else []
    return model_issues(yaml_path("workloads", i, "model"), w.model, w.gpu.count, argv,
                        yaml_path("workloads", i, "args" if w.args else "command"))


#: vLLM --kv-cache-dtype spellings -> ours (fp8 variants all take one byte).
_VLLM_KV_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}


def _flag_issues(path: str, model: ModelSpec, argv, args_path: str) -> list[ConfigIssue]:
    from gpufleet.nvidia.model_budget import cli_flag

    declared = {"--max-model-len": ("maxModelLen", model.max_model_len or model.max_position_embeddings),
                "--max-num-seqs": ("maxNumSeqs", model.max_num_seqs),
                "--tensor-parallel-size": ("tensorParallel", model.tensor_parallel),
                "--kv-cache-dtype": ("kvCacheDtype", model.kv_cache_dtype)}
    issues = []
    for flag, (key, value) in declared.items():
        given = cli_flag(list(argv), flag)
        if given is None or value is None:
            continue
        same = given.split("_")[0] == "fp8" == value or _VLLM_KV_DTYPES.get(given, given) == str(value)
        if not same:
            issues.append(ConfigIssue(args_path, f"{flag} {given} disagrees with {path.split(':', 1)[1]}.{key} "
                                      f"{value}; expected the same value (the GPU memory check uses model:)"))
    return issues


def memory_conflicts(workloads) -> list[str]:
    """Warnings for workloads whose declared gpu.memoryMiB disagrees with their model's computed need."""
    from gpufleet.config._paths import yaml_path
    from gpufleet.nvidia.model_memory import conflict_message, need_per_gpu

    out = []
    for i, w in enumerate(workloads):
        if w.model is None or w.gpu is None or w.gpu.memory_mib is None:
            continue
        serving = w.model.serving()
        need = need_per_gpu(w.model.shape(), serving).mib * serving.tensor_parallel
        message = conflict_message(yaml_path("workloads", i), w.gpu.memory_mib, need)
        if message is not None:
            out.append(message)
    return out
