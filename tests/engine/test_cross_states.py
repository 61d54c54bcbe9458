"""EngineConfig.cross_cache="states": the encoder states cached once, every layer's cross-attention
read through its K/V projection (kernels/paged_states_attention.py). Oracle: the same engine with
each layer's projected K/V cached ("projected"), on tiny random models and on real speech."""

import pytest
import torch
from oracle import JFK, JFK_WORDS, assert_follows, random_prompts, words
from tiny_whisper import synthetic_clip

import scriba
from scriba import Engine, SamplingParams
from scriba.config import EngineConfig

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
PARAMS = SamplingParams(max_tokens=16, ignore_eos=True, logprobs=1)


def greedy(engine, prompts, params=PARAMS):
    return [(o.outputs[0].token_ids, o.outputs[0].logprobs) for o in engine.generate(prompts, params)]


def assert_same(expected, got, tolerance=1e-4):
    """The same tokens, and their log-probs to float32's rounding of another summation order."""
    assert [t for t, _ in got] == [t for t, _ in expected]
    for (tokens, a), (_, b) in zip(expected, got):
        for i, token in enumerate(tokens):
            assert abs(a[i][token].logprob - b[i][token].logprob) < tolerance


@pytest.mark.parametrize("backend", ["torch", "numba"])
@pytest.mark.parametrize("encoder_stream", [False, True], ids=["in-step", "encoder-stream"])
def test_bart_reads_the_states_as_its_projected_cache(tiny_bart, backend, encoder_stream):
    """BART's K/V projections have biases (K's drops out of the softmax). The encoder in the
    step (prefill rows attend to the step's K/V) or apart (every row reads the cache)."""
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=7, max_len=120)]
    common = dict(device="cpu", dtype="float32", num_kv_blocks=300, attention_backend=backend)
    common["encoder_stream"] = encoder_stream
    expected = greedy(Engine(path, **common), prompts)
    assert_same(expected, greedy(Engine(path, cross_cache="states", **common), prompts))


@pytest.mark.parametrize("mode", ["swap", "recompute"])
def test_preempted_requests_decode_as_unpreempted_ones(tiny_bart, mode):
    """The states have pools of their own (as many blocks as the self pool here): long outputs run
    the self pool out, and swapped requests move their states with them."""
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(10, seed=3, max_len=80)]
    settings = dict(device="cpu", dtype="float32", attention_backend="torch", cross_cache="states")
    params = SamplingParams(max_tokens=100, ignore_eos=True, logprobs=1)
    alone = greedy(Engine(path, num_kv_blocks=600, **settings), prompts, params)
    tight = Engine(path, num_kv_blocks=24, num_cpu_blocks=400, preemption_mode=mode, **settings)
    assert tight.block_manager.cross_pools["device"].num_blocks == 24  # tiny_bart: 256 + 256 positions
    assert [t for t, _ in greedy(tight, prompts, params)] == [t for t, _ in alone]
    sched = tight.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0


def test_beams_read_their_requests_states(tiny_bart):
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(3, seed=5, max_len=80)]
    params = SamplingParams(max_tokens=8, beam_width=3, num_return_sequences=3, ignore_eos=True)
    common = dict(device="cpu", dtype="float32", num_kv_blocks=400, attention_backend="torch")
    expected = [[c.token_ids for c in o.outputs] for o in Engine(path, **common).generate(prompts, params)]
    engine = Engine(path, cross_cache="states", **common)
    assert [[c.token_ids for c in o.outputs] for o in engine.generate(prompts, params)] == expected


@pytest.mark.parametrize("kv", ["auto", "fp8"])
def test_whisper_through_the_triton_kernel(tiny_whispers, kv):
    """1500 encoder positions through the states kernel (in Triton's interpreter on a CPU) and the
    decode graphs' padded buffers, against the torch path: its projected cache, or for fp8 its
    fp8 states (the same codes)."""
    path, _ = tiny_whispers["multilingual"]
    prompts = [
        {"audio": (synthetic_clip(s, seed), 16000), "language": None, "timestamps": True}
        for seed, s in enumerate([2.0, 25.0])
    ]
    params = SamplingParams(max_tokens=3, logprobs=1)
    common = dict(dtype="float32", num_kv_blocks=600, kv_cache_dtype=kv)
    oracle = Engine(
        path,
        device="cpu",
        attention_backend="torch",
        cross_cache="projected" if kv == "auto" else "states",
        **common,
    )
    expected = greedy(oracle, prompts, params)
    backend = "cuda" if DEVICE == "cuda" else "triton"
    engine = Engine(path, device=DEVICE, attention_backend=backend, cross_cache="states", **common)
    if DEVICE == "cpu":
        engine.runner.capture_decode_graphs(
            max_batch=4, max_self_blocks=28, max_cross_blocks=94, capture=False
        )
    # On a GPU the encoder's float32 products round otherwise than the CPU's, so an fp8 code at a
    # rounding edge may differ by a step: kv8's tolerance against the float cache (test_kv8_cache.py)
    tolerance = 1e-4 if DEVICE == "cpu" else 2e-3 if kv == "auto" else 0.06
    assert_same(expected, greedy(engine, prompts, params), tolerance=tolerance)


