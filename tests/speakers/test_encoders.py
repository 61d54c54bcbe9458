"""Another speaker embedding through `speaker_model`: a function, or a SpeechBrain hub model by
name (SpeechBrain's loader stood in for here: the tests have no network)."""

import sys
import types

import numpy as np
import pytest
import torch
from speakers import conversation

import scriba
from benchmarks.diarization_error import score
from scriba.speakers.encoders import speaker_encoder
from scriba.speakers.voice_encoder import embed, mel_frames


def bundled_on_samples(pieces: np.ndarray) -> np.ndarray:
    """The bundled encoder, from samples (as any other encoder gets them)."""
    return embed(np.stack([mel_frames(p)[:160] for p in pieces]))


def test_a_function_as_the_speaker_model_finds_the_same_speakers():
    wave, reference = conversation()
    calls = []

    def encoder(pieces):
        calls.append(pieces.shape)
        return bundled_on_samples(pieces) * 3.0  # not unit: normalized by Scriba

    result = scriba.transcribe(wave, diarize=True, speaker_model=encoder)
    assert calls and all(shape[1] == 25600 for shape in calls)
    turns = [(s.start, s.end, s.speaker) for s in result.segments]
    assert [s.name for s in result.speakers] == ["SPEAKER_00", "SPEAKER_01"]
    assert score(reference, turns, collar=0.5).der <= 0.1


def test_a_hub_name_loads_speechbrain_s_encoder(monkeypatch):
    loaded = []

    class EncoderClassifier:
        @classmethod
        def from_hparams(cls, source, run_opts):
            loaded.append(source)
            return cls()

        def encode_batch(self, waves):
            return torch.from_numpy(bundled_on_samples(waves.numpy()))[:, None, :]

    module = types.ModuleType("speechbrain.inference.speaker")
    module.EncoderClassifier = EncoderClassifier
    for name in ("speechbrain", "speechbrain.inference"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "speechbrain.inference.speaker", module)
    encode = speaker_encoder("someone/spkrec-test")
    assert loaded == ["someone/spkrec-test"]
    assert encode(np.zeros((3, 25600), np.float32)).shape == (3, 256)


def test_bad_speaker_models_are_one_line_errors(monkeypatch):
    monkeypatch.setitem(sys.modules, "speechbrain", None)  # not installed
    with pytest.raises(ValueError, match="speaker_model 'a/b' needs SpeechBrain: pip install speechbrain"):
        speaker_encoder("a/b")
    with pytest.raises(ValueError, match="speaker_model must be a hub model's name or a function, got 5"):
        speaker_encoder(5)
    with pytest.raises(ValueError, match="speaker_model needs diarize=True"):
        scriba.transcribe(np.zeros(16000, np.float32), speaker_model="a/b")
