"""Audio in: decode any common file, mix to mono, resample to 16 kHz, and log-mel features.

Files go to `soundfile` (wav, flac, ogg, mp3) first and to PyAV (m4a, mp4, webm, opus, ...)
when libsndfile cannot read them. Resampling uses soxr (or PyAV's libswresample for what
PyAV decodes). Features come from transformers' `WhisperFeatureExtractor`, so they are the
ones Hugging Face's Whisper models were trained and evaluated with.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from typing import Any, Union

import numpy as np

SAMPLE_RATE = 16000
WINDOW_SECONDS = 30
WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_SECONDS

AudioInput = Union[str, os.PathLike, bytes, bytearray, Any]  # path, bytes, file object, (array, rate), array


class AudioError(ValueError):
    """The input is not usable audio; the message says why."""


def is_audio_pair(source: Any) -> bool:
    return isinstance(source, tuple) and len(source) == 2 and isinstance(source[1], (int, np.integer))


def describe(source: AudioInput) -> str:
    if isinstance(source, (str, os.PathLike)):
        return repr(os.fspath(source))
    if isinstance(source, (bytes, bytearray)):
        return f"{len(source)} bytes of audio"
    return getattr(source, "name", None) or type(source).__name__


def load_audio(source: AudioInput, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Any accepted input -> float32 mono samples at `sample_rate` [num_samples].

    A bare array is taken as mono samples at `sample_rate` already; `(array, rate)` is resampled.
    """
    if is_audio_pair(source):
        samples, rate = np.asarray(source[0]), int(source[1])
        if rate <= 0:
            raise AudioError(f"sample rate must be positive, got {rate}")
    elif isinstance(source, np.ndarray) or (hasattr(source, "__array__") and not hasattr(source, "read")):
        samples, rate = np.asarray(source), sample_rate
    else:
        samples, rate = _decode(source, sample_rate)
    samples = _as_mono_float(samples)
    if samples.size == 0:
        raise AudioError(f"{describe(source)} has no audio samples")
    if not np.isfinite(samples).all():
        raise AudioError(f"{describe(source)} has NaN or infinite samples")
    if rate != sample_rate:
        import soxr

        samples = soxr.resample(samples, rate, sample_rate).astype(np.float32)
    return samples


def probe_duration(path: str | os.PathLike, name: str | None = None) -> float | None:
    """The length in seconds of the audio file at `path`, read from its header (nothing is
    decoded), or None when the container does not say. An empty file or one that is not audio
    raises AudioError naming it `name` (default: the path)."""
    name = name or repr(os.fspath(path))
    path = _open(path)
    if os.path.getsize(path) == 0:
        raise AudioError(f"{name} is an empty file")
    import soundfile as sf

    with contextlib.suppress(Exception):  # not a libsndfile format: FFmpeg's demuxer (PyAV) is asked next
        info = sf.info(path)
        return info.frames / info.samplerate if info.samplerate else None
    try:
        import av

        with av.open(path, metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise AudioError(f"{name} has no audio in it")
            stream = container.streams.audio[0]
            if stream.duration is not None and stream.time_base is not None:
                return float(stream.duration * stream.time_base)
            return container.duration / 1e6 if container.duration else None
    except AudioError:
        raise
    except Exception:
        raise AudioError(f"{name} is not an audio file (or its format is not supported)") from None


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


def _open(source: AudioInput):
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no such audio file: {path!r}")
        if os.path.isdir(path):
            raise AudioError(f"{path!r} is a folder, not an audio file")
        return path
    if isinstance(source, (bytes, bytearray)):
        return io.BytesIO(bytes(source))
    if hasattr(source, "read"):
        return io.BytesIO(source.read())
    raise AudioError(
        f"cannot read audio from a {type(source).__name__}: "
        "give a path, bytes, a file object or (array, sample_rate)"
    )


def _decode(source: AudioInput, sample_rate: int) -> tuple[np.ndarray, int]:
    import soundfile as sf

    handle = _open(source)
    try:
        return _decode_in_pieces(sf.SoundFile(handle), sample_rate), sample_rate
    except Exception:  # libsndfile cannot read this container: try FFmpeg through PyAV
        if hasattr(handle, "seek"):
            handle.seek(0)
    try:
        return _decode_with_av(handle, sample_rate), sample_rate
    except ImportError:
        raise AudioError(
            f"could not decode {describe(source)} with soundfile, and PyAV (pip install av) is not installed"
        ) from None
    except Exception as e:
        raise AudioError(
            f"could not decode {describe(source)}: not a readable audio file ({type(e).__name__})"
        ) from None


PIECE_FRAMES = 1 << 20  # about 20 s at 48 kHz: what is decoded at once


def _decode_in_pieces(sound, sample_rate: int) -> np.ndarray:
    """Decode, mix to mono and resample piece by piece, so a long file never exists whole at
    its own rate and channel count (2 hours of 48 kHz stereo would be 2.8 GB of float32)."""
    import soxr

    with sound:
        rate = sound.samplerate
        stream = soxr.ResampleStream(rate, sample_rate, 1, dtype="float32") if rate != sample_rate else None
        pieces = []
        # read(), not blocks(): a container whose header overstates its length (mp3's frame
        # count is an estimate) makes blocks() pad its last block with uninitialized memory;
        # read() returns only the frames that were decoded.
        while (block := sound.read(PIECE_FRAMES, dtype="float32", always_2d=True)).shape[0]:
            mono = block.mean(axis=1) if block.shape[1] > 1 else block[:, 0]
            pieces.append(stream.resample_chunk(mono) if stream else mono)
        if stream is not None:
            pieces.append(stream.resample_chunk(np.zeros(0, np.float32), last=True))
    return np.concatenate(pieces).astype(np.float32, copy=False) if pieces else np.zeros(0, np.float32)


def _decode_with_av(handle, sample_rate: int) -> np.ndarray:
    import av

    chunks = []
    with av.open(handle, metadata_errors="ignore") as container:
        if not container.streams.audio:
            raise AudioError("the file has no audio stream")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        for frame in container.decode(stream):
            for out in resampler.resample(frame):
                chunks.append(out.to_ndarray().reshape(-1))
        for out in resampler.resample(None):  # flush
            chunks.append(out.to_ndarray().reshape(-1))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


@functools.lru_cache(maxsize=4)
def feature_extractor(num_mel_bins: int, num_frames: int = 3000):
    from transformers import WhisperFeatureExtractor

    hop = 160
    return WhisperFeatureExtractor(
        feature_size=num_mel_bins,
        sampling_rate=SAMPLE_RATE,
        hop_length=hop,
        chunk_length=num_frames * hop // SAMPLE_RATE,
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