def test_real_speech_keeps_its_words_and_times():
    """The bundled tiny.en on jfk.flac, float32 (what transcribe() picks for cross_cache="states")."""
    common = dict(word_timestamps=True, dtype="float32")
    exact = scriba.transcribe(JFK, **common)
    states = scriba.transcribe(JFK, cross_cache="states", **common)
    assert words(states.text) == words(exact.text) == JFK_WORDS
    pairs = zip((w for s in exact.segments for w in s.words), (w for s in states.segments for w in s.words))
    for a, b in pairs:
        assert a.word == b.word and abs(a.start - b.start) <= 0.02 and abs(a.end - b.end) <= 0.02


@pytest.mark.parametrize("kv", ["fp8", "int8"])
def test_8bit_states_follow_the_8bit_projected_cache(tiny_bart, kv):
    """A scale a position (states) against one a head vector (projected K/V): both round, so the
    bound is kv8's (tests/engine/test_kv8_cache.py), against the float cache."""
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=7, max_len=120)]
    common = dict(device="cpu", dtype="float32", num_kv_blocks=300, attention_backend="torch")
    exact = greedy(Engine(path, **common), prompts)
    states = greedy(Engine(path, cross_cache="states", kv_cache_dtype=kv, **common), prompts)
    assert_follows(exact, states, tolerance=0.06)


def test_fp8_states_keep_real_speech_words():
    exact = scriba.transcribe(JFK, dtype="float32")
    fp8 = scriba.transcribe(JFK, dtype="float32", cross_cache="states", kv_cache_dtype="fp8")
    assert words(fp8.text) == words(exact.text) == JFK_WORDS


def test_what_states_cannot_run_with_is_refused():
    assert EngineConfig(device="cpu", cross_cache="states").cross_cache == "states"
    with pytest.raises(ValueError, match="cross_cache must be one of"):
        EngineConfig(device="cpu", cross_cache="both")
    for clash in (
        dict(kv_cache_dtype="int4"),
        dict(quantization="int8"),
        dict(encoder_runtime="openvino"),
        dict(decoder_runtime="numba"),
    ):
        ((name, value),) = clash.items()
        with pytest.raises(ValueError, match=f"cannot run with {name}={value!r}"):
            EngineConfig(device="cpu", cross_cache="states", **clash)


def test_a_request_takes_less_memory_with_states(tiny_whispers):
    """The pools as sized (engine/memory.kv_pool_sizes): a full-length request's cross table in
    the states' pool costs one layer's K half a block, not every layer's K and V."""
    from scriba.engine.memory import kv_pool_sizes

    path, _ = tiny_whispers["multilingual"]
    engines = {
        c: Engine(path, device="cpu", num_kv_blocks=200, cross_cache=c) for c in ("projected", "states")
    }
    per_request = {}
    for cross, engine in engines.items():
        sizes = kv_pool_sizes(engine.config, engine.runner)
        per_request[cross] = sizes.bytes_per_block * sizes.per_request
    states = engines["states"]
    shape, pool = states.runner.cache_shape, states.block_manager.cross_pools["device"]
    assert shape.bytes_per_block(states=True) * 2 * shape.num_layers == shape.bytes_per_block()
    cross_full, self_full = (
        -(-n // 16) for n in (states.model.max_encoder_len, states.model.max_decoder_len)
    )
    expected = (self_full + cross_full / (2 * shape.num_layers)) / (self_full + cross_full)
    assert per_request["states"] / per_request["projected"] == pytest.approx(expected, rel=0.01)
    assert pool.num_blocks == -(-200 * cross_full // self_full)  # a self block's share of states blocks
    assert states.runner.states[0].shape == (1, pool.num_blocks, 16, shape.heads, shape.head_dim)
