"""Speech as the voice encoder's pieces: 1.6 s of mel frames over a span of speech.

A span shorter than a piece is one piece, zero-padded at its end (silence, as the encoder's own
package pads its last piece); a span too short to say whose voice it is gets no piece and takes
its neighbours' speaker. Each piece's frames are where its embedding speaks for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scriba.speakers.voice_encoder import FRAME_SAMPLES, MEL_CHANNELS, PIECE_FRAMES, mel_frames

MIN_PIECE_FRAMES = 40  # 0.4 s: shorter speech says too little about its voice


@dataclass
class Speech:
    """The speech spans' mel frames: mels [spans] of [frames, 40] float32; spans [m, 2] int,
    each span's first and end frame (10 ms frames from the start of the audio)."""

    mels: list[np.ndarray]
    spans: np.ndarray
    waves: list[np.ndarray]  # each span's samples (scaled), for an encoder of its own (encoders.py)


def speech_mels(wave: np.ndarray, spans: list[tuple[int, int]], gain: float) -> Speech:
    """The mel frames of `wave` (16 kHz) inside the speech `spans` (samples), scaled by `gain`."""
    waves = [wave[start:end] * gain for start, end in spans]
    mels = [mel_frames(w) for w in waves]
    firsts = [start // FRAME_SAMPLES for start, _ in spans]
    frames = np.array([(f, f + len(m)) for f, m in zip(firsts, mels)], np.int64).reshape(-1, 2)
    return Speech(mels, frames, waves)


def wave_pieces(speech: Speech, starts: list[list[int]]) -> np.ndarray:
    """[n, 25600] float32: the samples of the pieces `pieces` cuts (zero-padded alike)."""
    size, out = PIECE_FRAMES * FRAME_SAMPLES, []
    for wave, at in zip(speech.waves, starts):
        for a in at:
            piece = wave[a * FRAME_SAMPLES : a * FRAME_SAMPLES + size]
            out.append(np.pad(piece, (0, size - len(piece))))
    return np.stack(out).astype(np.float32) if out else np.zeros((0, size), np.float32)


def pieces(speech: Speech, starts: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(mels [n, 160, 40], frames [n, 2]: each piece's first and end frame in the audio) of the
    pieces starting at `starts[i]` frames into span i."""
    mels, frames = [], []
    for (first, _), mel, at in zip(speech.spans, speech.mels, starts):
        for a in at:
            piece = mel[a : a + PIECE_FRAMES]
            if len(piece) < PIECE_FRAMES:
                silence = np.zeros((PIECE_FRAMES - len(piece), MEL_CHANNELS), np.float32)
                piece = np.concatenate([piece, silence])
            mels.append(piece)
            frames.append((first + a, first + min(a + PIECE_FRAMES, len(mel))))
    return (
        np.stack(mels) if mels else np.zeros((0, PIECE_FRAMES, MEL_CHANNELS), np.float32),
        np.array(frames, dtype=np.int64).reshape(-1, 2),
    )


def regular_starts(num_frames: int, hop: int) -> list[int]:
    """Piece starts `hop` frames apart covering `num_frames`, the last one flush with the end."""
    if num_frames < MIN_PIECE_FRAMES:
        return []
    if num_frames <= PIECE_FRAMES:
        return [0]
    starts = list(range(0, num_frames - PIECE_FRAMES + 1, hop))
    if starts[-1] != num_frames - PIECE_FRAMES:
        starts.append(num_frames - PIECE_FRAMES)
    return starts


def starts_across(speech: Speech, changes: list[int], offsets: tuple[int, ...], taken: list[list[int]]):
    """Per span, the piece starts that put each change (a frame in the audio) `offsets` frames
    into a piece, where a whole piece fits and no piece starts yet."""
    out: list[list[int]] = [[] for _ in speech.mels]
    for change in changes:
        i = int(np.searchsorted(speech.spans[:, 1], change, side="right"))
        if i >= len(speech.mels) or len(speech.mels[i]) <= PIECE_FRAMES:
            continue
        local, last = change - speech.spans[i, 0], len(speech.mels[i]) - PIECE_FRAMES
        for offset in offsets:
            start = min(max(local - offset, 0), last)
            if start not in taken[i] and start not in out[i]:
                out[i].append(start)
    return out
