"""EngineConfig.encoder_stream: an admitted request's encoder runs apart from the decoder steps
(on a GPU on a CUDA stream of its own), and its prompt joins a later step as rows reading the
cached cross K/V. Oracle: the same engine with the encoder inside the prefill. Every output must
match: tokens, log-probs, finish reasons, Whisper's no-speech probability (a prompt log-prob),
under stops, length caps, beams, forks, preemption and aborts, synchronous and asynchronous."""

import pytest
import torch
from oracle import assert_same_outputs, beams_and_forks_params, mixed_sampling_params, random_prompts
from tiny_whisper import synthetic_clip

from scriba import Engine, SamplingParams


def recording_steps(engine) -> list[tuple[int, int, int]]:
    """Per launched step: (groups encoded apart, groups whose prompt ran, groups decoding)."""
    seen, launch = [], engine.runner.launch

    def recorded(sched, blocks, feed=None):
        seen.append((len(sched.encodes), len(sched.prompts), len(sched.decodes)))
        return launch(sched, blocks, feed)

    engine.runner.launch = recorded
    return seen


def both(path, prompts, params, **config):
    """(outputs with the encoder in the prefill, outputs with the encoder apart, that engine, its steps)."""
    expected = Engine(path, dtype="float32", **config).generate(prompts, params)
    engine = Engine(path, dtype="float32", encoder_stream=True, **config)
    steps = recording_steps(engine)
    return expected, engine.generate(prompts, params), engine, steps


def assert_drained(engine) -> None:
    bm = engine.block_manager
    assert not engine.has_unfinished_requests()
    assert bm.num_free() == bm.num_total() and bm.num_free("cpu") == bm.num_total("cpu")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_greedy_sampled_stops_and_caps_match_with_prompts_beside_decodes(tiny_bart_eos, asynchronous):
    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=3, max_len=100)]
    params = mixed_sampling_params()
    config = dict(num_kv_blocks=600, max_num_seqs=3, async_scheduling=asynchronous)
    expected, outputs, engine, steps = both(path, prompts, params, **config)
    assert_same_outputs(expected, outputs)
    assert sum(e for e, _, _ in steps) == sum(p for _, p, _ in steps) == 8  # each encoded once
    assert any(p and d for _, p, d in steps)  # prompts joined steps of running decodes
    assert all(e + p + d <= 3 for e, p, d in steps)  # groups encoding count against max_num_seqs
    assert_drained(engine)


def test_beams_and_forks_match(tiny_bart_eos):
    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(6, seed=4, max_len=80)]
    params = beams_and_forks_params()
    expected, outputs, engine, _ = both(path, prompts, params, num_kv_blocks=800, async_scheduling=True)
    assert_same_outputs(expected, outputs)
    assert_drained(engine)


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preemption_matches(tiny_bart_eos, mode):
    """A preempted group is encoded again when readmitted (its cross blocks were freed), or
    swapped with its cross K/V; one preempted before its prompt ran is always recomputed."""
    path, _ = tiny_bart_eos
    prompts = [{"prompt_token_ids": p} for p in random_prompts(8, seed=9, max_len=120)]
    params = SamplingParams(max_tokens=70, ignore_eos=True, logprobs=1)
    config = dict(num_kv_blocks=40, num_cpu_blocks=400, preemption_mode=mode)
    expected, outputs, engine, steps = both(path, prompts, params, **config)
    sched = engine.scheduler
    assert (sched.num_swapped_out if mode == "swap" else sched.num_recomputed) > 0
    assert_same_outputs(expected, outputs)
    if mode == "recompute":
        assert sum(e for e, _, _ in steps) == 8 + sched.num_recomputed
    assert_drained(engine)


class NeverDone:
    """A stand-in CUDA event whose encoder has not finished."""

    def query(self) -> bool:
        return False


