"""The model memory arithmetic, pinned to published model facts, and the fixes it proposes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from gpufleet.nvidia.hf_config import dense_parameters, hf_config_facts
from gpufleet.nvidia.model_budget import (
    dra_budget, fits, fixes_for, gpu_memory_utilization, largest_max_model_len, largest_max_num_seqs,
    largest_mps_replicas, mig_budget, mps_budget, smallest_mig_profile, time_sliced_budget, whole_gpu_budget,
)
from gpufleet.nvidia.model_memory import (
    BLOCK_SIZE, GIB, MIB, ModelShape, Serving, from_annotation, kv_bytes_per_token, need_per_gpu, to_annotation,
    weights_bytes,
)
from gpufleet.nvidia.products import find_product

ROOT = Path(__file__).resolve().parents[2]
H100 = find_product("NVIDIA-H100-80GB-HBM3")
T4 = find_product("Tesla-T4")
# meta-llama/Llama-3.1-8B config.json: 32 layers, 32 query / 8 KV heads, head dim 128; 8.03 B parameters.
LLAMA_8B = ModelShape(8_030_261_248, 32, 8, 128, "bf16", architecture="LlamaForCausalLM",
                      max_position_embeddings=131072)


def test_llama_3_1_8b_needs_128_kib_of_kv_cache_per_token_at_bf16():
    assert kv_bytes_per_token(LLAMA_8B) == 131072
    assert kv_bytes_per_token(replace(LLAMA_8B, kv_cache_dtype="fp8")) == 65536


def test_kv_heads_are_split_by_tensor_parallel_and_replicated_below_one_per_gpu():
    assert kv_bytes_per_token(LLAMA_8B, 2) == 65536
    assert kv_bytes_per_token(LLAMA_8B, 8) == 16384
    # Qwen2.5-7B has 4 KV heads: at TP 8 each GPU still holds one (vLLM replicates), 28 layers x 128 dims
    qwen = ModelShape(7_615_616_512, 28, 4, 128)
    assert kv_bytes_per_token(qwen) == 57344
    assert kv_bytes_per_token(qwen, 8) == 2 * 28 * 1 * 128 * 2


def test_published_configs_give_the_published_parameter_counts():
    llama = hf_config_facts(json.loads((ROOT / "models/llama-3.1-8b/config.json").read_text()))
    assert llama["parameters"] == 8_030_261_248
    assert (llama["layers"], llama["kv_heads"], llama["head_dim"], llama["dtype"]) == (32, 8, 128, "bf16")
    qwen = hf_config_facts(json.loads((ROOT / "tests/fixtures/models/qwen2.5-7b/config.json").read_text()))
    assert qwen["parameters"] == 7_615_616_512  # Qwen2.5-7B-Instruct, with its q/k/v biases
    assert (qwen["layers"], qwen["kv_heads"], qwen["head_dim"]) == (28, 4, 128)
    # Llama-3.2-1B: tied embeddings, head_dim 64
    assert dense_parameters({"vocab_size": 128256, "hidden_size": 2048, "num_hidden_layers": 16,
                             "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
                             "intermediate_size": 8192, "tie_word_embeddings": True}) == 1_235_814_400


def test_hf_config_defaults_kv_heads_to_attention_heads_and_head_dim_to_hidden_over_heads():
    facts = hf_config_facts({"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 3072})
    assert (facts["kv_heads"], facts["head_dim"]) == (32, 96)  # Phi-3-mini: MHA, 3072 / 32
    assert "parameters" not in facts  # no architecture it derives counts for


def test_hf_config_without_layers_or_with_latent_attention_is_refused():
    with pytest.raises(ValueError, match="num_hidden_layers"):
        hf_config_facts({"num_attention_heads": 32, "hidden_size": 4096})
    with pytest.raises(ValueError, match="kv_lora_rank"):
        hf_config_facts({"num_hidden_layers": 61, "num_attention_heads": 128, "hidden_size": 7168, "kv_lora_rank": 512})


def test_llama_8b_needs_weights_kv_activation_and_runtime():
    need = need_per_gpu(LLAMA_8B, Serving(32768, 16))
    assert need.weights == 2 * 8_030_261_248
    assert need.kv_cache == 16 * 32768 * 131072 == 64 * GIB
    assert need.activation == round(4.8 * GIB) and need.non_torch == round(0.15 * GIB)
    assert f"{need.weights / GIB:.2f}" == "14.96"


def test_context_is_counted_in_whole_kv_blocks():
    assert need_per_gpu(LLAMA_8B, Serving(1)).kv_cache == BLOCK_SIZE * 131072
    assert need_per_gpu(LLAMA_8B, Serving(17)).kv_cache == 2 * BLOCK_SIZE * 131072


def test_weights_shrink_with_dtype_and_tensor_parallel():
    assert weights_bytes(replace(LLAMA_8B, dtype="int4")) == weights_bytes(LLAMA_8B) // 4
    assert weights_bytes(LLAMA_8B, 2) == 8_030_261_248


@pytest.mark.parametrize("budget,usable_mib", [
    (whole_gpu_budget(H100), int(81559 * 0.9)),
    (mig_budget(H100, "3g.40gb", 40192), int(40192 * 0.9)),
    (mps_budget(T4, 4), 3840),                      # the MPS pinned limit, 15360 / 4
    (time_sliced_budget(T4), int(15360 * 0.9)),     # alone on the GPU; co-tenants are summed elsewhere
    (dra_budget("gpu-0", 46068), int(46068 * 0.9)),
])
def test_each_budget_kind_gives_its_share_up_to_vllm_default_utilization(budget, usable_mib):
    assert budget.usable_mib == usable_mib
    small = ModelShape(100_000_000, 4, 4, 64, activation_bytes=0)
    assert fits(small, Serving(1024), budget)
    assert not fits(LLAMA_8B, Serving(131072, 64), budget)


def test_mps_budget_keeps_the_whole_gpu_as_what_vllm_sees():
    budget = mps_budget(T4, 4)
    assert budget.visible_mib == 15360
    # the reservation 15360 MiB x util must stay inside the 3840 MiB slice
    util = gpu_memory_utilization(3000 * MIB, budget)
    assert util == 0.2 and util * 15360 <= 3840


def test_llama_8b_fits_a_3g_40gb_slice_at_16k_x_7_but_not_32k_x_16():
    slice_ = mig_budget(H100, "3g.40gb", 40192)
    assert fits(LLAMA_8B, Serving(16384, 7), slice_)
    assert not fits(LLAMA_8B, Serving(32768, 16), slice_)


def test_largest_max_model_len_fits_and_one_more_token_does_not():
    slice_ = mig_budget(H100, "3g.40gb", 40192)
    serving = Serving(32768, 16)
    length = largest_max_model_len(LLAMA_8B, serving, slice_)
    assert length == 7888
    assert fits(LLAMA_8B, replace(serving, max_model_len=length), slice_)
    assert not fits(LLAMA_8B, replace(serving, max_model_len=length + 1), slice_)
    seqs = largest_max_num_seqs(LLAMA_8B, serving, slice_)
    assert fits(LLAMA_8B, replace(serving, max_num_seqs=seqs), slice_)
    assert not fits(LLAMA_8B, replace(serving, max_num_seqs=seqs + 1), slice_)


def test_smallest_mig_profile_and_mps_share_that_fit():
    need = need_per_gpu(LLAMA_8B, Serving(8192, 4)).mib  # 23.9 GiB
    assert smallest_mig_profile(H100, need) == ("3g.40gb", 40192)
    assert smallest_mig_profile(H100, 100) == ("1g.10gb", 9728)
    assert smallest_mig_profile(H100, 90_000) is None
    assert smallest_mig_profile(T4, 100) is None
    replicas = largest_mps_replicas(H100, need)
    assert 81559 // replicas >= need > 81559 // (replicas + 1)


def test_fixes_name_nothing_when_weights_alone_exceed_the_share():
    fixes = fixes_for(LLAMA_8B, Serving(8192), mps_budget(T4, 4), T4)
    assert fixes.max_model_len is None and fixes.max_num_seqs is None and fixes.utilization is None


def test_annotation_round_trips_and_refuses_bad_values():
    doc = to_annotation("llama", LLAMA_8B, Serving(4096, 2, 1), True)
    assert from_annotation(json.loads(json.dumps(doc))) == ("llama", LLAMA_8B, Serving(4096, 2, 1), True)
    with pytest.raises(ValueError, match="layers"):
        from_annotation({**doc, "layers": "many"})


shapes = st.builds(ModelShape, st.integers(10**6, 10**11), st.integers(1, 96), st.integers(1, 64),
                   st.sampled_from([64, 96, 128, 256]), st.sampled_from(["bf16", "fp16", "fp8", "int8", "int4"]),
                   st.sampled_from(["auto", "bf16", "fp8"]))
servings = st.builds(Serving, st.integers(1, 131072), st.integers(1, 256), st.sampled_from([1, 2, 4, 8]))


@settings(max_examples=60, deadline=None)
@given(shapes, servings, st.integers(1, 4096), st.integers(1, 16))
def test_need_grows_with_context_concurrency_and_dtype_size(shape, serving, more_len, more_seqs):
    need = need_per_gpu(shape, serving).total
    assert need_per_gpu(shape, replace(serving, max_model_len=serving.max_model_len + more_len)).total >= need
    assert need_per_gpu(shape, replace(serving, max_num_seqs=serving.max_num_seqs + more_seqs)).total > need
    by_dtype = [need_per_gpu(replace(shape, dtype=d), serving).total for d in ("int4", "int8", "bf16", "fp32")]
    assert by_dtype == sorted(by_dtype) and by_dtype[0] < by_dtype[-1]


@settings(max_examples=60, deadline=None)
@given(shapes, servings, st.sampled_from(["3g.40gb", "1g.10gb", "7g.80gb"]))
def test_the_fixes_fit(shape, serving, profile):
    from gpufleet.nvidia.mig_profiles import TABLES

    budget = mig_budget(H100, profile, TABLES["80GB"].profiles[profile].memory_mib)
    fixes = fixes_for(shape, serving, budget, H100)
    if fixes.max_model_len is not None:
        assert fits(shape, replace(serving, max_model_len=fixes.max_model_len), budget)
        if fixes.max_model_len < 131072:
            assert not fits(shape, replace(serving, max_model_len=fixes.max_model_len + 1), budget)
    if fixes.max_num_seqs is not None:
        assert fits(shape, replace(serving, max_num_seqs=fixes.max_num_seqs), budget)
        assert not fits(shape, replace(serving, max_num_seqs=fixes.max_num_seqs + 1), budget)
    need = need_per_gpu(shape, serving)
    if fixes.mig_profile is not None:
        assert fits(shape, serving, mig_budget(H100, *fixes.mig_profile))
    if fixes.utilization is not None:
        assert fixes.utilization * budget.visible_mib * MIB >= need.total
