"""The decoder's products with oneDNN-packed weights (models/packed_linear.py): against
torch.nn.Linear, and an engine whose decoder is packed against transformers on the same weights."""

import pytest
import torch
from oracle import MAX_NEW, assert_parity, hf_generate, random_prompts
from tiny_models import make_tiny_model
from torch import nn

from scriba import Engine, SamplingParams
from scriba.models.packed_linear import PackedLinear, worth_packing


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(4, 1024), (2, 5, 1024), (1, 1024)])
def test_packed_linear_equals_linear(bias, shape):
    torch.manual_seed(0)
    linear = nn.Linear(1024, 3000, bias=bias)
    x = torch.randn(*shape)
    packed = PackedLinear(linear.weight, linear.bias)(x)
    assert packed.shape == (*shape[:-1], 3000)
    torch.testing.assert_close(packed, linear(x), rtol=1e-5, atol=1e-5)


def test_only_large_layers_are_worth_packing():
    assert worth_packing(nn.Linear(1024, 1024)) and worth_packing(nn.Linear(3072, 768))
    assert not worth_packing(nn.Linear(768, 768)) and not worth_packing(nn.Linear(768, 3072))
    assert not worth_packing(nn.Linear(1536, 384))  # tiny.en's fc2: 0.59M weights


@pytest.fixture(scope="module")
def wide_bart(tmp_path_factory):
    """A 1+1-layer BART 1,024 wide (the width from which the decoder's layers are packed)."""
    path = str(tmp_path_factory.mktemp("wide-bart"))
    wide = dict(d_model=1024, encoder_layers=1, decoder_layers=1, encoder_ffn_dim=1024, decoder_ffn_dim=1024)
    return path, make_tiny_model(path, "bart", encoder_attention_heads=16, decoder_attention_heads=16, **wide)


def kinds(engine: Engine) -> dict[str, str]:
    return {
        n: type(m).__name__
        for n, m in engine.model.named_modules()
        if isinstance(m, (nn.Linear, PackedLinear))
    }


def test_a_packed_decoder_gives_transformers_tokens_and_logprobs(wide_bart):
    path, hf = wide_bart
    engine = Engine(path, device="cpu", dtype="float32", num_kv_blocks=512)
    layers = kinds(engine)
    decoder = {n: k for n, k in layers.items() if n.startswith("model.decoder.")}
    assert decoder.pop("model.decoder.layers.0.encoder_attn.kv_proj") == "Linear"  # the encoder's rows
    assert set(decoder.values()) == {"PackedLinear"} and len(decoder) == 6  # qkv, out, q, out, fc1, fc2
    assert {k for n, k in layers.items() if n.startswith("model.encoder.")} == {"Linear"}
    assert isinstance(engine.model.packed_head, PackedLinear)
    prompts = random_prompts(6, seed=3)
    expected = hf_generate(hf, prompts, engine.model.default_decoder_prompt())
    outs = engine.generate(
        [{"prompt_token_ids": p} for p in prompts], SamplingParams(max_tokens=MAX_NEW, logprobs=5)
    )
    assert_parity(outs, expected)
    assert sum(len(o.outputs[0].token_ids) for o in outs) >= 4 * len(prompts)


def test_quantized_or_other_dtypes_are_not_packed(wide_bart):
    path, _ = wide_bart
    for config in (dict(quantization="int8"), dict(dtype="bfloat16")):
        engine = Engine(path, device="cpu", num_kv_blocks=64, **config)
        assert "PackedLinear" not in kinds(engine).values() and engine.model.packed_head is None, config
