"""Audio in: decode any common file, mix to mono, resample to 16 kHz.

Files go to `soundfile` (wav, flac, ogg, mp3) first and to PyAV (m4a, mp4, webm, opus, ...)
when libsndfile cannot read them (decode.py). Resampling uses soxr (or PyAV's libswresample
for what PyAV decodes). Bad input raises one of errors.py's kinds, naming the file.
"""

from __future__ import annotations

import os
from typing import Any, Union

import numpy as np

from scriba.media.decode import decode_file, probe_duration
from scriba.media.errors import AudioError, DamagedAudio, EmptyAudio
from scriba.media.rate import SAMPLE_RATE

__all__ = ["SAMPLE_RATE", "AudioError", "load_audio", "probe_duration"]

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
