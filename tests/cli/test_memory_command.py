"""`gpufleet memory`: the GPU it is told, and the words of its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = str(ROOT / "models" / "llama-3.1-8b")


def memory(cli, *args: str):
    return cli("memory", MODEL, "--vllm-version", "0.11.0", *args)


@pytest.mark.parametrize("name, product", [("4090", "NVIDIA-GeForce-RTX-4090"), ("H100 PCIe", "NVIDIA-H100-PCIe"),
                                           ("h100-pcie", "NVIDIA-H100-PCIe"), ("V100-32GB", "Tesla-V100-SXM2-32GB"),
                                           ("A100 SXM4 80GB", "NVIDIA-A100-SXM4-80GB"), ("NVIDIA-H200", "NVIDIA-H200")])
def test_a_gpu_is_named_by_whole_words_of_its_product_name(cli, name, product):
    r = memory(cli, "--gpu", name, "--", "--max-model-len", "8192")
    assert r.code == 0, r.err
    assert f"on a whole {product} (" in r.out


@pytest.mark.parametrize("name", ["H20", "H10", "RTX-409", "A1", "4080"])
def test_a_name_that_is_only_part_of_a_word_is_no_gpu_and_points_at_gpu_memory_mib(cli, name):
    r = memory(cli, "--gpu", name)
    assert r.code == 2 and r.out == ""
    assert f"--gpu {name!r} is no GPU gpufleet knows" in r.err
    assert "--gpu-memory-mib" in r.err


def test_a_part_of_a_word_lists_the_products_it_is_part_of(cli):
    r = memory(cli, "--gpu", "H20")
    assert r.err.strip() == ("--gpu 'H20' is no GPU gpufleet knows (it is only part of a word of NVIDIA-H200); "
                             "for another GPU give --gpu-memory-mib N, its memory as nvidia-smi reports it")


@pytest.mark.parametrize("name, candidates", [
    ("V100", ["Tesla-V100-SXM2-16GB (16384 MiB)", "Tesla-V100-SXM2-32GB (32768 MiB)"]),
    ("H100", ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe", "NVIDIA-H100-NVL"]),
    ("A100 80GB", ["NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-SXM4-80GB"])])
def test_a_name_of_several_gpus_is_refused_listing_them(cli, name, candidates):
    r = memory(cli, "--gpu", name)
    assert r.code == 2 and r.out == ""
    assert f"--gpu {name!r} names {len(candidates)} GPUs" in r.err
    assert all(c in r.err for c in candidates)


def test_an_unknown_gpu_with_its_memory_is_sized_by_that_memory(cli):
    r = memory(cli, "--gpu", "H20", "--gpu-memory-mib", "97871", "--", "--max-model-len", "8192")
    assert r.code == 0, r.err
    assert "on a whole H20 (97871 MiB)" in r.out


def test_a_refusal_shows_the_utilization_it_multiplied(cli):
    r = memory(cli, "--gpu-memory-mib", "24000", "--", "--gpu-memory-utilization", "0.85")
    assert r.code == 1
    assert "To serve at least one request" in r.out
    assert "(--gpu-memory-utilization 0.85 x 22.99 GiB)" in r.out


def test_a_weights_refusal_says_nothing_of_the_kv_cache(cli):
    r = memory(cli, "--gpu-memory-mib", "12000")
    assert r.code == 1
    refusal = r.out.split("REFUSED: ", 1)[1]
    assert "CUDA out of memory while loading the model" in refusal
    assert "KV cache" not in refusal and "maxModelLen" not in refusal
    assert refusal.rstrip().endswith("Expected the weights to fit in the device's memory.")


def test_no_max_model_len_is_suggested_when_the_full_context_fits(cli):
    r = memory(cli, "--gpu", "H100-80GB")
    assert r.code == 0
    assert "suggested" not in r.out
    assert "One request of 131,072 tokens (the model's full context) fits" in r.out
    doc = json.loads(memory(cli, "--gpu", "H100-80GB", "--json").out)
    assert doc["suggestedMaxModelLen"] is None and doc["largestMaxModelLen"] == 131072


def test_a_max_model_len_is_suggested_when_the_kv_cache_limits_the_length(cli):
    r = memory(cli, "--gpu", "4090", "--", "--max-model-len", "20000")
    assert r.code == 0
    assert "Largest --max-model-len it accepts: 40,160 (suggested, with a margin: 38,144)" in r.out


def test_a_misspelt_vllm_flag_is_refused_naming_the_nearest_flag(cli):
    r = memory(cli, "--gpu", "H100-80GB", "--", "--max-model-length", "8192")
    assert r.code == 2 and r.out == ""
    assert r.err.strip() == ("vLLM flags: --max-model-length: no such flag in vLLM 0.11.0, which refuses it: "
                             "'unrecognized arguments: --max-model-length'; did you mean --max-model-len?")


def test_vllm_flags_it_does_not_model_are_accepted_and_a_shortened_flag_is_read(cli):
    r = memory(cli, "--gpu", "4090", "--", "--max-model", "20000", "--port", "8000",
               "--enable-prefix-caching")
    assert r.code == 0, r.err
    assert "Maximum concurrency for 20,000 tokens per request" in r.out
