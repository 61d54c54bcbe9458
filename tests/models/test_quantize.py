"""The int8 CPU mode (models/quantize.py): int8 weights and dynamic int8 activations in every
Linear layer and the logits. Oracles: the float32 model on the same weights (logits close,
token agreement reported), and real speech with known words (the bundled tiny.en on jfk.flac)."""

import pytest
import torch
from oracle import JFK, JFK_WORDS, random_prompts, words

import scriba
from scriba import Engine, SamplingParams
from scriba.config import EngineConfig


@pytest.mark.parametrize("fixture", ["tiny_bart", "tiny_bart_tied"])
def test_int8_bart_converts_every_linear_and_stays_close(request, fixture):
    path, _ = request.getfixturevalue(fixture)
    full = Engine(path, dtype="float32", num_kv_blocks=200)
    int8 = Engine(path, quantization="int8", num_kv_blocks=200)
    plain = [m for m in int8.model.modules() if type(m) is torch.nn.Linear]
    assert not plain, f"{len(plain)} Linear layers left in float32"
    assert int8.model.quantized_head is not None
    hidden = torch.randn(16, full.model.config.d_model)
    ref, got = full.model.compute_logits(hidden), int8.model.compute_logits(hidden)
    assert ((got - ref).norm() / ref.norm()).item() < 0.05  # int8 rounding, not a different function
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=7, max_len=40)]
    params = SamplingParams(max_tokens=12, ignore_eos=True)
    a = [o.outputs[0].token_ids for o in full.generate(prompts, params)]
    b = [o.outputs[0].token_ids for o in int8.generate(prompts, params)]
    agreement = sum(x == y for s, t in zip(a, b) for x, y in zip(s, t)) / sum(map(len, a))
    print(f"{fixture}: int8 greedy tokens equal to float32 at {agreement:.2%} of positions")
    assert agreement > 0.3 and all(len(t) == 12 for t in b)


@pytest.mark.parametrize("mode", [{"quantization": "int8"}, {"dtype": "bfloat16"}], ids=["int8", "bfloat16"])
def test_reduced_precision_tiny_en_transcribes_jfk(mode):
    """Through the public call, as users ask for it; tokens compared with float32's."""
    full = scriba.transcribe(JFK, dtype="float32")
    result = scriba.transcribe(JFK, **mode)
    assert words(result.text) == JFK_WORDS
    assert result.segments and result.segments[-1].end <= 11.1
    a = [t for s in full.segments for t in s.tokens]
    b = [t for s in result.segments for t in s.tokens]
    agreement = sum(x == y for x, y in zip(a, b)) / max(len(a), len(b))
    print(f"{mode}: jfk tokens equal to float32 at {agreement:.0%} of positions")
    assert agreement >= 0.9


@pytest.mark.parametrize(
    "options, message",
    [
        ({"quantization": "int4"}, "quantization must be one of"),
        ({"quantization": "int8", "dtype": "float16"}, "computes in float32"),
    ],
)
def test_bad_quantization_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        EngineConfig(device="cpu", **options)
