"""The numba decode step (models/decoder_step/: step.py over kernel.py) against its
oracle: the same int8 model run by torch modules in float32 over the dequantized codes (codes x
scale), which is what the numba step's float32 products compute up to summation order (its VNNI
products, which round each row to int8 first, within a stated tolerance). In both engines the
decoder's modules are made such float Linears after the numba step took the codes, so prefills
agree and only the decode steps differ in who computes them. Also: which models and caches it
takes, and real speech (the bundled tiny.en on jfk.flac) with its words."""

import pytest
import torch
from oracle import JFK, JFK_WORDS, random_prompts, words
from tiny_whisper import synthetic_clip
from torch import nn

import scriba
from scriba import Engine, SamplingParams
from scriba.config import EngineConfig
from scriba.models import quantize
from scriba.models.decoder_step import MAX_ROWS, int8_linear
from scriba.models.decoder_step import step as decoder_step

PARAMS = SamplingParams(max_tokens=24, ignore_eos=True, logprobs=1)
LOGPROB_TOLERANCE = 1e-3  # float32 summation order only; measured ~1e-5
VNNI_TOLERANCE = 6e-2  # each product's input rounded to 8-bit codes; measured 0.031


@pytest.fixture
def float32_products(monkeypatch):
    """The numba step with its float32 products on any host (VNNI's are the last tests')."""
    from scriba.kernels import cpu_vnni

    monkeypatch.setattr(cpu_vnni, "fits", lambda width: False)


class CountedStep:
    """The runner's numba step, counting the decode steps it ran."""

    def __init__(self, step):
        self.step, self.calls = step, 0
        self.fits, self.logits, self.load_kernels = step.fits, step.logits, step.load_kernels

    def __call__(self, *args):
        self.calls += 1
        return self.step(*args)


def float_linear(module: nn.Module) -> nn.Linear:
    q, scales, bias = int8_linear(module)
    linear = nn.Linear(q.shape[1], q.shape[0])
    with torch.no_grad():
        linear.weight.copy_(q.float() * scales[:, None])
        linear.bias.copy_(bias)
    return linear


def dequantized(engine: Engine) -> Engine:
    """The engine with its decoder's int8 products and logits as float32 Linears of the same
    codes (the cross-attention K/V projection, run at prefill only, stays int8 in both)."""
    model = engine.model
    int8 = (quantize.RowScaledLinear, quantize.WeightOnlyInt8Linear)
    for name, module in list(model.model.decoder.named_modules()):
        if isinstance(module, int8) and not name.endswith("encoder_attn.kv_proj"):
            quantize._replace(model.model.decoder, name, float_linear(module))
    model.quantized_head = float_linear(model.quantized_head)
    return engine


def greedy(engine, prompts):
    return [(o.outputs[0].token_ids, o.outputs[0].logprobs) for o in engine.generate(prompts, PARAMS)]


def assert_same_decoding(reference, numba, prompts, tolerance=LOGPROB_TOLERANCE):
    expected, got = greedy(reference, prompts), greedy(numba, prompts)
    worst = 0.0
    for (a, a_lp), (b, b_lp) in zip(expected, got):
        assert a == b
        for i, token in enumerate(a):
            worst = max(worst, abs(a_lp[i][token].logprob - b_lp[i][token].logprob))
    assert worst < tolerance
    return worst


def engines(path: str, **settings) -> tuple[Engine, Engine, CountedStep]:
    common = dict(device="cpu", quantization="int8", num_kv_blocks=800, **settings)
    numba = Engine(path, decoder_runtime="numba", **common)
    counted = numba.runner.executor.decode_step = CountedStep(numba.runner.decode_step)
    return dequantized(Engine(path, decoder_runtime="torch", **common)), dequantized(numba), counted


def int8_model(path: str) -> nn.Module:
    """An int8 model as the numba step takes it (`engines` makes theirs float Linears after)."""
    return Engine(path, device="cpu", quantization="int8", num_kv_blocks=8).model


