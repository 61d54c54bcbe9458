"""Quantized KV caches (kv_cache_dtype "fp8" and "int8") in the engine: against the float cache on
tiny random models (greedy tokens and their log-probs, within the codes' rounding), preempted
requests (swap, recompute) exactly as unpreempted ones, and real speech (the bundled tiny.en on
jfk.flac) with the same words and word times."""

import pytest
from oracle import JFK, JFK_WORDS, assert_follows, random_prompts, words

import scriba
from scriba import Engine, SamplingParams
from scriba.config import EngineConfig

PARAMS = SamplingParams(max_tokens=16, ignore_eos=True, logprobs=1)
# nats: twice the largest difference seen on tiny_bart's prompts (fp8 0.030, int8 0.006)
LOGPROB_TOLERANCE = {"fp8": 0.06, "int8": 0.06}
KV8 = ["fp8", "int8"]
BACKENDS = [(backend, kv) for backend in ("torch", "numba") for kv in KV8]


def greedy(engine, prompts):
    return [(o.outputs[0].token_ids, o.outputs[0].logprobs) for o in engine.generate(prompts, PARAMS)]


@pytest.mark.parametrize("backend, kv", BACKENDS)
def test_8bit_follows_the_float_cache(tiny_bart, backend, kv):
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=7, max_len=120)]
    common = dict(device="cpu", dtype="float32", num_kv_blocks=300, attention_backend=backend)
    exact = greedy(Engine(path, **common), prompts)
    fp8 = greedy(Engine(path, kv_cache_dtype=kv, **common), prompts)
    assert_follows(exact, fp8, tolerance=LOGPROB_TOLERANCE[kv])


@pytest.mark.parametrize("kv", KV8)
@pytest.mark.parametrize("mode", ["swap", "recompute"])
def test_preempted_requests_decode_as_unpreempted_ones(tiny_bart, mode, kv):
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(10, seed=3, max_len=150)]
    settings = dict(device="cpu", dtype="float32", kv_cache_dtype=kv)
    alone = greedy(Engine(path, num_kv_blocks=600, **settings), prompts)
    tight = Engine(path, num_kv_blocks=40, num_cpu_blocks=400, preemption_mode=mode, **settings)
    assert [t for t, _ in greedy(tight, prompts)] == [t for t, _ in alone]
    sched = tight.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0


@pytest.mark.parametrize("kv", KV8)
def test_real_speech_keeps_its_words(kv):
    exact = scriba.transcribe(JFK, word_timestamps=True)
    fp8 = scriba.transcribe(JFK, kv_cache_dtype=kv, word_timestamps=True)
    assert words(fp8.text) == words(exact.text) == JFK_WORDS
    for a, b in zip((w for s in exact.segments for w in s.words), (w for s in fp8.segments for w in s.words)):
        assert a.word == b.word and abs(a.start - b.start) <= 0.1 and abs(a.end - b.end) <= 0.1


def test_8bit_caches_are_cache_dtypes_everywhere():
    assert EngineConfig.create(device="cpu", kv_cache_dtype="fp8").torch_kv_cache_dtype.itemsize == 1
    assert EngineConfig.create(device="cpu", kv_cache_dtype="int8").torch_kv_cache_dtype.is_signed
    asked = EngineConfig.create(device="cpu", quantization="int8", kv_cache_dtype="fp8")
    assert asked.cache_config.kv_cache_dtype == "fp8"
    for removed in ("int4", "int2"):
        with pytest.raises(ValueError, match="kv_cache_dtype must be one of"):
            EngineConfig.create(device="cpu", kv_cache_dtype=removed)
