"""The silent window kept on disk (models/openvino_encoder/silent_window.py): read back as written, keyed by
the weights, and what a second engine's encoder starts from."""

import numpy as np
import pytest
import torch

import scriba.models.openvino_encoder.runtime as openvino_encoder
from scriba.models.openvino_encoder.cached_padding import SilentWindow
from scriba.models.openvino_encoder.silent_window import (
    load_silent_window,
    save_silent_window,
    silent_window_key,
)
from scriba.models.registry import load_model


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIBA_CACHE", str(tmp_path))
    return tmp_path


def test_a_stored_window_reads_back_as_written(cache):
    rng = np.random.default_rng(0)
    window = SilentWindow(
        [(rng.normal(size=(6, 4)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32))] * 2,
        [rng.normal(size=(6, 8)).astype(np.float32)],
    )
    assert load_silent_window("abc") is None  # never stored
    save_silent_window("abc", window)
    back = load_silent_window("abc")
    assert len(back.layer_kv) == 2 and len(back.outputs) == 1
    for (k, v), (k2, v2) in zip(window.layer_kv, back.layer_kv):
        assert np.array_equal(k, k2) and np.array_equal(v, v2)
    assert np.array_equal(window.outputs[0], back.outputs[0])
    (cache / "silent_windows" / "abc.npz").write_bytes(b"not a zip")
    assert load_silent_window("abc") is None  # unreadable: encoded again


def test_the_key_follows_the_weights_and_the_runtime():
    layer = torch.nn.Linear(4, 4)
    key = silent_window_key("2026.4", [layer])
    assert silent_window_key("2026.4", [layer]) == key
    assert silent_window_key("2026.5", [layer]) != key
    with torch.no_grad():
        layer.weight[0, 0] += 1e-6
    assert silent_window_key("2026.4", [layer]) != key


def test_a_second_encoder_starts_from_the_stored_window(cache, tiny_whispers, monkeypatch):
    folder, _ = tiny_whispers["english"]
    model, _ = load_model(folder, "cpu", torch.float32)
    projections = [layer.encoder_attn.kv_proj for layer in model.model.decoder.layers]

    def build():
        return openvino_encoder.OpenVINOEncoder(
            model.model.encoder, 2, "f32", projections, cached_padding=True
        )

    features = torch.full((1, 80, 3000), -0.75)
    features[:, :, :300] = torch.rand(1, 80, 300, generator=torch.Generator().manual_seed(0))
    first = [out.clone() for out in build()(features)]
    assert len(list((cache / "silent_windows").glob("*.npz"))) == 1

    def refuse(*args):
        raise AssertionError("the stored window should have been read")

    monkeypatch.setattr(openvino_encoder, "_encode_silent_window", refuse)
    for got, expected in zip(build()(features), first):
        assert torch.equal(got, expected)
