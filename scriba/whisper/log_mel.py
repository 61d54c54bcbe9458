"""Whisper's log-mel features, computed as transformers' `WhisperFeatureExtractor` does, so they
are the ones Hugging Face's Whisper models were trained and evaluated with."""

from __future__ import annotations

import functools

import numpy as np

from scriba.whisper.constants import HOP_LENGTH, SAMPLE_RATE


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
