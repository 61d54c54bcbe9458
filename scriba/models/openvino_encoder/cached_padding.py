"""A window that is mostly padding, encoded at the cost of its audio: the positions past the audio
take their states from one window of silence, encoded once (and kept on disk:
models/openvino_encoder/silent_window.py).

Whisper pads every window to 30 s, so a 4 s clip spends ~85% of its encoder on padding. The
padding's states are not a function of the padding alone (attention mixes every position), so
they cannot simply be skipped (whisper.cpp's audio_ctx drops them: the dev clips' WER 0.073 ->
0.30-0.55 with tiny.en, docs/decisions.md); here they are replaced by those of a
silent window: the audio's positions (and 5 s of padding past them) are encoded exactly, their
attention reading the silent window's keys and values at the other positions, and the decoder's
cross-attention reads the silent window's states there. Not exact: through `scriba.transcribe`
2-7 of every 24-70 real English clips change a word or two (WER over the dev clips and the 70 LJ
Speech clips, 1,603 words: tiny.en 0.0714 -> 0.0734, base 0.0644 -> 0.0639), and segment ends near
the audio's end move by up to 1.2 s. With 1 s past the audio, windows of 15 s of German and Spanish
made text past the audio's end. A short
clip's encoder is 2-3x cheaper. Opt-in: `EngineConfig.create(encoder_padding="cached")`; "computed"
encodes every position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

# The silent window's log-mel level: the padding of a window whose loudest mel bin is 10^1 (the
# features' clamp puts padding 8 log10 units below the peak, then (x + 4) / 4). The dev clips'
# padding lies at -0.96..-0.50; with each clip's own level their WER was the same.
SILENCE_LEVEL = -0.75
MARGIN_POSITIONS = 250  # 5 s of padding past the audio encoded exactly (with 1 s: text past the audio)
POSITION_STEP = 25  # positions encoded, rounded up to half seconds: few distinct graph shapes
# A window with more audio than 15 s (and its 5 s of margin) is encoded whole: it would save under
# a third of its encoder, and long recordings (windows filled to 25 s, transcription/windows.py)
# keep every position's exact states.
CACHED_UP_TO = 1000
PADDING_BELOW_PEAK = 2.0  # the features' clamp: 8 log10 units below the window's peak, over 4


@dataclass
class SilentWindow:
    """A silent window's encoder values, each [positions, width] float32: every encoder layer's
    self-attention keys and values (`layer_kv`, pairs [positions, d_model]), and the encoder
    graph's outputs (the states [positions, d_model], or each decoder layer's cross K/V
    [positions, 2 * d_model])."""

    layer_kv: list[tuple[np.ndarray, np.ndarray]]
    outputs: list[np.ndarray]


def positions_to_encode(features: torch.Tensor, max_positions: int) -> list[int | None]:
    """How many leading positions of each window of `features` [windows, mel_bins, 2 *
    max_positions] to encode exactly: how far its audio reaches (a frame is padding when every bin
    sits at the features' floor, PADDING_BELOW_PEAK under the window's peak), plus
    MARGIN_POSITIONS, rounded up to POSITION_STEP; None for a window with more audio than
    CACHED_UP_TO (every position encoded). Each window's count is its own: a window's states do
    not depend on the windows it is encoded with."""
    frame_peaks = features.amax(dim=1)  # [windows, frames]
    floors = features.amax(dim=(1, 2)) - PADDING_BELOW_PEAK
    audio = frame_peaks > floors[:, None] + 1e-3
    frames = audio.shape[1]
    last = frames - torch.flip(audio, dims=[1]).to(torch.int8).argmax(dim=1)  # one past the last
    last = torch.where(audio.any(dim=1), last, torch.zeros_like(last))
    positions = (last + 1) // 2 + MARGIN_POSITIONS
    positions = POSITION_STEP * ((positions + POSITION_STEP - 1) // POSITION_STEP)
    limit = min(CACHED_UP_TO, max_positions - 2 * POSITION_STEP)
    return [p if p <= limit else None for p in positions.tolist()]