def test_a_group_waits_for_its_encoder_and_its_abort_fences_the_next_step(tiny_bart):
    path, _ = tiny_bart
    prompts = random_prompts(3, seed=12, max_len=50)
    params = SamplingParams(max_tokens=12, ignore_eos=True)
    expected = Engine(path, dtype="float32", num_kv_blocks=300).generate(
        [{"prompt_token_ids": p} for p in prompts[1:]], params
    )
    engine = Engine(path, dtype="float32", num_kv_blocks=300, encoder_stream=True)
    fences, fence = [], engine.runner.encoder_stream.fence
    engine.runner.encoder_stream.fence = lambda: (fences.append(len(steps)), fence())
    steps = recording_steps(engine)
    for i, p in enumerate(prompts):
        engine.add_request(f"r{i}", {"prompt_token_ids": p}, params)
    engine.step()  # all three admitted, encoded
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # on a GPU their encoders run on a stream of their own
    engine.groups["r0"].encoder_run.event = NeverDone()
    engine.step()
    assert steps[-1] == (0, 2, 0)  # r0 held: its encoder "runs"
    engine.step()
    assert engine.groups["r0"].encoder_run is not None and not engine.groups["r0"].seqs[0].num_output_tokens
    engine.abort("r0")
    assert not fences
    finished = {}
    while engine.has_unfinished_requests():
        for out in engine.step():
            if out.finished:
                finished[out.request_id] = out.outputs[0].token_ids
    assert fences == [4]  # the step after the abort waited for the encoder first
    assert finished == {f"r{i}": e.outputs[0].token_ids for i, e in zip((1, 2), expected)}
    assert_drained(engine)


def test_whisper_tokens_and_no_speech_probability_match(tiny_whispers):
    path, _ = tiny_whispers["multilingual"]
    prompts = [
        {"audio": (synthetic_clip(s, seed), 16000), "language": lang, "timestamps": ts}
        for seed, (s, lang, ts) in enumerate([(2.0, None, True), (25.0, "en", False), (7.0, "de", True)])
    ]
    params = SamplingParams(max_tokens=6, logprobs=1)
    expected, outputs, engine, steps = both(path, prompts, params, num_kv_blocks=600)
    assert_same_outputs(expected, outputs)
    for a, b in zip(expected, outputs):
        assert b.annotations.no_speech_prob == pytest.approx(a.annotations.no_speech_prob, abs=1e-5)
    assert sum(e for e, _, _ in steps) == 3
    assert_drained(engine)


def test_prompt_rows_through_the_decode_graph_buffers(tiny_bart):
    """The CUDA-graph decode (its padded buffers run eagerly here, Triton interpreted) takes a
    step of prompt rows beside decodes and samples only each prompt's last row."""
    path, _ = tiny_bart
    prompts = [{"prompt_token_ids": p} for p in random_prompts(3, seed=5, max_len=40)]
    params = [SamplingParams(max_tokens=n) for n in (4, 2, 3)]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = dict(
        device=device, dtype="float32", attention_backend="triton", num_kv_blocks=200, max_num_seqs=2
    )
    expected = Engine(path, **config).generate(prompts, params)
    engine = Engine(path, encoder_stream=True, **config)
    # up to 8 rows (max_num_seqs=2 would capture 2): a decode beside a prompt's rows; captured on a GPU
    sizes = dict(max_batch=8, max_self_blocks=8, max_cross_blocks=8)
    engine.runner.capture_decode_graphs(**sizes, capture=device == "cuda")
    fits, graphs_fit = [], engine.runner.graphs.fits
    engine.runner.graphs.fits = lambda meta: fits.append(graphs_fit(meta)) or fits[-1]
    steps = recording_steps(engine)
    outputs = engine.generate(prompts, params)
    assert [o.outputs[0].token_ids for o in outputs] == [o.outputs[0].token_ids for o in expected]
    assert any(p and d and fit for (_, p, d), fit in zip([s for s in steps if s[1] or s[2]], fits))


def test_needs_a_model_that_writes_its_cross_cache_alone(tiny_bart, monkeypatch):
    from scriba.models.bart import BartForConditionalGeneration

    monkeypatch.delattr(BartForConditionalGeneration, "write_cross_kv")
    with pytest.raises(ValueError, match="encoder_stream=True needs a model"):
        Engine(tiny_bart[0], dtype="float32", num_kv_blocks=64, encoder_stream=True)


def test_on_by_default_on_a_gpu_only(monkeypatch):
    """EngineConfig.create(encoder_stream=None) is resolved by the device (config validation only: no GPU
    is needed to check the GPU's default); an explicit choice stands either way."""
    from scriba import config

    def stream(**options) -> bool:
        return config.EngineConfig.create(**options).execution_config.encoder_stream

    assert stream(device="cpu") is False
    assert stream(device="cpu", encoder_stream=True) is True
    monkeypatch.setattr(config, "cuda_available", lambda: True)
    assert stream(device="cuda") is True
    assert stream(device="cuda", encoder_stream=False) is False
