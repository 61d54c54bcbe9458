"""Whisper's log-mel features, computed as transformers' `WhisperFeatureExtractor` does (its mel
filters, Hann window and clamping), so they are the ones Whisper was trained and evaluated with;
built here, without importing transformers."""

from __future__ import annotations

import functools

import numpy as np

from scriba.whisper.constants import HOP_LENGTH, SAMPLE_RATE

N_FFT = 400  # 25 ms windows
# How a window shorter than 30 s is filled: "audio", silent samples (transformers' feature
# extractor, and so the exact mode); "mel", zeros after the audio's frames (openai-whisper's and
# faster-whisper's transcribe). Measured on the multilingual base: "mel" is the better fill for
# speech in other languages than English, "audio" for English (docs/transcription.md).
MEL_PADDINGS = ("audio", "mel")


@functools.lru_cache(maxsize=4)
def mel_filters(num_mel_bins: int) -> np.ndarray:
    """[N_FFT // 2 + 1, num_mel_bins] float64: triangular filters on the Slaney mel scale from 0 to
    8 kHz, each scaled to unit area (Slaney's norm), as librosa, openai-whisper and transformers'
    WhisperFeatureExtractor build them."""
    f_sp, knee = 200.0 / 3, 1000.0  # linear below 1 kHz (f_sp Hz per mel), logarithmic above
    log_step = np.log(6.4) / 27.0

    def hz_to_mel(hz):
        hz = np.asarray(hz, dtype=np.float64)
        return np.where(hz < knee, hz / f_sp, knee / f_sp + np.log(np.maximum(hz, 1e-10) / knee) / log_step)

    def mel_to_hz(mel):
        return np.where(mel < knee / f_sp, mel * f_sp, knee * np.exp(log_step * (mel - knee / f_sp)))

    fft_hz = np.linspace(0, SAMPLE_RATE // 2, N_FFT // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE / 2), num_mel_bins + 2))
    widths = np.diff(edges)
    slopes = edges[None, :] - fft_hz[:, None]  # [bins, num_mel_bins + 2]
    rising, falling = -slopes[:, :-2] / widths[:-1], slopes[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[None, :]


def log_mel(
    windows: list[np.ndarray], num_mel_bins: int, num_frames: int = 3000, padding: str = "audio"
) -> np.ndarray:
    """Windows of <= 30 s of 16 kHz samples -> [num_windows, num_mel_bins, num_frames] float32,
    each window zero-padded to 30 s, as WhisperFeatureExtractor computes them (its mel filters,
    Hann window and clamping), in one batched torch pass with the STFT in float64: within 1e-5
    of its numpy reference, where transformers' float32 torch path is off by up to 2e-5.
    `padding` "mel": the frames after the audio's (len // hop) are zeros instead, as
    openai-whisper's and faster-whisper's transcribe() pad a window's log-mel (MEL_PADDINGS).

    Frames that see only the zero padding have zero power, so the STFT runs over the frames
    that touch audio (a 5 s clip costs a sixth of a 30 s window)."""
    import torch

    n_fft, hop = N_FFT, HOP_LENGTH
    longest = min(max((len(w) for w in windows), default=0), num_frames * hop)
    # Frame j reads samples [j * hop - n_fft / 2, j * hop + n_fft / 2): past `used`, only zeros.
    used = min(num_frames, (longest + n_fft // 2) // hop + 2)
    segment = np.zeros((len(windows), min(num_frames * hop, used * hop + n_fft)), dtype=np.float64)
    for row, window in zip(segment, windows):
        row[: min(len(window), len(row))] = window[: len(row)]
    hann = torch.hann_window(n_fft, dtype=torch.float64)
    stft = torch.stft(torch.from_numpy(segment), n_fft, hop, window=hann, return_complex=True)
    parts = torch.view_as_real(stft[..., :used])  # re^2 + im^2: |z|^2 without abs's square root
    power = (parts[..., 0] * parts[..., 0] + parts[..., 1] * parts[..., 1]).to(torch.float32)
    mel = torch.zeros(len(windows), num_mel_bins, num_frames)
    mel[..., :used] = torch.from_numpy(mel_filters(num_mel_bins)).to(torch.float32).T @ power
    log_spec = mel.clamp(min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.amax(dim=(1, 2), keepdim=True) - 8.0)
    features = ((log_spec + 4.0) / 4.0).numpy()
    if padding == "mel":
        for row, window in zip(features, windows):
            row[:, len(window) // hop :] = 0.0
    return features
