"""faster-whisper (float32, CTranslate2) on the same offline weights as Scriba, fed Scriba's
log-mel features: its decoding options are then compared with Scriba's token for token.

Why Scriba's features: faster-whisper computes its own (another resampler, and a window
shorter than 30 s is padded with zeros in log-mel space, as openai-whisper's transcribe does,
where transformers pads the audio), so on the same weights the two differ in a token here and
there whatever the options; with the same features, greedy decoding agrees."""

from __future__ import annotations

import numpy as np

from scriba.models.offline import offline_model_path
from scriba.whisper.log_mel import log_mel


class _ScribaFeatures:
    """faster-whisper's feature extractor, computing Scriba's features (audio up to 30 s)."""

    def __init__(self, inner):
        self.inner = inner
        self.mels = inner.mel_filters.shape[0]

    def __call__(self, audio, chunk_length=None, **kwargs):
        features = log_mel([np.asarray(audio, np.float32)], self.mels)[0]
        return np.concatenate([features, features[:, -1:]], axis=1)  # it drops the last frame

    def __getattr__(self, name):
        return getattr(self.inner, name)


def faster_whisper_model(name: str = "tiny.en"):
    from faster_whisper import WhisperModel

    model = WhisperModel(offline_model_path(name), device="cpu", compute_type="float32", cpu_threads=2)
    model.feature_extractor = _ScribaFeatures(model.feature_extractor)
    return model


def faster_whisper_tokens(model, audio: np.ndarray, **options) -> list[int]:
    """Every segment's tokens, greedy (beam_size 1, temperature 0), one list."""
    segments, _ = model.transcribe(audio, beam_size=1, temperature=0.0, **options)
    return [t for s in segments for t in s.tokens]