@pytest.mark.parametrize(
    "kv, weight_only",
    [("auto", True), ("auto", False), ("int8", True), ("float16", True), ("bfloat16", False)],
)
def test_whisper_decode_steps_equal_the_float_modules(
    tiny_whispers, monkeypatch, float32_products, kv, weight_only
):
    """Both int8 layer kinds (weight-only on bfloat16 CPUs, fbgemm's elsewhere), float32, 8-bit and
    half caches (written with torch's rounding); 3 clips at once (every decode step numba's, and
    over a float32 cache the prefill's 3 prompt tokens too, as decode rows over the cross K/V the
    encoder wrote), then 7 (steps above MAX_ROWS rows go to the modules until requests finish)."""
    monkeypatch.setattr(quantize, "native_bfloat16", lambda: weight_only)
    reference, numba, counted = engines(tiny_whispers["multilingual"][0], kv_cache_dtype=kv)
    exact_cache = kv == "auto"  # float32: the numba prefill reads the K/V the modules' attends to
    if not exact_cache:  # a rounded cache: the next test
        monkeypatch.setattr(numba.runner.executor, "prefill_fits", lambda *args: False)
    clips = [{"audio": synthetic_clip(seconds, seed)} for seed, seconds in enumerate([2.0, 7.5, 20.0])]
    assert_same_decoding(reference, numba, clips)
    assert counted.calls == PARAMS.max_tokens - (not exact_cache)  # every step (the prefill: float32)
    more = [{"audio": synthetic_clip(1.0 + seed, seed)} for seed in range(MAX_ROWS + 3)]
    assert_same_decoding(reference, numba, more)


@pytest.mark.parametrize("kv, tolerance", [("float16", 1e-3), ("int8", 1e-2)])
def test_a_prefill_over_a_rounded_cache(tiny_whispers, monkeypatch, float32_products, kv, tolerance):
    """The numba prefill attends to the cross K/V as the cache holds them (rounded to float16, or
    int8 codes), as every decode step after it does; the modules' prefill attends to them before
    rounding. The same tokens, log-probs within the rounding's reach (measured: 1.0e-4, 2.4e-3)."""
    _, numba, counted = engines(tiny_whispers["multilingual"][0], kv_cache_dtype=kv)
    clips = [{"audio": synthetic_clip(seconds, seed)} for seed, seconds in enumerate([2.0, 7.5, 20.0])]
    in_numba = greedy(numba, clips)
    assert counted.calls == PARAMS.max_tokens
    monkeypatch.setattr(numba.runner.executor, "prefill_fits", lambda *args: False)
    for (a, a_lp), (b, b_lp) in zip(greedy(numba, clips), in_numba):
        assert a == b
        assert max(abs(a_lp[i][t].logprob - b_lp[i][t].logprob) for i, t in enumerate(a)) < tolerance


def test_mbart_decode_steps_equal_the_float_modules(tiny_mbart, float32_products):
    """A pre-norm text decoder (its embedding scaled and normed, positions offset)."""
    reference, numba, counted = engines(tiny_mbart[0])
    prompts = [{"prompt_token_ids": p} for p in random_prompts(MAX_ROWS, seed=4, max_len=60)]
    assert_same_decoding(reference, numba, prompts)
    assert counted.calls > 0


def test_what_it_runs_and_what_it_refuses(tiny_whispers, tiny_bart):
    whisper = tiny_whispers["english"][0]
    assert Engine(whisper, device="cpu", quantization="int8").runner.decode_step is not None  # auto
    assert (
        Engine(whisper, device="cpu", quantization="int8", decoder_runtime="torch").runner.decode_step is None
    )
    exact = Engine(whisper, device="cpu", dtype="float32")
    assert exact.runner.decode_step is None  # float32: the exact mode stays torch's
    assert Engine(tiny_bart[0], device="cpu", quantization="int8").runner.decode_step is None
    refused = {
        "not a pre-norm stack": (tiny_bart[0], dict(quantization="int8")),
        "quantization='int8'": (whisper, dict(dtype="float32")),  # the exact mode: no int8
        "float8_e4m3fn": (whisper, dict(quantization="int8", kv_cache_dtype="fp8")),
        "numba attention backend": (
            whisper, dict(quantization="int8", attention_backend="torch", kv_cache_dtype="auto")
        ),
    }
    for why, (path, settings) in refused.items():
        with pytest.raises(ValueError, match=why):
            Engine(path, device="cpu", decoder_runtime="numba", **settings)
    with pytest.raises(ValueError, match="decoder_runtime must be one of"):
        EngineConfig.create(device="cpu", decoder_runtime="openvino")


