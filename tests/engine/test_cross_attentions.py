"""Cross-attention weights of a finished sequence (the alignment pass on the cached K/V) equal
transformers' attention weights for the same tokens on the same tiny random weights."""

import numpy as np
import pytest
import torch
from tiny_whisper import synthetic_clip

from scriba import Engine, SamplingParams
from scriba.whisper.log_mel import log_mel


def eager_cross_attentions(hf, features, tokens):
    """Per layer [1, heads, T, 1500]: only the eager attention returns weights."""
    before = hf.config._attn_implementation
    hf.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = hf(
                input_features=features, decoder_input_ids=torch.tensor([tokens]), output_attentions=True
            )
        return out.cross_attentions
    finally:
        hf.set_attn_implementation(before)


def every_head(layers, heads):
    return [(layer, head) for layer in range(layers) for head in range(heads)][::-1]  # any order


def some_heads(layers, heads):  # a layer asks none, the last asked layer some: its pass stops early
    return [(layers - 1, heads - 1), (0, 1), (layers - 1, 0)]


@pytest.mark.parametrize("which", [every_head, some_heads])
@pytest.mark.parametrize("name", ["english", "multilingual"])
def test_cross_attentions_match_transformers(tiny_whispers, name, which):
    path, hf = tiny_whispers[name]
    asked = which(hf.config.decoder_layers, hf.config.decoder_attention_heads)
    engine = Engine(path, dtype="float32", num_kv_blocks=2000)
    audio = [synthetic_clip(seconds, seed) for seed, seconds in enumerate([3.0, 12.0, 29.0])]
    params = SamplingParams(max_tokens=12, cross_attention_heads=asked)
    prompts = [{"audio": (a, 16000), "language": "en", "timestamps": True} for a in audio]
    outputs = engine.generate(prompts, [params] * len(prompts))
    features = torch.tensor(log_mel(audio, hf.config.num_mel_bins))
    for i, out in enumerate(outputs):
        tokens = out.prompt_token_ids + out.outputs[0].token_ids
        ref = eager_cross_attentions(hf, features[i : i + 1], tokens)
        expected = np.stack([ref[layer][0, head].numpy() for layer, head in asked])
        got = out.outputs[0].cross_attentions
        assert got.shape == expected.shape == (len(asked), len(tokens), 1500)
        np.testing.assert_allclose(got, expected, atol=2e-5)


def test_cross_attentions_are_made_only_where_wanted(tiny_whispers):
    engine = Engine(tiny_whispers["english"][0], dtype="float32", num_kv_blocks=2000)
    seen = []

    def wanted(token_ids):
        seen.append(list(token_ids))
        return len(seen) % 2 == 0

    params = SamplingParams(max_tokens=8, cross_attention_heads=[(0, 0)], cross_attention_wanted=wanted)
    prompts = [{"audio": (synthetic_clip(2.0 + k, k), 16000), "language": "en"} for k in range(4)]
    outputs = engine.generate(prompts, [params] * len(prompts))
    made = [out.outputs[0].cross_attentions is not None for out in outputs]
    assert sorted(map(tuple, seen)) == sorted(tuple(out.outputs[0].token_ids) for out in outputs)
    assert sum(made) == 2 and len(seen) == 4  # each finished sequence asked once


def test_cross_attention_heads_are_checked(tiny_whispers, tiny_bart):
    engine = Engine(tiny_whispers["english"][0], dtype="float32", num_kv_blocks=200)
    prompt = {"audio": (synthetic_clip(1.0, 0), 16000)}
    with pytest.raises(ValueError, match=r"cross_attention_heads \[\(9, 0\)\] out of range"):
        engine.add_request("a", prompt, SamplingParams(cross_attention_heads=[(9, 0)]))
    with pytest.raises(ValueError, match="must be \\(layer, head\\) pairs"):
        SamplingParams(cross_attention_heads=[(1,)])
    with pytest.raises(ValueError, match="does not return cross_attention_heads"):
        Engine(tiny_bart[0], dtype="float32", num_kv_blocks=200).add_request(
            "b", "some text", SamplingParams(cross_attention_heads=[(0, 0)])
        )
