"""The encoder replayed from CUDA graphs (engine/encoder_graphs.py). On a GPU the engine
captures them itself (float16, flash attention); on the CPU the same buffers run eagerly
(capture=False). Oracle: the eager encoder, and the engine's tokens without the graphs."""

import torch
from tiny_whisper import synthetic_clip

from scriba import Engine, SamplingParams

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_replayed_buffers_give_the_eager_encoders_states(tiny_whispers):
    engine = Engine(tiny_whispers["multilingual"][0], dtype="float32", device="cpu", num_kv_blocks=300)
    assert engine.runner.capture_encoder_graphs(max_windows=3, capture=False)
    model = engine.runner.model
    graphs = model.encoder_graphs
    features = torch.randn(3, *model.encoder_input_shape(), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        for n in (1, 3, 2):  # each count reads only its own rows of the shared buffer
            expected = model.model.encoder(features[:n].clone(), graphs._meta(n))
            assert graphs.fits(features[:n])
            assert torch.equal(graphs.run(features[:n]), expected)
    assert not graphs.fits(features.repeat(2, 1, 1))  # more windows than a step admits
    assert not graphs.fits(features[:, :, :-2])  # another window length
    assert not graphs.fits(features.double())
    assert not graphs.fits(None)


def test_only_fixed_inputs_and_a_graph_safe_attention_get_graphs(tiny_bart, tiny_whispers):
    bart = Engine(tiny_bart[0], dtype="float32", device="cpu", num_kv_blocks=100)
    assert not bart.runner.capture_encoder_graphs(4, capture=False)  # token ids of any length
    whisper = Engine(tiny_whispers["english"][0], dtype="float32", device="cpu", num_kv_blocks=300)
    assert not whisper.runner.capture_encoder_graphs(4)  # the CPU's reference attention syncs
    assert not whisper.runner.capture_encoder_graphs(0, capture=False)
    assert whisper.runner.model.encoder_graphs is None


def test_the_engine_keeps_its_tokens_with_the_encoder_graphs(tiny_whispers):
    """Three windows: with room for two a step, admission runs one step from the graphs and
    one eagerly, or two from the graphs; the tokens equal those without graphs."""
    path, _ = tiny_whispers["multilingual"]
    on_gpu = DEVICE == "cuda"
    engine = Engine(
        path,
        device=DEVICE,
        dtype="float16" if on_gpu else "float32",
        num_kv_blocks=600,
        max_num_batched_tokens=2 * 1504,
    )
    if not on_gpu:
        engine.runner.capture_encoder_graphs(max_windows=2, capture=False)
    model = engine.runner.model
    graphs = model.encoder_graphs
    assert graphs is not None and graphs.max_windows == 2
    replays = []
    run = graphs.run
    graphs.run = lambda features: replays.append(features.shape[0]) or run(features)
    prompts = [
        {"audio": (synthetic_clip(s, seed), 16000), "language": "en"}
        for seed, s in enumerate([2.0, 9.0, 4.0])
    ]
    params = SamplingParams(max_tokens=6)
    with_graphs = [o.outputs[0].token_ids for o in engine.generate(prompts, params)]
    assert sum(replays) == 3
    model.encoder_graphs = None
    assert [o.outputs[0].token_ids for o in engine.generate(prompts, params)] == with_graphs


def test_the_step_names_the_length_its_encoder_sequences_share(monkeypatch, tiny_bart, tiny_whispers):
    """AttentionMetadata.encoder_equal_len, which sends a GPU's encoder to dense attention: every
    audio window's length; for text, the prompts' length when a step's prompts share it, else 0."""
    from scriba.kernels import backend as backends

    seen = []
    packed = backends.TorchBackend.encoder_attention.__func__

    def spy(cls, q, k, v, meta, scale):
        seen.append((meta.encoder_equal_len, meta.encoder_max_seqlen))
        return packed(cls, q, k, v, meta, scale)

    monkeypatch.setattr(backends.TorchBackend, "encoder_attention", classmethod(spy))
    whisper = Engine(tiny_whispers["english"][0], dtype="float32", device="cpu", num_kv_blocks=300)
    clips = [{"audio": (synthetic_clip(s, seed), 16000)} for seed, s in enumerate([2.0, 5.0])]
    whisper.generate(clips, SamplingParams(max_tokens=2))
    windows = whisper.runner.model.max_encoder_len
    assert seen and set(seen) == {(windows, windows)}
    seen.clear()
    bart = Engine(tiny_bart[0], dtype="float32", device="cpu", num_kv_blocks=100)
    for prompts in ([[0, 5, 6, 7, 2], [0, 8, 9, 2]], [[0, 5, 6, 2], [0, 8, 9, 2]]):  # each one step
        bart.generate([{"prompt_token_ids": p} for p in prompts], SamplingParams(max_tokens=2))
    assert list(dict.fromkeys(seen)) == [(0, 5), (4, 4)]  # per step, each encoder layer alike