def test_stacked_codes_are_the_layers_own(tiny_whispers, monkeypatch):
    """The weight-only layers read the stacked codes (one copy), which equal their own."""
    monkeypatch.setattr(quantize, "native_bfloat16", lambda: True)
    engine = Engine(tiny_whispers["english"][0], device="cpu", quantization="int8")
    step, layer = engine.runner.decode_step, engine.model.model.decoder.layers[1]
    fc1 = step.weights[decoder_step._KINDS.index(("fc1",))]
    assert layer.fc1.int8_weight.data_ptr() == torch.from_numpy(fc1[1]).data_ptr()
    q, scales, _ = int8_linear(engine.model.quantized_head)
    assert torch.equal(torch.from_numpy(step.head[0]), q) and torch.equal(
        torch.from_numpy(step.head[1]), scales
    )


def test_real_speech_keeps_its_words():
    engine = Engine()
    assert engine.runner.decode_step is not None  # the CPU default runs it
    numba = scriba.transcribe(JFK, word_timestamps=True)
    modules = scriba.transcribe(JFK, word_timestamps=True, decoder_runtime="torch")
    assert words(numba.text) == words(modules.text) == JFK_WORDS
    pairs = zip((w for s in numba.segments for w in s.words), (w for s in modules.segments for w in s.words))
    for a, b in pairs:
        assert a.word == b.word and abs(a.start - b.start) <= 0.1 and abs(a.end - b.end) <= 0.1


def assert_same_up_to_a_near_tie(reference, numba, prompts, tolerance):
    """Greedy tokens equal until a step whose two choices the reference rates within `tolerance`
    (a random model's near-tie, which rounding may turn); log-probs within `tolerance` before."""
    params = SamplingParams(max_tokens=24, ignore_eos=True, logprobs=5)
    expected, got = (engine.generate(prompts, params) for engine in (reference, numba))
    worst = 0.0
    for a, b in zip(expected, got):
        (a, a_lp), (b, b_lp) = ((o.outputs[0].token_ids, o.outputs[0].logprobs) for o in (a, b))
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
        for i in range(same):
            worst = max(worst, abs(a_lp[i][a[i]].logprob - b_lp[i][b[i]].logprob))
        if same < len(a):  # the numba choice is among the reference's top 5, just below its first
            assert a_lp[same][a[same]].logprob - a_lp[same][b[same]].logprob < tolerance
    assert worst < tolerance
    return worst


def test_vnni_products_keep_the_tokens(tiny_whispers, tiny_mbart):
    """Where the host has AVX-512 VNNI the step chooses it (tiny widths are multiples of 64): the
    same tokens as the float modules up to a near-tie, log-probs within VNNI_TOLERANCE. Elsewhere
    it keeps float32 products, and asking for VNNI is refused with its reason."""
    from scriba.kernels.cpu_vnni import HAS_VNNI

    reference, numba, counted = engines(tiny_whispers["multilingual"][0])
    if not HAS_VNNI:
        assert numba.runner.decode_step.products == "float32"
        with pytest.raises(ValueError, match="AVX-512 VNNI"):
            decoder_step.NumbaDecoderStep(int8_model(tiny_whispers["multilingual"][0]), products="vnni")
        return
    assert numba.runner.decode_step.products == "vnni"
    clips = [{"audio": synthetic_clip(seconds, seed)} for seed, seconds in enumerate([2.0, 7.5, 20.0])]
    worst = assert_same_up_to_a_near_tie(reference, numba, clips, VNNI_TOLERANCE)
    assert counted.calls == PARAMS.max_tokens
    reference, numba, counted = engines(tiny_mbart[0])
    prompts = [{"prompt_token_ids": p} for p in random_prompts(MAX_ROWS, seed=4, max_len=60)]
    worst = max(worst, assert_same_up_to_a_near_tie(reference, numba, prompts, VNNI_TOLERANCE))
    assert worst > 0  # the rounding shows: these were the VNNI products
