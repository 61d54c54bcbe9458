"""Silero VAD's settings, as the options declare them (light: no model, no numpy)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from scriba.whisper.constants import WINDOW_SECONDS


@dataclass
class VadOptions:
    """Silero's settings (faster-whisper's names). Speech chunks are at most one window long,
    split at their longest inner pause, and padded by `speech_pad_ms` on each side."""

    # A 32 ms frame is speech above this probability. Silero's usual 0.5 dropped quiet speech
    # (a speaker with a cold): dev-set long-form WER 0.111 at 0.5, 0.098 at 0.35, 0.089 at 0.25,
    # with no text over noise at any of them (`python -m benchmarks longform`).
    threshold: float = 0.25
    neg_threshold: float | None = None  # and stays speech until below this (default threshold - 0.15)
    min_speech_duration_ms: int = 250  # shorter chunks are dropped
    max_speech_duration_s: float = WINDOW_SECONDS
    min_silence_duration_ms: int = 500  # a pause this long ends a chunk
    speech_pad_ms: int = 400  # pauses up to twice this stay whole; longer ones shrink to it

    @classmethod
    def from_user(cls, options: VadOptions | dict | None) -> VadOptions:
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if not isinstance(options, dict):
            raise ValueError(f"vad_parameters must be a dict or VadOptions, got {type(options).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise ValueError(f"unknown vad_parameters {unknown} (known: {sorted(names)})")
        made = cls(**options)
        if not 0 < made.threshold < 1 or made.max_speech_duration_s <= 0:
            raise ValueError("vad_parameters: threshold must be in (0, 1), max_speech_duration_s positive")
        made.max_speech_duration_s = min(made.max_speech_duration_s, WINDOW_SECONDS)
        return made
