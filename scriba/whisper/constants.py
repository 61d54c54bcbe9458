"""Whisper's audio constants: its sample rate, log-mel hop, window and timestamp step."""

from scriba.media.rate import SAMPLE_RATE

__all__ = ["HOP_LENGTH", "SAMPLE_RATE", "TIME_PRECISION", "WINDOW_SAMPLES", "WINDOW_SECONDS"]

WINDOW_SECONDS = 30  # one encoder window
WINDOW_SAMPLES = SAMPLE_RATE * WINDOW_SECONDS
HOP_LENGTH = 160  # audio samples per log-mel frame; two frames per encoder position
TIME_PRECISION = 2 * HOP_LENGTH / SAMPLE_RATE  # 0.02 s: one timestamp token step, one encoder position
