"""A window's padding from a silent window's values (models/openvino_encoder/): where the audio
ends, from the features alone; the graph against the same computation in transformers' layers;
a silent window the same either way; jfk.flac's words through the engine."""

import math

import numpy as np
import paths
import pytest
import torch
import torch.nn.functional as F

from scriba import Engine
from scriba.media.load import load_audio
from scriba.models.openvino_encoder.cached_padding import (
    CACHED_UP_TO,
    MARGIN_POSITIONS,
    POSITION_STEP,
    SILENCE_LEVEL,
    positions_to_encode,
)
from scriba.models.openvino_encoder.runtime import OpenVINOEncoder
from scriba.models.registry import load_model
from scriba.whisper.log_mel import log_mel

SAMPLES_PER_POSITION = 320  # 16 kHz, two 10 ms frames a position


def _expected_positions(seconds: float) -> int:
    positions = math.ceil(seconds * 16000 / SAMPLES_PER_POSITION) + MARGIN_POSITIONS
    return POSITION_STEP * math.ceil(positions / POSITION_STEP)


def test_the_positions_to_encode_follow_each_window_s_audio():
    jfk = load_audio(paths.JFK)
    three_seconds = jfk[: 3 * 16000]
    noise = np.random.default_rng(0).normal(0, 0.1, 20 * 16000)  # past CACHED_UP_TO: encoded whole
    features = torch.from_numpy(log_mel([jfk, three_seconds, noise], 80))
    jfk_positions, three, twenty = positions_to_encode(features, 1500)
    assert three in (_expected_positions(3.0), _expected_positions(3.02))
    assert abs(jfk_positions - _expected_positions(len(jfk) / 16000)) <= POSITION_STEP  # 11 s, within a step
    assert twenty is None and _expected_positions(15.0) <= CACHED_UP_TO
    assert positions_to_encode(features[1:2], 1500) == [three]  # a window's own, whatever it comes with
    silence = torch.from_numpy(log_mel([np.zeros(16000)], 80))  # every frame at the peak: no floor
    assert positions_to_encode(silence, 1500) == [None]


def _silent_window_reference(hf_encoder, features: torch.Tensor, positions: int) -> torch.Tensor:
    """transformers' encoder layers over the first `positions` positions, their attention reading
    a silent window's keys and values past them; the silent window's states there: [P, d]."""
    layers = hf_encoder.layers

    def front(x):
        x = F.gelu(hf_encoder.conv2(F.gelu(hf_encoder.conv1(x)))).permute(0, 2, 1)
        return x + hf_encoder.embed_positions.weight[: x.shape[1]]

    def layer_forward(layer, x, tail_kv):
        a, h = layer.self_attn, layer.self_attn_layer_norm(x)
        q, k, v = a.q_proj(h), a.k_proj(h), a.v_proj(h)
        own = (k, v)
        if tail_kv is not None:
            k, v = (torch.cat([mine, tail], 1) for mine, tail in zip((k, v), tail_kv))
        heads = lambda t: t.view(1, t.shape[1], a.num_heads, -1).transpose(1, 2)  # noqa: E731
        out = F.scaled_dot_product_attention(heads(q), heads(k), heads(v)).transpose(1, 2).flatten(2)
        x = x + a.out_proj(out)
        return x + layer.fc2(F.gelu(layer.fc1(layer.final_layer_norm(x)))), own

    x, silent_kv = front(torch.full_like(features, SILENCE_LEVEL)), []
    for layer in layers:
        x, kv = layer_forward(layer, x, None)
        silent_kv.append([t[:, positions:] for t in kv])
    silent_states = hf_encoder.layer_norm(x)[0, positions:]
    x = front(features)[:, :positions]
    for layer, tail_kv in zip(layers, silent_kv):
        x, _ = layer_forward(layer, x, tail_kv)
    return torch.cat([hf_encoder.layer_norm(x)[0], silent_states])


def test_the_graph_computes_the_same_in_transformers_layers(tiny_whispers):
    folder, hf = tiny_whispers["multilingual"]
    model, _ = load_model(folder, "cpu", torch.float32)
    encoder = OpenVINOEncoder(model.model.encoder, 2, "f32", cached_padding=True)
    features = torch.full((1, 80, 3000), SILENCE_LEVEL)
    features[:, :, :400] = torch.randn(1, 80, 400, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = _silent_window_reference(hf.model.encoder, features, 250)
    [got] = encoder.encode_leading(features, 250)
    assert got.shape == expected.shape
    assert float((got - expected).norm() / expected.norm()) < 1e-5
    [exact] = encoder.request.infer([features.numpy()]).values()  # every position computed
    assert float((torch.from_numpy(exact) - expected).norm() / expected.norm()) > 1e-3  # an approximation


@pytest.mark.parametrize("windows", [1, 2])
def test_a_silent_window_comes_out_the_same_either_way(tiny_whispers, windows):
    """Silence is what the cached positions hold: encoding it partly or wholly agrees, per
    decoder layer's cross K/V, window by window."""
    folder, _ = tiny_whispers["english"]
    model, _ = load_model(folder, "cpu", torch.float32)
    projections = [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]
    encoder = OpenVINOEncoder(model.model.encoder, 2, "f32", cross_kv=projections, cached_padding=True)
    silence = torch.full((windows, 80, 3000), SILENCE_LEVEL)
    whole = [torch.from_numpy(np.array(x)) for x in encoder.request.infer([silence.numpy()]).values()]
    part = encoder.encode_leading(silence, 175)
    assert len(part) == len(projections)
    for got, expected in zip(part, whole):
        assert got.shape == expected.shape == (windows * 1500, projections[0].weight.shape[0])
        assert float((got - expected).norm() / expected.norm()) < 1e-5


def test_a_window_s_outputs_do_not_depend_on_the_windows_beside_it(tiny_whispers):
    """Two short windows reaching different lengths and one encoded whole, in one call: each
    window's cross K/V as when it is encoded alone."""
    folder, _ = tiny_whispers["english"]
    model, _ = load_model(folder, "cpu", torch.float32)
    projections = [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]
    encoder = OpenVINOEncoder(model.model.encoder, 2, "f32", cross_kv=projections, cached_padding=True)
    features = torch.full((3, 80, 3000), SILENCE_LEVEL)
    generator = torch.Generator().manual_seed(0)
    for window, frames in enumerate([300, 2900, 700]):
        features[window, :, :frames] = SILENCE_LEVEL + 1 + torch.rand(80, frames, generator=generator)
    assert [p is None for p in positions_to_encode(features, 1500)] == [False, True, False]
    together = [out.clone() for out in encoder(features)]
    for window in range(3):
        alone = encoder(features[window : window + 1])
        for got, expected in zip(together, alone):
            rows = got.view(3, 1500, -1)[window]
            assert float((rows - expected).norm() / expected.norm()) < 1e-5


def test_the_engine_transcribes_jfk_with_its_padding_cached():
    engine = Engine(quantization="int8", encoder_runtime="openvino", encoder_padding="cached")
    assert engine.model.encoder_runtime.padded_request is not None
    prompt = {"audio": load_audio(paths.JFK), "language": "en"}
    [out] = engine.generate([prompt], engine.generation_defaults())
    text = out.outputs[0].text.lower()
    assert "ask not what your country can do for you" in text
    assert "ask what you can do for your country" in text
