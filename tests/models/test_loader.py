"""Strict weight loading by name, from safetensors or pytorch_model.bin, and the registry."""

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from scriba import Engine, SamplingParams
from scriba.models.loader import resolve_model_path


def copy_with_weights(src, dst, edit):
    """Copy the tiny checkpoint folder, rewriting its state dict through `edit`."""
    shutil.copytree(src, dst)
    state = load_file(os.path.join(src, "model.safetensors"))
    save_file(edit(dict(state)), os.path.join(dst, "model.safetensors"))
    return str(dst)


def first_tokens(path, **kwargs):
    engine = Engine(path, num_kv_blocks=64, **kwargs)
    return (
        engine.generate({"prompt_token_ids": [5, 6, 7, 8]}, SamplingParams(max_tokens=8))[0]
        .outputs[0]
        .token_ids
    )


def test_missing_weight_is_named(tiny_bart, tmp_path):
    path = copy_with_weights(
        tiny_bart[0], tmp_path / "m", lambda s: {k: v for k, v in s.items() if "layers.1.fc2.weight" not in k}
    )
    with pytest.raises(ValueError, match=r"missing from the checkpoint: .*layers\.1\.fc2\.weight"):
        Engine(path)


def test_missing_shard_of_fused_projection_is_named(tiny_bart, tmp_path):
    path = copy_with_weights(
        tiny_bart[0],
        tmp_path / "m",
        lambda s: {k: v for k, v in s.items() if k != "model.decoder.layers.0.self_attn.k_proj.weight"},
    )
    with pytest.raises(ValueError, match=r"decoder\.layers\.0\.self_attn\.qkv_proj\.weight \(k_proj\)"):
        Engine(path)


def test_unexpected_weight_is_named(tiny_bart, tmp_path):
    path = copy_with_weights(
        tiny_bart[0], tmp_path / "m", lambda s: {**s, "model.encoder.extra.weight": torch.zeros(2)}
    )
    with pytest.raises(ValueError, match=r"not in the model: \['model\.encoder\.extra\.weight'\]"):
        Engine(path)


def test_misshaped_weight_is_named(tiny_bart, tmp_path):
    def edit(s):
        s["model.decoder.layers.0.encoder_attn.v_proj.weight"] = torch.zeros(64, 32)
        return s

    path = copy_with_weights(tiny_bart[0], tmp_path / "m", edit)
    with pytest.raises(
        ValueError,
        match=r"shape mismatch: .*encoder_attn\.v_proj\.weight: checkpoint \(64, 32\), model \(64, 64\)",
    ):
        Engine(path)


def test_pytorch_bin_and_bartmodel_prefix_load_the_same(tiny_bart, tmp_path):
    src = tiny_bart[0]
    expected = first_tokens(src)
    dst = tmp_path / "bin"
    shutil.copytree(src, dst)
    state = load_file(os.path.join(src, "model.safetensors"))
    os.remove(dst / "model.safetensors")
    # A `BartModel`-style checkpoint: no "model." prefix on the base model's tensors.
    renamed = {k.removeprefix("model."): v for k, v in state.items()}
    torch.save(renamed, dst / "pytorch_model.bin")
    assert first_tokens(str(dst)) == expected


def test_unknown_architecture(tiny_bart, tmp_path):
    dst = tmp_path / "unknown"
    shutil.copytree(tiny_bart[0], dst)
    config = json.loads((dst / "config.json").read_text())
    config["architectures"] = ["T5ForConditionalGeneration"]
    (dst / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        ValueError,
        match=r"unknown architecture \['T5ForConditionalGeneration'\]; "
        r"Scriba supports: .*BartForConditionalGeneration",
    ):
        Engine(str(dst))


def test_unreachable_model_says_how_to_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    how = r"get it with `scriba download no-such-org/no-such-model` where there is internet, or pass a local"
    with pytest.raises(OSError, match=r"not a local folder or in the Hugging Face cache.*" + how):
        resolve_model_path("no-such-org/no-such-model")
    with pytest.raises(OSError, match="'/no/such/folder': there is no such folder"):
        resolve_model_path("/no/such/folder")


def test_no_tokenizer_means_token_ids_only(tiny_bart, tmp_path):
    dst = tmp_path / "notok"
    dst.mkdir()
    for name in ("config.json", "model.safetensors", "generation_config.json"):
        shutil.copy(os.path.join(tiny_bart[0], name), dst / name)
    engine = Engine(str(dst), num_kv_blocks=64)
    assert engine.tokenizer is None
    out = engine.generate({"prompt_token_ids": [5, 6, 7, 8]}, SamplingParams(max_tokens=8))[0]
    assert out.outputs[0].token_ids == first_tokens(tiny_bart[0]) and out.outputs[0].text == ""
    with pytest.raises(ValueError, match="no tokenizer"):
        engine.generate("some text")


def test_activations_match_transformers():
    import torch
    from transformers.activations import ACT2FN

    from scriba.models.layers import ACTIVATIONS, activation

    x = torch.randn(1000) * 4
    for name, fn in ACTIVATIONS.items():
        torch.testing.assert_close(fn(x), ACT2FN[name](x), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="activation_function 'mish2' is not supported"):
        activation("mish2")


def test_models_are_built_without_random_values_and_the_init_functions_come_back():
    """skip_random_init: parameters keep what was allocated (load_weights fills them), values
    written on purpose stay (a zeroed shard, LayerNorm's ones), and torch.nn.init is restored,
    also when building fails."""
    from scriba.kernels.metadata import AttentionType
    from scriba.models.layers import MultiHeadAttention
    from scriba.models.loader import skip_random_init

    before = torch.nn.init.kaiming_uniform_
    torch.manual_seed(0)
    with skip_random_init():
        state = torch.random.get_rng_state()
        attention = MultiHeadAttention(8, 2, AttentionType.DECODER, k_bias=False)
        norm = torch.nn.LayerNorm(8)
        assert torch.equal(torch.random.get_rng_state(), state)  # nothing was drawn
    assert torch.count_nonzero(attention.qkv_proj.bias[8:16]) == 0 and torch.equal(norm.weight, torch.ones(8))
    with pytest.raises(RuntimeError, match="boom"), skip_random_init():
        raise RuntimeError("boom")
    assert torch.nn.init.kaiming_uniform_ is before
    drawn = torch.nn.Linear(8, 8).weight
    assert torch.count_nonzero(drawn) == 64 and drawn.abs().max() <= 8**-0.5  # kaiming again
