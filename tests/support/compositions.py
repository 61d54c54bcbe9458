"""Test audio built from real speech and non-speech: silence, white and brown noise, tones."""

from __future__ import annotations

import numpy as np

RATE = 16000


def white_noise(seconds: float, rng, level: float = 0.02) -> np.ndarray:
    return (level * rng.standard_normal(int(seconds * RATE))).astype(np.float32)


def brown_noise(seconds: float, rng, level: float = 0.05) -> np.ndarray:
    walk = np.cumsum(rng.standard_normal(int(seconds * RATE)))
    walk -= np.linspace(walk[0], walk[-1], walk.size)  # no drift: it stays centred
    return (level * walk / (np.abs(walk).max() + 1e-9)).astype(np.float32)


def tone(seconds: float, rng, level: float = 0.1) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (level * np.sin(2 * np.pi * rng.uniform(200, 1000) * t)).astype(np.float32)


def silence(seconds: float, rng=None) -> np.ndarray:
    return np.zeros(int(seconds * RATE), np.float32)


def compose(parts: list[np.ndarray | tuple[str, float]], seed: int = 0):
    """Concatenate speech arrays and ("white" | "brown" | "tone" | "silence", seconds) gaps.
    Returns (audio, [(start, end)] seconds of each speech part)."""
    rng = np.random.default_rng(seed)
    makers = {"white": white_noise, "brown": brown_noise, "tone": tone, "silence": silence}
    pieces, spans, at = [], [], 0
    for part in parts:
        if isinstance(part, tuple):
            kind, seconds = part
            piece = makers[kind](seconds, rng)
        else:
            piece = np.asarray(part, np.float32)
            spans.append((at / RATE, (at + piece.size) / RATE))
        pieces.append(piece)
        at += piece.size
    return np.concatenate(pieces), spans
