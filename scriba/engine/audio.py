"""Audio in: decode any common file, mix to mono, resample to 16 kHz, and log-mel features.

Files go to `soundfile` (wav, flac, ogg, mp3) first and to PyAV (m4a, mp4, webm, opus, ...)
when libsndfile cannot read them. Resampling uses soxr (or PyAV's libswresample for what
PyAV decodes). Features come from transformers' `WhisperFeatureExtractor`, so they are the
ones Hugging Face's Whisper models were trained and evaluated with.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Union

import numpy as np

from scriba.engine.audio_decode import decode_file, probe_duration
from scriba.engine.audio_errors import AudioError, DamagedAudio, EmptyAudio

__all__ = ["SAMPLE_RATE", "AudioError", "load_audio", "log_mel", "probe_duration"]

SAMPLE_RATE = 16000
WINDOW_SECONDS = 30
WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_SECONDS
HOP_LENGTH = 160  # audio samples per log-mel frame; two frames per encoder position
TIME_PRECISION = 2 * HOP_LENGTH / SAMPLE_RATE  # 0.02 s: one timestamp token step, one encoder position

AudioInput = Union[str, os.PathLike, bytes, bytearray, Any]  # path, bytes, file object, (array, rate), array


def is_audio_pair(source: Any) -> bool:
    return isinstance(source, tuple) and len(source) == 2 and isinstance(source[1], (int, np.integer))


def describe(source: AudioInput) -> str:
    if isinstance(source, (str, os.PathLike)):
        return repr(os.fspath(source))
    if isinstance(source, (bytes, bytearray)):
        return f"{len(source)} bytes of audio"
    return getattr(source, "name", None) or type(source).__name__


def load_audio(source: AudioInput, sample_rate: int = SAMPLE_RATE, name: str | None = None) -> np.ndarray:
    """Any accepted input -> float32 mono samples at `sample_rate` [num_samples]. Errors name
    the input `name` (default: its path as given).

    A bare array is taken as mono samples at `sample_rate` already; `(array, rate)` is resampled.
    """
    name = name or describe(source)
    if is_audio_pair(source):
        samples, rate = np.asarray(source[0]), int(source[1])
        if rate <= 0:
            raise AudioError(f"sample rate must be positive, got {rate}")
    elif isinstance(source, np.ndarray) or (hasattr(source, "__array__") and not hasattr(source, "read")):
        samples, rate = np.asarray(source), sample_rate
    else:
        samples, rate = decode_file(source, sample_rate, name)
    samples = _as_mono_float(samples)
    if samples.size == 0:
        raise EmptyAudio(f"{name} has no audio samples")
    if not np.isfinite(samples).all():
        raise DamagedAudio(f"{name} has NaN or infinite samples")
    if rate != sample_rate:
        import soxr

        samples = soxr.resample(samples, rate, sample_rate).astype(np.float32)
    return samples


def _as_mono_float(samples: np.ndarray) -> np.ndarray:
    if samples.dtype.kind not in "fiu":
        raise AudioError(f"audio samples must be numbers, got dtype {samples.dtype}")
    if samples.dtype.kind in "iu":  # integer PCM -> [-1, 1)
        samples = samples / float(np.iinfo(samples.dtype).max + 1)
    samples = samples.astype(np.float32)
    if samples.ndim == 2:  # (samples, channels) as soundfile gives, or (channels, samples)
        axis = 1 if samples.shape[1] <= samples.shape[0] else 0
        samples = samples.mean(axis=axis)
    elif samples.ndim != 1:
        raise AudioError(f"audio must be 1-D (mono) or 2-D (with channels), got shape {samples.shape}")
    return np.ascontiguousarray(samples)


@functools.lru_cache(maxsize=4)
def feature_extractor(num_mel_bins: int, num_frames: int = 3000):
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(
        feature_size=num_mel_bins,
        sampling_rate=SAMPLE_RATE,
        hop_length=HOP_LENGTH,
        chunk_length=num_frames * HOP_LENGTH // SAMPLE_RATE,
    )


def log_mel(windows: list[np.ndarray], num_mel_bins: int, num_frames: int = 3000) -> np.ndarray:
    """Windows of <= 30 s of 16 kHz samples -> [num_windows, num_mel_bins, num_frames] float32,
    each window zero-padded to 30 s, as WhisperFeatureExtractor computes them (its mel filters,
    Hann window and clamping), in one batched torch pass with the STFT in float64: within 1e-5
    of its numpy reference, where transformers' float32 torch path is off by up to 2e-5.

    Frames that see only the zero padding have zero power, so the STFT runs over the frames
    that touch audio (a 5 s clip costs a sixth of a 30 s window)."""
    import torch

    extractor = feature_extractor(num_mel_bins, num_frames)
    n_fft, hop = extractor.n_fft, extractor.hop_length
    longest = min(max((len(w) for w in windows), default=0), num_frames * hop)
    # Frame j reads samples [j * hop - n_fft / 2, j * hop + n_fft / 2): past `used`, only zeros.
    used = min(num_frames, (longest + n_fft // 2) // hop + 2)
    segment = np.zeros((len(windows), min(num_frames * hop, used * hop + n_fft)), dtype=np.float64)
    for row, window in zip(segment, windows):
        row[: min(len(window), len(row))] = window[: len(row)]
    hann = torch.hann_window(n_fft, dtype=torch.float64)
    stft = torch.stft(torch.from_numpy(segment), n_fft, hop, window=hann, return_complex=True)
    power = (stft[..., :used].abs() ** 2).to(torch.float32)  # [windows, n_fft // 2 + 1, used]
    mel = torch.zeros(len(windows), num_mel_bins, num_frames)
    mel[..., :used] = torch.from_numpy(extractor.mel_filters).to(torch.float32).T @ power
    log_spec = mel.clamp(min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.amax(dim=(1, 2), keepdim=True) - 8.0)
    return ((log_spec + 4.0) / 4.0).numpy()
