"""Turns in a stream of audio as it arrives: where speech starts and where it has stopped, with
OpenAI's server VAD settings, from Silero VAD's probability for each 32 ms frame.

Speech starts at the first frame whose probability reaches `threshold`; it stops once frames
stay below `threshold - 0.15` (Silero's own hysteresis) for `silence_duration_ms`. The start is
reported `prefix_padding_ms` early (the audio a turn takes in before its first word), the stop
where the silence was long enough (so it includes that silence, as OpenAI reports it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scriba.media.load import SAMPLE_RATE

FRAME = 512  # Silero's frame at 16 kHz: 32 ms


@dataclass(frozen=True)
class TurnDetection:
    """OpenAI's `server_vad` turn detection (its names and defaults)."""

    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError(f"turn_detection.threshold must be in (0, 1), got {self.threshold!r}")
        for name in ("prefix_padding_ms", "silence_duration_ms"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(
                    f"turn_detection.{name} must be milliseconds >= 0, got {getattr(self, name)!r}"
                )


@dataclass(frozen=True)
class SpeechStarted:
    sample: int  # where the turn's audio starts: the speech's first frame, less the prefix padding


@dataclass(frozen=True)
class SpeechStopped:
    sample: int  # where the turn's audio ends: after silence_duration_ms of silence


class TurnDetector:
    """Feed it the stream (16 kHz float32) in pieces of any size; it returns the starts and
    stops found in each, in stream samples."""

    def __init__(self, settings: TurnDetection, model=None):
        from scriba.transcription.vad import frame_model

        self.settings = settings
        self.model = model if model is not None else frame_model()
        self.rest = np.zeros(0, np.float32)  # samples short of a whole frame
        self.seen = 0  # stream samples in whole frames so far
        self.speaking = False
        self.quiet = 0  # samples of silence since the last speech frame

    def feed(self, samples: np.ndarray) -> list[SpeechStarted | SpeechStopped]:
        import torch

        self.rest = np.concatenate([self.rest, np.asarray(samples, np.float32)])
        found: list[SpeechStarted | SpeechStopped] = []
        s = self.settings
        while len(self.rest) >= FRAME:
            frame, self.rest = self.rest[:FRAME], self.rest[FRAME:]
            probability = float(self.model(torch.from_numpy(frame.copy()), SAMPLE_RATE))
            if not self.speaking and probability >= s.threshold:
                self.speaking, self.quiet = True, 0
                found.append(SpeechStarted(max(0, self.seen - s.prefix_padding_ms * SAMPLE_RATE // 1000)))
            elif self.speaking:
                self.quiet = 0 if probability >= s.threshold - 0.15 else self.quiet + FRAME
                if self.quiet >= s.silence_duration_ms * SAMPLE_RATE // 1000:
                    self.speaking = False
                    found.append(SpeechStopped(self.seen + FRAME))
            self.seen += FRAME
        return found

    def reset(self) -> None:
        """The buffer was cleared: no turn is under way (the model keeps its context)."""
        self.speaking, self.quiet = False, 0
