"""Transcription results, and how one window's tokens become timestamped segments."""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field

TIME_PRECISION = 0.02  # seconds per timestamp token step (2 feature frames of 10 ms)


@dataclass
class Segment:
    start: float  # seconds from the start of the audio
    end: float
    text: str
    tokens: list[int]  # text and timestamp tokens of the segment
    avg_logprob: float  # of the window it came from
    no_speech_prob: float
    temperature: float = 0.0
    compression_ratio: float = 0.0


@dataclass
class Transcription:
    text: str
    language: str | None
    language_probability: float | None
    duration: float  # seconds of audio
    segments: list[Segment] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class WindowResult:
    """One decoded window: its free tokens (after the control tokens, without <|endoftext|>)."""

    tokens: list[int]
    text: str
    avg_logprob: float
    no_speech_prob: float
    compression_ratio: float
    temperature: float
    language: str | None
    language_probability: float | None


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def split_segments(
    result: WindowResult, offset: float, window_seconds: float, timestamp_begin: int, decode
) -> tuple[list[Segment], float]:
    """openai-whisper's rule: text between consecutive timestamp pairs is a segment.

    Returns the segments (times from the audio start, given the window's `offset`) and how
    far to seek (seconds): to the last closed pair, or the whole window when the output ends
    on a single timestamp or has no pair (then one segment spans the window).
    """
    tokens = result.tokens
    is_ts = [t >= timestamp_begin for t in tokens]
    pair_ends = [i for i in range(1, len(tokens)) if is_ts[i] and is_ts[i - 1]]
    single_ending = len(tokens) >= 2 and not is_ts[-2] and is_ts[-1]

    def make(piece: list[int], start: float, end: float) -> Segment:
        text = decode([t for t in piece if t < timestamp_begin])
        return Segment(
            offset + start,
            offset + end,
            text,
            piece,
            result.avg_logprob,
            result.no_speech_prob,
            result.temperature,
            result.compression_ratio,
        )

    def seconds(token: int) -> float:
        return (token - timestamp_begin) * TIME_PRECISION

    segments: list[Segment] = []
    if pair_ends:
        cuts = pair_ends + ([len(tokens)] if single_ending else [])
        last = 0
        for cut in cuts:
            piece = tokens[last:cut]
            if len(piece) >= 2 and piece[0] >= timestamp_begin:
                segments.append(make(piece, seconds(piece[0]), seconds(piece[-1])))
            last = cut
        seek = window_seconds if single_ending else seconds(tokens[pair_ends[-1] - 1])
    else:
        stamps = [t for t in tokens if t >= timestamp_begin]
        end = seconds(stamps[-1]) if stamps and stamps[-1] != timestamp_begin else window_seconds
        segments.append(make(tokens, 0.0, end))
        seek = window_seconds
    segments = [s for s in segments if s.text.strip()]
    for s in segments:  # a timestamp past the audio's end is clipped to it
        s.end = min(max(s.end, s.start), offset + window_seconds)
        s.start = min(s.start, s.end)
    return segments, min(max(seek, TIME_PRECISION), window_seconds)
