"""The pure parts of gpufleet.nvidia.model_memory: the KV layout of a config.json, vLLM's start-up arithmetic,
the `vllm serve` flags, the annotation's facts and the verdicts with their fixes.

Expected values are published facts (config.json fixtures, vLLM's own log lines in tests/fixtures/vllm-logs,
vLLM's source as quoted in docs/model-memory.md), not outputs of gpufleet's formulas.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.nvidia.model_memory import vllm
from gpufleet.nvidia.model_memory.attention import AttentionConfigError, kv_layout
from gpufleet.nvidia.model_memory.checkpoint import read_checkpoint, weights_per_gpu
from gpufleet.nvidia.model_memory.flags import image_version, parse_length, read_flags
from gpufleet.nvidia.model_memory.served import ServedModel, activation_shape, from_facts, legacy_annotation
from gpufleet.nvidia.model_memory.verdict import Device, assess
from gpufleet.nvidia.model_memory.vllm import (
    GIB,
    MIB,
    VllmArgs,
    default_batched_tokens,
    default_max_num_seqs,
    default_utilization,
    kv_capacity,
    largest_accepted_len,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "checkpoints"
H100_MIB = 81559  # NVML total of an H100 80GB HBM3 (nvidia.com/gpu.memory)
L4_MIB = 23034


def config(slug: str) -> dict:
    return json.loads((FIXTURES / slug / "config.json").read_text())


LLAMA_8B = json.loads((ROOT / "models/llama-3.1-8b/config.json").read_text())


def llama(max_model_len: int = 131072, **args) -> ServedModel:
    weights = weights_per_gpu(read_checkpoint(LLAMA_8B), args.get("tensor_parallel", 1), 1, 1, False)
    return ServedModel("Llama-3.1-8B", weights, kv_layout(LLAMA_8B, tensor_parallel=args.get("tensor_parallel", 1)),
                       activation_shape(LLAMA_8B, args.get("tensor_parallel", 1)),
                       VllmArgs(max_model_len=max_model_len, **args), max_position=131072)


def whole(mib: int, name: str = "a whole GPU", **kw) -> Device:
    return Device("gpu", mib, name, **kw)


# --- 1. attention.kv_layout ---------------------------------------------------------------------------------------

def test_llama_3_1_8b_keeps_128_kib_per_token_two_x_32_layers_x_8_heads_x_128_x_2_bytes():
    kv = kv_layout(LLAMA_8B)
    assert kv.bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131_072
    assert (kv.full_layers, kv.sliding_layers, kv.latent) == (32, (), False)
    assert kv_layout(LLAMA_8B, "fp8").bytes_per_token == 65_536  # one byte per element
    assert kv_layout(LLAMA_8B, model_dtype_bytes=4).bytes_per_token == 262_144  # auto follows the compute dtype


def test_mha_config_without_kv_heads_keeps_every_attention_head():
    # Phi-3-mini-4k: 32 heads, 32 KV heads, head_dim = 3072 / 32 = 96, 32 layers (all sliding, window 2047)
    kv = kv_layout(config("microsoft__Phi-3-mini-4k-instruct"))
    assert kv.bytes_per_token_layer == 2 * 32 * 96 * 2
    mha = {"num_hidden_layers": 4, "num_attention_heads": 16, "hidden_size": 1024}
    assert kv_layout(mha).bytes_per_token == 2 * 4 * 16 * 64 * 2


@pytest.mark.parametrize("tp,heads_per_gpu", [(1, 8), (2, 4), (4, 2), (8, 1), (16, 1)])
def test_kv_heads_split_over_tensor_parallel_and_are_replicated_below_one_per_gpu(tp, heads_per_gpu):
    assert kv_layout(LLAMA_8B, tensor_parallel=tp).bytes_per_token == 2 * 32 * heads_per_gpu * 128 * 2


def test_qwen2_5_7b_with_4_kv_heads_keeps_one_head_per_gpu_at_tp_8():
    qwen = config("Qwen__Qwen2.5-7B-Instruct")  # 28 layers, 28 / 4 heads, head_dim 3584 / 28 = 128
    assert kv_layout(qwen).bytes_per_token == 2 * 28 * 4 * 128 * 2
    assert kv_layout(qwen, tensor_parallel=8).bytes_per_token == 2 * 28 * 1 * 128 * 2


@pytest.mark.parametrize("pp,layers", [(1, 32), (2, 16), (4, 8), (3, 11), (5, 7)])
def test_a_pipeline_stage_keeps_only_its_layers_the_most_loaded_one_counted(pp, layers):
    assert kv_layout(LLAMA_8B, pipeline_parallel=pp).layers == layers == math.ceil(32 / pp)


def test_gpt_oss_layer_types_give_half_sliding_layers_of_window_128():
    kv = kv_layout(config("openai__gpt-oss-20b"))  # 24 layers alternating sliding / full, window 128
    assert kv.full_layers == 12 and kv.sliding_layers == ((128, 12),)
    assert kv.bytes_per_token_layer == 2 * 8 * 64 * 2


def test_gemma_2_alternates_sliding_and_full_layers():
    kv = kv_layout(config("google__gemma-2-9b-it"))  # 42 layers, window 4096, 8 KV heads x 256
    assert kv.full_layers == 21 and kv.sliding_layers == ((4096, 21),)
    assert kv.bytes_per_token_layer == 2 * 8 * 256 * 2


def test_gemma_3_keeps_one_full_layer_in_six_and_reads_text_config():
    kv = kv_layout(config("google__gemma-3-4b-it"))  # text_config: 34 layers, window 1024, 4 KV heads x 256
    assert kv.full_layers == 5 and kv.sliding_layers == ((1024, 29),)  # layers 6, 12, 18, 24, 30 are global
    assert kv.bytes_per_token_layer == 2 * 4 * 256 * 2
    explicit = {**config("google__gemma-3-4b-it")["text_config"], "sliding_window_pattern": 2}
    assert kv_layout(explicit).full_layers == 17


def test_mistral_style_sliding_window_applies_to_every_layer():
    mistral = {"model_type": "mistral", "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "hidden_size": 4096, "sliding_window": 4096}  # Mistral-7B v0.1
    kv = kv_layout(mistral)
    assert kv.full_layers == 0 and kv.sliding_layers == ((4096, 32),)


def test_qwen2_sliding_window_is_ignored_when_use_sliding_window_is_false():
    qwen = config("Qwen__Qwen2.5-7B-Instruct")
    assert qwen["sliding_window"] == 131072 and qwen["use_sliding_window"] is False
    kv = kv_layout(qwen)
    assert kv.full_layers == 28 and kv.sliding_layers == ()


def test_mla_keeps_one_latent_of_kv_lora_rank_plus_rope_dim_the_same_on_every_rank():
    v3 = config("deepseek-ai__DeepSeek-V3")  # 61 layers, kv_lora_rank 512, qk_rope_head_dim 64
    kv = kv_layout(v3)
    assert kv.latent and kv.bytes_per_token == 61 * (512 + 64) * 2 == 70_272
    assert kv_layout(v3, tensor_parallel=8).bytes_per_token == 70_272
    assert kv_layout(v3, "fp8").bytes_per_token == 61 * 576
    assert kv_layout(v3, "fp8_ds_mla").bytes_per_token_layer == 656
    lite = kv_layout(config("deepseek-ai__DeepSeek-V2-Lite"))
    assert lite.latent and lite.bytes_per_token == 27 * 576 * 2


@pytest.mark.parametrize("cfg,field", [
    ({"num_attention_heads": 32, "hidden_size": 4096}, "num_hidden_layers"),
    ({"num_hidden_layers": 0, "num_attention_heads": 32, "hidden_size": 4096}, "num_hidden_layers"),
    ({"num_hidden_layers": 4, "num_attention_heads": "32", "hidden_size": 4096}, "num_attention_heads"),
    ({"num_hidden_layers": 4, "hidden_size": 4096}, "num_attention_heads"),
    ({"num_hidden_layers": 4, "num_attention_heads": 32}, "hidden_size"),
    ({"num_hidden_layers": 4, "num_attention_heads": 32, "hidden_size": 4096, "num_key_value_heads": -8},
     "num_key_value_heads"),
    ({"num_hidden_layers": 4, "num_attention_heads": 32, "head_dim": True}, "head_dim"),
    ({"num_hidden_layers": 4, "kv_lora_rank": 512}, "qk_rope_head_dim"),
    ({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8, "layer_types": ["full_attention"]},
     "layer_types"),
    ({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8,
      "layer_types": ["sliding_attention", "full_attention"]}, "sliding_window"),
])
def test_a_bad_attention_field_raises_naming_it(cfg, field):
    with pytest.raises(AttentionConfigError, match=field):
        kv_layout(cfg)


def test_an_unknown_kv_cache_dtype_is_named():
    with pytest.raises(AttentionConfigError, match="fp4"):
        kv_layout(LLAMA_8B, "fp4")


def test_layer_types_that_are_not_strings_are_an_attention_config_error():
    # config.json is user input: a malformed layer_types entry must be reported, not crash with TypeError
    with pytest.raises(AttentionConfigError):
        kv_layout({"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8, "layer_types": [{}, []]})


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 200), st.floats(allow_nan=True),
                       st.text(max_size=12), st.sampled_from(["full_attention", "sliding_attention", "gemma2",
                                                              "gemma3_text", "linear_attention"]))
_json = st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6),
                                                                                             inner, max_size=3),
                     max_leaves=8)
_KEYS = ["num_hidden_layers", "n_layer", "num_attention_heads", "num_key_value_heads", "head_dim", "hidden_size",
         "sliding_window", "use_sliding_window", "layer_types", "sliding_window_pattern", "model_type",
         "kv_lora_rank", "qk_rope_head_dim", "num_kv_heads", "text_config"]
_configs = st.dictionaries(st.sampled_from(_KEYS), _json, max_size=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_configs, st.sampled_from(["auto", "fp8", "fp8_ds_mla", "bf16", "int3"]), st.integers(1, 16),
       st.integers(1, 8))
def test_arbitrary_json_configs_give_a_layout_or_an_attention_config_error(cfg, dtype, tp, pp):
    try:
        kv = kv_layout(cfg, dtype, 2, tp, pp)
    except AttentionConfigError:
        return
    assert kv.bytes_per_token_layer > 0 and kv.layers >= 0


# --- 2. vllm: the start-up ----------------------------------------------------------------------------------------

def test_the_engine_reserves_the_cuda_total_times_the_utilization():
    visible = 79 * GIB
    for util in (0.5, 0.9, 0.95):
        s = llama(8192, gpu_memory_utilization=util).on_device(visible)
        assert s.requested == pytest.approx(visible * util, abs=1)


def test_kv_budget_is_what_the_reservation_leaves_after_weights_activation_runtime_and_graphs():
    s = llama(8192, version=(0, 21)).on_device(79 * GIB)
    assert s.kv_available == s.requested - s.weights - s.activation - s.non_torch - s.cudagraph
    assert s.weights == 2 * 8_030_261_248  # bf16, every parameter on one GPU


def test_a_whole_gpu_shows_the_cuda_runtime_less_than_nvml():
    # H100 80GB: NVML 81,559 MiB, CUDA reports 79.19 GiB (0.45 GiB less)
    assert vllm.cuda_visible_bytes(H100_MIB, mig=False) / GIB == pytest.approx(79.19, abs=0.1)
    assert vllm.cuda_visible_bytes(40320, mig=True) == 40320 * MIB  # a MIG instance as labelled


def test_one_block_of_headroom_is_the_exact_start_boundary():
    # --kv-cache-memory 2000 MiB = 1000 blocks of 16 tokens x 128 KiB: a request of 16,000 tokens fits, 16,001 not
    kv = kv_layout(LLAMA_8B)
    assert largest_accepted_len(kv, 2000 * MIB, 8192, 16, 131072) == 16000
    base = llama(16000, kv_cache_memory_bytes=2000 * MIB)
    assert base.on_device(79 * GIB).starts
    refused = base.with_args(max_model_len=16001).on_device(79 * GIB)
    assert refused.refusal.kind == "one_sequence"
    assert "the estimated maximum model length is 16000." in refused.refusal.message


@pytest.mark.parametrize("mib", [L4_MIB, 24576, 19968])
def test_the_largest_accepted_length_starts_and_one_token_more_is_refused(mib):
    served = llama(131072)
    s = served.on_device(mib * MIB)
    largest = s.largest_max_model_len
    assert not s.starts and largest is not None
    assert served.with_args(max_model_len=largest).on_device(mib * MIB).starts
    again = served.with_args(max_model_len=largest + 1).on_device(mib * MIB)
    assert again.refusal is not None and again.refusal.kind == "one_sequence"
    # vLLM's message, as quoted in docs/model-memory.md, with its own estimate
    assert again.refusal.message.startswith(
        f"To serve at least one request with the models's max seq len ({largest + 1}), (")
    assert f"the estimated maximum model length is {largest}." in again.refusal.message
    assert "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`" in again.refusal.message


def test_nothing_left_for_kv_blocks_is_vllms_no_available_memory_refusal():
    # Llama-3.1-8B's 14.96 GiB of weights load in 16.5 GiB, but 90 % of it leaves nothing for the cache
    s = llama(4096).on_device(round(16.5 * GIB))
    assert s.refusal.kind == "no_cache"
    assert s.refusal.message.startswith("No available memory for the cache blocks. Try increasing "
                                        "`gpu_memory_utilization`")
    assert s.largest_max_model_len is None


def test_weights_beyond_the_device_are_a_weights_refusal():
    s = llama(4096).on_device(12 * GIB)
    assert s.refusal.kind == "weights" and "CUDA out of memory" in s.refusal.message
    assert "14.96 GiB" in s.refusal.message  # 2 x 8,030,261,248 bytes


def test_full_attention_capacity_matches_vllms_log_for_llama_8b_on_a100():
    # tests/fixtures/vllm-logs vllm-gce-a100-llama-3.1-8b-131k-eager: "Available KV cache memory: 19.28 GiB",
    # "GPU KV cache size: 157,936 tokens", "Maximum concurrency for 131,072 tokens per request: 1.20x"
    kv = kv_layout(LLAMA_8B)
    available = 157_936 // 16 * 16 * 131_072 + 100_000  # what the log's 19.28 GiB held, less than a block more
    assert round(available / GIB, 2) == 19.28
    tokens, concurrency = kv_capacity(kv, available, 131072, 8192, 16)
    assert tokens == 157_936
    assert f"{concurrency:.2f}" == "1.20"


def test_full_attention_capacity_matches_vllms_log_for_mistral_small_with_block_128():
    # llm-d-bench-h100-mistral-small-3.2-24b-u095-16k: 40 layers, 8 KV heads x 128, --block-size 128,
    # "Available KV cache memory: 28.20 GiB", "GPU KV cache size: 184,832 tokens", concurrency 11.55x at 16,000
    kv = kv_layout({"num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128})
    available = round(28.204 * GIB)
    tokens, concurrency = kv_capacity(kv, available, 16000, 8192, 128)
    assert tokens == 184_832
    assert f"{concurrency:.2f}" == "11.55"


@pytest.mark.parametrize("length", [1, 16, 17, 4000, 131072])
def test_full_attention_concurrency_is_blocks_over_the_blocks_of_one_request(length):
    kv = kv_layout(LLAMA_8B)
    blocks = 3000
    tokens, concurrency = kv_capacity(kv, blocks * 16 * 131_072, length, 8192, 16)
    assert tokens == blocks * 16
    assert concurrency == pytest.approx(blocks / -(-length // 16))


def test_a_hybrid_model_holds_more_full_length_requests_than_its_tokens_over_the_length():
    kv = kv_layout(config("openai__gpt-oss-20b"))
    for length in (32768, 65536, 131072):  # longer than the window and one chunk of 8,192 tokens
        tokens, concurrency = kv_capacity(kv, 20 * GIB, length, 8192, 16)
        assert concurrency > tokens / length
    # the sliding layers keep a window and a chunk: one long request needs about half the all-full-layer cache
    s = ServedModel("gpt-oss", 13 * GIB, kv, None, VllmArgs(131072)).on_device(79 * GIB)
    assert s.one_sequence < 0.6 * kv.bytes_per_token * 131072


@pytest.mark.parametrize("visible,mig,a100,tokens,seqs", [
    (79 * GIB, False, False, 8192, 1024),
    (70 * GIB, False, False, 8192, 1024),
    (70 * GIB - 1, False, False, 2048, 256),
    (22 * GIB, False, False, 2048, 256),
    (79 * GIB, False, True, 2048, 256),    # A100 80GB keeps the small defaults
    (79 * GIB, True, False, 2048, 256),    # a MIG instance
])
def test_serve_defaults_depend_on_the_device_size(visible, mig, a100, tokens, seqs):
    args = VllmArgs(4096)
    assert default_batched_tokens(args, visible, mig, a100) == tokens
    assert default_max_num_seqs(args, visible, mig, a100) == seqs
    assert llama(4096).on_device(visible, mig=mig, a100=a100).max_num_seqs == seqs


def test_declared_batch_flags_override_the_defaults():
    args = VllmArgs(4096, max_num_seqs=7, max_num_batched_tokens=512)
    assert default_batched_tokens(args, 79 * GIB, False) == 512
    assert default_max_num_seqs(args, 79 * GIB, False) == 7
    # without chunked prefill a whole prompt is one batch
    assert default_batched_tokens(VllmArgs(32768, chunked_prefill=False), 79 * GIB, False) == 32768


def test_kv_cache_memory_replaces_the_utilization_budget():
    for util in (0.5, 0.9):
        s = llama(8192, gpu_memory_utilization=util, kv_cache_memory_bytes=10 * GIB).on_device(79 * GIB)
        assert s.kv_available == 10 * GIB and s.starts


def test_kv_cache_memory_beyond_the_device_is_refused():
    s = llama(8192, kv_cache_memory_bytes=70 * GIB).on_device(79 * GIB)
    assert not s.starts and s.refusal.kind == "no_cache"


def test_cuda_graphs_count_in_the_budget_only_from_0_21_and_not_when_eager():
    assert llama(8192).on_device(79 * GIB).cudagraph == 0
    assert llama(8192, version=(0, 20)).on_device(79 * GIB).cudagraph == 0
    counted = llama(8192, version=(0, 21)).on_device(79 * GIB)
    assert counted.cudagraph > 0
    eager = llama(8192, version=(0, 21), enforce_eager=True).on_device(79 * GIB)
    assert eager.cudagraph == 0 and eager.kv_available == counted.kv_available + counted.cudagraph


def test_default_utilization_is_0_92_from_0_21_and_0_9_before():
    assert default_utilization(None) == 0.9
    assert default_utilization((0, 11)) == 0.9
    assert default_utilization((0, 21)) == 0.92
    assert default_utilization((1, 0)) == 0.92


# --- 3. flags -----------------------------------------------------------------------------------------------------

def test_both_spellings_of_a_flag_are_read():
    found, problems = read_flags(["vllm", "serve", "m", "-tp", "4", "--pipeline-parallel-size=2", "-dp", "2",
                                  "--max-model-len", "8192", "--gpu-memory-utilization=0.8", "--enforce-eager",
                                  "--kv-cache-dtype", "fp8", "--max-num-seqs", "64", "--port", "8000"])
    assert problems == []
    assert found == {"tensor_parallel": 4, "pipeline_parallel": 2, "data_parallel": 2, "max_model_len": 8192,
                     "gpu_memory_utilization": 0.8, "enforce_eager": True, "kv_cache_dtype": "fp8",
                     "max_num_seqs": 64}


def test_a_flag_no_release_has_is_refused_naming_the_nearest_one():
    found, problems = read_flags(["--max-model-length", "8192"], version=(0, 11))
    assert found == {}
    assert problems == ["--max-model-length: no such flag in vLLM 0.11.0, which refuses it: 'unrecognized "
                        "arguments: --max-model-length'; did you mean --max-model-len?"]


def test_real_flags_gpufleet_does_not_model_are_accepted_and_ignored():
    argv = ["meta-llama/Llama-3.1-8B-Instruct", "--port", "8000", "--served-model-name", "a", "b",
            "--enable-prefix-caching", "--no-enable-prefix-caching", "--trust-remote-code", "--api-key", "k",
            "--compilation-config.level", "3", "-O3", "--swap-space", "4", "--max-model-len", "4096"]
    assert read_flags(argv, version=(0, 11)) == ({"max_model_len": 4096}, [])


@pytest.mark.parametrize("argv", [["--max_model_len", "4096"], ["--max-model=4096"], ["--max-model", "4096"],
                                  ["--max_model", "4096"]])
def test_flags_are_read_as_vllms_parser_reads_them_shortened_or_with_underscores(argv):
    assert read_flags(argv, version=(0, 11)) == ({"max_model_len": 4096}, [])


def test_a_shortening_of_several_flags_is_refused_as_ambiguous():
    _, problems = read_flags(["--max-num", "8"], version=(0, 11))
    assert problems == ["--max-num: vLLM 0.11.0 refuses it: 'ambiguous option: --max-num could match "
                        "--max-num-batched-tokens, --max-num-partial-prefills, --max-num-seqs'; write the "
                        "whole flag"]


def test_a_flag_is_checked_against_the_release_that_runs_it():
    _, problems = read_flags(["-ep"], version=(0, 11))
    assert problems == ["-ep: no such flag in vLLM 0.11.0, which refuses it: 'unrecognized arguments: -ep' "
                        "(a flag of vLLM 0.33.0); did you mean -tp?"]
    assert read_flags(["-ep"], version=(0, 33)) == ({"expert_parallel": True}, [])
    assert read_flags(["-ep"], version=(0, 21)) == ({"expert_parallel": True}, [])  # a release not recorded


@pytest.mark.parametrize("argv", [
    ["python3", "-m", "vllm.entrypoints.openai.api_server", "--max-model-length", "1"],
    ["vllm", "serve", "m", "--max-model-length", "1"]])
def test_a_vllm_launcher_before_the_flags_is_skipped(argv):
    assert read_flags(argv, version=(0, 11))[1][0].startswith("--max-model-length: no such flag")


def test_flags_after_another_program_are_not_judged():
    argv = ["sh", "-c", "exec vllm serve m --max-model-length 1", "--max-model-length"]
    assert read_flags(argv) == ({}, [])


def test_a_value_attached_to_a_boolean_flag_is_refused_as_argparse_refuses_it():
    assert read_flags(["--enforce-eager=true"]) == ({}, [
        "--enforce-eager=true: --enforce-eager takes no value (vLLM refuses it: 'ignored explicit argument "
        "'true''); write --enforce-eager or --no-enforce-eager"])
    assert read_flags(["--no-enable-chunked-prefill"]) == ({"chunked_prefill": False}, [])


def test_the_last_occurrence_wins_as_with_argparse():
    found, _ = read_flags(["--tensor-parallel-size", "2", "-tp", "4", "--max-model-len=1024", "--max-model-len",
                           "2048"])
    assert found["tensor_parallel"] == 4 and found["max_model_len"] == 2048


@pytest.mark.parametrize("text,value", [("32k", 32_000), ("32K", 32_768), ("1.5k", 1_500), ("1m", 1_000_000),
                                        ("1M", 1_048_576), ("8192", 8192)])
def test_lengths_take_vllms_human_readable_forms(text, value):
    assert parse_length(text) == value
    assert read_flags(["--max-model-len", text])[0]["max_model_len"] == value


@pytest.mark.parametrize("argv,flag,value,allowed", [
    (["--max-model-len", "lots"], "--max-model-len", "lots", "positive integer"),
    (["--max-model-len", "0"], "--max-model-len", "0", "positive integer"),
    (["--max-model-len", "-5"], "--max-model-len", "-5", "positive integer"),
    (["-tp", "two"], "--tensor-parallel-size", "two", "positive integer"),
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization", "1.5", "at most 1"),
    (["--gpu-memory-utilization=0"], "--gpu-memory-utilization", "0", "above 0"),
    (["--kv-cache-dtype", "fp4"], "--kv-cache-dtype", "fp4", "fp8"),
    (["--block-size", "24"], "--block-size", "24", "16"),
])
def test_a_bad_value_is_a_problem_naming_flag_value_and_what_is_allowed(argv, flag, value, allowed):
    found, problems = read_flags(argv)
    assert found == {}
    (problem,) = problems
    assert flag in problem and repr(value) in problem and allowed in problem


def test_a_flag_without_its_value_is_a_problem():
    assert read_flags(["--max-model-len"])[1] == ["--max-model-len needs a value"]
    found, problems = read_flags(["--max-model-len", "--enforce-eager"])
    assert problems == ["--max-model-len needs a value"] and found == {"enforce_eager": True}


@pytest.mark.parametrize("argv", [["--max-num-seqs", "\u00b3"],        # '³' passes str.isdigit, not int()
                                  ["--max-model-len", "9" * 400],       # float overflow to inf
                                  ["-tp", "9" * 5000]])                  # Python's 4,300-digit int limit
def test_odd_numbers_are_problems_never_exceptions(argv):
    found, problems = read_flags(argv)
    assert problems and found == {}


_flag_names = st.sampled_from(["--max-model-len", "--max-num-seqs", "-tp", "--tensor-parallel-size", "-pp",
                               "--gpu-memory-utilization", "--kv-cache-memory", "--enforce-eager", "-ep",
                               "--kv-cache-dtype", "--block-size", "--quantization", "--dtype", "--cpu-offload-gb",
                               "--no-enable-chunked-prefill", "--max-num-batched-tokens", "serve", "x"])
_values = st.one_of(st.text(max_size=8), st.integers(-10, 10**6).map(str), st.floats().map(str),
                    st.sampled_from(["32k", "1.5K", "nan", "inf", "-1", "true", "fp8", "16", "0.9", "٣", "²"]))
_argv = st.lists(st.one_of(_flag_names, _values, st.tuples(_flag_names, _values).map("=".join)), max_size=12)


@settings(max_examples=400, deadline=None)
@given(_argv)
def test_random_command_lines_give_values_and_problems_never_an_exception(argv):
    found, problems = read_flags(argv)
    assert all(isinstance(p, str) and p.startswith("-") for p in problems)
    for key in ("max_model_len", "max_num_seqs", "tensor_parallel", "pipeline_parallel", "kv_cache_memory_bytes",
                "max_num_batched_tokens"):
        if key in found:
            assert isinstance(found[key], int) and found[key] >= 1
    if "gpu_memory_utilization" in found:
        assert 0 < found["gpu_memory_utilization"] <= 1


@pytest.mark.parametrize("image,version", [
    ("vllm/vllm-openai:v0.11.0", (0, 11)), ("vllm/vllm-openai:0.21.1", (0, 21)),
    ("registry.local:5000/vllm/vllm-openai:v0.9.2", (0, 9)), ("vllm/vllm-openai:latest", None),
    ("vllm/vllm-openai", None), ("vllm/vllm-openai@sha256:" + "a" * 64, None),
    ("registry.local:5000/vllm/vllm-openai", None),
])
def test_image_version_reads_the_tag(image, version):
    assert image_version(image) == version


# --- 4. served: the annotation's facts ------------------------------------------------------------------------------

def _served_examples() -> list[ServedModel]:
    gpt = config("openai__gpt-oss-20b")
    return [
        llama(32768, max_num_seqs=8, version=(0, 11)),
        ServedModel("gpt-oss-20b", 13 * GIB, kv_layout(gpt), activation_shape(gpt),
                    VllmArgs(131072, tensor_parallel=2, expert_parallel=True, kv_cache_memory_bytes=9 * GIB),
                    131072, True, "index", 3 * GIB),
        ServedModel("dsv3", 80 * GIB, kv_layout(config("deepseek-ai__DeepSeek-V3"), "fp8_ds_mla"), None,
                    VllmArgs(8192, gpu_memory_utilization=0.95, enforce_eager=True, block_size=64), moe=True),
    ]


@pytest.mark.parametrize("served", _served_examples(), ids=["llama", "gpt-oss", "deepseek"])
def test_to_json_and_from_json_round_trip_through_json_text(served):
    assert ServedModel.from_json(json.loads(json.dumps(served.to_json()))) == served


@pytest.mark.parametrize("change", [
    lambda d: d.pop("engine"),
    lambda d: d.update(engine="sglang"),
    lambda d: d.pop("kv"),
    lambda d: d.update(weights="big"),
    lambda d: d.update(weights=-1),
    lambda d: d["args"].update(max_model_len=0),
    lambda d: d["args"].update(gpu_memory_utilization=1.5),
    lambda d: d["kv"].update(bytes_per_token_layer=0),
    lambda d: d["args"].update(bogus=1),
])
def test_from_json_refuses_malformed_facts_with_value_error(change):
    doc = json.loads(json.dumps(_served_examples()[0].to_json()))
    change(doc)
    with pytest.raises(ValueError):
        ServedModel.from_json(doc)


@pytest.mark.parametrize("change", [
    lambda d: d.update(maxPosition="long"),
    lambda d: d["kv"].update(full_layers="32"),
    lambda d: d["args"].update(max_num_seqs="8"),
    lambda d: d["args"].update(version="0.11"),
    lambda d: d.update(activationOverride="x"),
    lambda d: d.update(weights=float("inf")),
])
def test_facts_from_json_accepts_are_usable_on_a_device(change):
    """A value of the wrong type is refused by from_json (ValueError), not accepted to crash on a device."""
    doc = json.loads(json.dumps(_served_examples()[0].to_json()))
    change(doc)
    try:
        served = ServedModel.from_json(doc)
    except ValueError:
        return
    served.on_device(79 * GIB)


_mutations = st.tuples(st.sampled_from(["", "kv", "args", "activation"]),
                       st.sampled_from(["engine", "weights", "kv", "args", "activation", "maxPosition", "moe",
                                        "label", "bytes_per_token_layer", "full_layers", "sliding_layers",
                                        "max_model_len", "version", "gpu_memory_utilization", "block_size",
                                        "tensor_parallel", "max_num_seqs", "hidden_size"]),
                       _json)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(3)), st.lists(_mutations, min_size=1, max_size=3))
def test_from_json_raises_only_value_error_on_any_document(which, mutations):
    doc = json.loads(json.dumps(_served_examples()[which].to_json()))
    for where, key, value in mutations:
        target = doc.get(where) if where else doc
        if isinstance(target, dict):
            target[key] = value
    try:
        served = ServedModel.from_json(doc)
    except ValueError:
        return
    served.on_device(79 * GIB)  # what from_json accepts, the check can use


def test_from_json_of_a_non_object_is_a_value_error():
    for doc in (None, [], "vllm", 3):
        with pytest.raises(ValueError):
            ServedModel.from_json(doc)


OLD_ANNOTATION = {"model": "llama", "parameters": 8_030_261_248, "layers": 32, "kvHeads": 8, "headDim": 128,
                  "dtype": "bf16", "kvCacheDtype": "auto", "architecture": "LlamaForCausalLM", "moe": False,
                  "maxPositionEmbeddings": 131072, "activationBytes": None, "maxModelLen": 32768, "maxNumSeqs": 4,
                  "tensorParallel": 2, "vllm": True}


def test_legacy_annotation_reads_the_old_facts():
    served = legacy_annotation(OLD_ANNOTATION)
    assert served.label == "llama"
    assert served.weights == 8_030_261_248  # bf16 split over TP 2
    assert served.kv.bytes_per_token == 2 * 32 * 4 * 128 * 2
    assert (served.args.max_model_len, served.args.max_num_seqs, served.args.tensor_parallel) == (32768, 4, 2)
    assert served.max_position == 131072
    fp8 = legacy_annotation({**OLD_ANNOTATION, "kvCacheDtype": "fp8", "tensorParallel": 1})
    assert fp8.kv.bytes_per_token == 65_536


@pytest.mark.parametrize("change,key", [({"layers": 0}, "layers"), ({"dtype": "fp4"}, "dtype"),
                                        ({"maxModelLen": None}, "maxModelLen"), ({"kvHeads": "8"}, "kvHeads"),
                                        ({"kvCacheDtype": "fp4"}, "fp4")])
def test_legacy_annotation_refuses_bad_values_naming_them(change, key):
    with pytest.raises(ValueError, match=key):
        legacy_annotation({**OLD_ANNOTATION, **change})


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(list(OLD_ANNOTATION)), _json, max_size=4))
def test_legacy_annotation_raises_only_value_error(change):
    try:
        legacy_annotation({**OLD_ANNOTATION, **change})
    except ValueError:
        pass


# --- 5. verdict.assess --------------------------------------------------------------------------------------------

def _fix(fixes: list[str], pattern: str) -> str | None:
    for f in fixes:
        m = re.search(pattern, f)
        if m:
            return m.group(1)
    return None


def test_a_refusal_is_an_error_quoting_vllm_with_fixes():
    a = assess("Deployment/llm", llama(131072), whole(L4_MIB, "a whole NVIDIA-L4"))
    assert a.error.startswith("Deployment/llm: vLLM would refuse to start Llama-3.1-8B on a whole NVIDIA-L4")
    assert "\"To serve at least one request with the models's max seq len (131072)" in a.error
    assert a.fixes and "Fixes: " in a.error and all(f in a.error for f in a.fixes)
    assert a.warning is None


@pytest.mark.parametrize("mib,mig", [(L4_MIB, False), (24576, False), (19968, True), (30000, False)])
def test_the_suggested_max_model_len_starts_and_is_close_to_the_largest_accepted(mib, mig):
    device = whole(mib, mig=mig)
    served = llama(131072)
    a = assess("w", served, device)
    largest = a.startup.largest_max_model_len
    suggested = int(_fix(a.fixes, r"maxModelLen ([\d,]+)").replace(",", ""))
    assert suggested <= largest and suggested >= 0.85 * largest
    assert assess("w", served.with_args(max_model_len=suggested), device).error is None


def test_the_suggested_utilization_makes_it_start_and_a_point_less_does_not():
    device = whole(H100_MIB, "a whole H100")
    served = llama(131072, gpu_memory_utilization=0.4)
    a = assess("w", served, device)
    assert a.error is not None
    util = float(_fix(a.fixes, r"--gpu-memory-utilization ([\d.]+)"))
    assert 0.4 < util <= 0.95
    assert assess("w", served.with_args(gpu_memory_utilization=util), device).error is None
    assert assess("w", served.with_args(gpu_memory_utilization=round(util - 0.01, 2)), device).error is not None


def test_no_fix_is_offered_when_nothing_on_the_device_makes_it_start():
    a = assess("w", llama(4096), whole(10240, "a small GPU"))
    assert a.startup.refusal.kind == "weights"
    assert a.fixes == [] and "none on this GPU" in a.error


def test_the_concurrency_warning_needs_a_declared_max_num_seqs():
    device = whole(H100_MIB, "a whole H100")
    undeclared = assess("w", llama(131072), device)
    assert undeclared.startup.max_concurrency < undeclared.startup.max_num_seqs  # 1,024 by default
    assert undeclared.error is None and undeclared.warning is None
    a = assess("w", llama(131072, max_num_seqs=8), device)
    s = a.startup
    assert a.error is None and s.starts and s.max_concurrency < 8
    assert f"GPU KV cache size: {s.kv_tokens:,} tokens" in a.warning
    assert f"Maximum concurrency for 131,072 tokens per request: {s.max_concurrency:.2f}x" in a.warning
    assert s.kv_tokens == s.kv_available // (16 * 131_072) * 16


def test_no_warning_when_the_cache_holds_max_num_seqs_full_length_requests():
    a = assess("w", llama(8192, max_num_seqs=8), whole(H100_MIB))
    assert a.error is None and a.warning is None and a.startup.max_concurrency >= 8


def test_the_concurrency_fixes_hold_the_declared_sequences():
    device = whole(H100_MIB)
    served = llama(131072, max_num_seqs=8)
    a = assess("w", served, device)
    length = int(_fix(a.fixes, r"maxModelLen ([\d,]+) holds").replace(",", ""))
    shorter = served.with_args(max_model_len=length).on_device(device.visible)
    assert shorter.starts and shorter.max_concurrency >= 8
    seqs = int(_fix(a.fixes, r"maxNumSeqs (\d+)"))
    assert assess("w", served.with_args(max_num_seqs=seqs), device).warning is None


def test_an_mps_reservation_beyond_the_pinned_limit_is_an_error_with_a_utilization_inside_it():
    limit = H100_MIB // 2
    device = Device("mps", H100_MIB, "an MPS slice", limit_mib=limit, product="NVIDIA-H100-80GB-HBM3")
    served = llama(8192)
    a = assess("w", served, device)
    assert a.error is not None and f"pinned limit of {limit} MiB" in a.error
    util = float(_fix(a.fixes, r"--gpu-memory-utilization ([\d.]+)"))
    assert util * device.visible <= limit * MIB
    tuned = assess("w", served.with_args(gpu_memory_utilization=util), device)
    assert tuned.error is None and tuned.startup.starts


def test_an_mps_slice_too_small_for_the_weights_offers_no_utilization():
    device = Device("mps", 15360, "an MPS slice", limit_mib=15360 // 4, product="Tesla-T4")
    a = assess("w", llama(4096), device)
    assert a.error is not None and not any("--gpu-memory-utilization" in f for f in a.fixes)


@settings(max_examples=40, deadline=None)
@given(st.integers(1024, 131072), st.sampled_from([L4_MIB, 24576, 40320, 48000, H100_MIB]),
       st.sampled_from([0.5, 0.8, 0.9]))
def test_every_suggested_length_and_utilization_starts(length, mib, util):
    device = whole(mib)
    served = llama(length, gpu_memory_utilization=util)
    a = assess("w", served, device)
    if a.error is None:
        return
    mml = _fix(a.fixes, r"maxModelLen ([\d,]+)")
    if mml is not None:
        assert served.with_args(max_model_len=int(mml.replace(",", ""))).on_device(device.visible).starts
    u = _fix(a.fixes, r"--gpu-memory-utilization ([\d.]+)")
    if u is not None:
        assert served.with_args(gpu_memory_utilization=float(u)).on_device(device.visible).starts


def test_from_facts_by_hand_matches_config_json():
    by_hand = from_facts("x", parameters=8_030_261_248, layers=32, kv_heads=8, head_dim=128, dtype="bf16",
                         args=VllmArgs(8192))
    assert by_hand.weights == 2 * 8_030_261_248 and by_hand.kv == kv_layout(LLAMA_8B)
    int4 = from_facts("x", parameters=8_030_261_248, layers=32, kv_heads=8, head_dim=128, dtype="int4",
                      args=VllmArgs(8192, tensor_parallel=2))
    assert int4.weights == 8_030_261_248 // 4 and int4.kv.bytes_per_token == 2 * 32 * 4 * 128 * 2
