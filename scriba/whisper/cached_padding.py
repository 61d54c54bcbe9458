"""A window that is mostly padding, encoded at the cost of its audio: the positions past the audio
take their states from one window of silence, encoded once when the engine starts.

Whisper pads every window to 30 s, so a 4 s clip spends ~85% of its encoder on padding. The
padding's states are not a function of the padding alone (attention mixes every position), so
they cannot simply be skipped (whisper.cpp's audio_ctx drops them: the dev clips' WER 0.073 ->
0.30-0.55 with tiny.en, benchmarks/measure_audio_ctx.py); here they are replaced by those of a
silent window: the audio's positions (and a second of padding past them) are encoded exactly,
their attention reading the silent window's keys and values at the other positions, and the
decoder's cross-attention reads the silent window's states there. Not exact: the states of the
audio's positions move ~6-16% (relative), the padding's ~50%; through `scriba.transcribe` 3 of the
24 dev short clips lose or change words (WER tiny.en 0.0657 -> 0.0754, base 0.0584 -> 0.0657;
benchmarks/measure_cached_padding.py, docs/performance.md), for a short clip's encoder 2-4x
cheaper. Opt-in: `EngineConfig(encoder_padding="cached")`; "computed" encodes every position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

# The silent window's log-mel level: the padding of a window whose loudest mel bin is 10^1 (the
# features' clamp puts padding 8 log10 units below the peak, then (x + 4) / 4). The dev clips'
# padding lies at -0.96..-0.50; with each clip's own level their WER was the same.
SILENCE_LEVEL = -0.75
MARGIN_POSITIONS = 50  # a second of padding past the audio is encoded exactly (0.2 s cost words)
POSITION_STEP = 25  # positions encoded, rounded up to half seconds: few distinct graph shapes
PADDING_BELOW_PEAK = 2.0  # the features' clamp: 8 log10 units below the window's peak, over 4


@dataclass
class SilentWindow:
    """A silent window's encoder values, each [positions, width] float32: every encoder layer's
    self-attention keys and values (`layer_kv`, pairs [positions, d_model]), and the encoder
    graph's outputs (the states [positions, d_model], or each decoder layer's cross K/V
    [positions, 2 * d_model])."""

    layer_kv: list[tuple[np.ndarray, np.ndarray]]
    outputs: list[np.ndarray]


def positions_to_encode(features: torch.Tensor, max_positions: int) -> int | None:
    """How many leading positions of `features` [windows, mel_bins, 2 * max_positions] to encode
    exactly: the most any window's audio reaches (a frame is padding when every bin sits at the
    features' floor, PADDING_BELOW_PEAK under the window's peak), plus MARGIN_POSITIONS, rounded
    up to POSITION_STEP; None when that leaves too little padding to be worth it."""
    frame_peaks = features.amax(dim=1)  # [windows, frames]
    floors = features.amax(dim=(1, 2)) - PADDING_BELOW_PEAK
    audio = frame_peaks > floors[:, None] + 1e-3
    frames = audio.shape[1]
    last = frames - torch.flip(audio, dims=[1]).to(torch.int8).argmax(dim=1)  # one past the last
    last = torch.where(audio.any(dim=1), last, torch.zeros_like(last))
    positions = math.ceil(int(last.max()) / 2) + MARGIN_POSITIONS
    positions = POSITION_STEP * math.ceil(positions / POSITION_STEP)
    return None if positions > max_positions - 2 * POSITION_STEP else positions
