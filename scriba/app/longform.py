"""The long-form policy, pure: which windows to decode, how a window's tokens become segments,
when a window is retried, skipped or continued. No engine and no audio decoding here; the
drivers in transcribe.py apply it (batched: all windows at once; sequential: one after another).

Times: the audio that is decoded is a file's speech chunks laid end to end (the "stream"; the
whole file when VAD is off). `SpeechMap` maps stream times back to the file's timeline.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from scriba.app.segments import Segment, WindowResult, Word
from scriba.app.words import APPEND, PREPEND
from scriba.media.load import SAMPLE_RATE
from scriba.whisper.constants import TIME_PRECISION, WINDOW_SAMPLES

MIN_WINDOW_SAMPLES = SAMPLE_RATE // 10  # windows shorter than 0.1 s hold no word
SILENCE_PEAK = 1e-4  # windows quieter than this (-80 dBFS) are not decoded at all
JOIN_MARGIN = 1.0  # seconds: see SpeechMap.span_to_original
REGION_GAP = 2.0  # seconds: a cut-out pause this long ends a window (both modes)
# Batched windows are filled to 25 s, not 30: a window whose speech runs to its last second
# often ends on an unclosed segment, whose tail is then encoded and decoded again. On the dev
# long-form recordings: 8 tails at 30 s, 2 at 25 s (benchmarks/profile_longform.py).
FILL_SAMPLES = 25 * SAMPLE_RATE


@dataclass(frozen=True)
class Guards:
    """openai-whisper's thresholds: retry a window at the next temperature when its text is too
    repetitive or too unlikely; drop it as silence when no-speech is likely and its text unlikely."""

    compression_ratio: float | None = 2.4
    logprob: float | None = -1.0
    no_speech: float | None = 0.6
    hallucination_silence: float | None = None  # seconds: see drop_hallucinations
    max_conditioning_temperature: float = 0.5  # above it, the prompt is reset

    def needs_fallback(self, r: WindowResult) -> bool:
        too_repetitive = self.compression_ratio is not None and r.compression_ratio > self.compression_ratio
        too_unlikely = self.logprob is not None and r.avg_logprob < self.logprob
        return (too_repetitive or too_unlikely) and not self._silence(r, too_unlikely)

    def is_no_speech(self, r: WindowResult) -> bool:
        return self._silence(r, self.logprob is None or r.avg_logprob <= self.logprob)

    def _silence(self, r: WindowResult, unlikely: bool) -> bool:
        return self.no_speech is not None and r.no_speech_prob > self.no_speech and unlikely

    def next_context(self, context: list[int], new: list[Segment], r: WindowResult, condition: bool):
        """The previous text for the next window: grows, or resets after a high temperature."""
        if condition and r.temperature <= self.max_conditioning_temperature:
            return context + [t for s in new for t in s.tokens]
        return []


class SpeechMap:
    """A file's speech chunks ([(start, end)] samples, in order) laid end to end, and back;
    `pauses` (file samples, in order, inside chunks) are more places where a window may be cut."""

    def __init__(self, chunks: list[tuple[int, int]], pauses: list[int] = ()):
        self.chunks = chunks
        self.pauses = list(pauses)
        lengths = [e - s for s, e in chunks]
        self.offsets = list(np.cumsum([0, *lengths[:-1]])) if chunks else []  # stream start of each
        self.length = int(sum(lengths))

    @classmethod
    def whole(cls, num_samples: int) -> SpeechMap:
        return cls([(0, num_samples)] if num_samples else [])

    def stream(self, wave: np.ndarray) -> np.ndarray:
        if len(self.chunks) == 1 and self.chunks[0] == (0, len(wave)):
            return wave
        return np.concatenate([wave[s:e] for s, e in self.chunks]) if self.chunks else wave[:0]

    def bounds(self) -> list[tuple[int, int]]:
        """The pieces between the places where a window may be cut (chunk ends and the pauses
        inside chunks), in stream samples."""
        pieces, i = [], 0
        for o, (s, e) in zip(self.offsets, self.chunks):
            cuts = [o]
            while i < len(self.pauses) and self.pauses[i] < e:
                if self.pauses[i] > s:
                    cuts.append(o + self.pauses[i] - s)
                i += 1
            pieces += zip(cuts, [*cuts[1:], o + e - s])
        return pieces

    def to_original(self, seconds: float, is_end: bool = False) -> float:
        """A stream time in the file's timeline; a chunk's end stays in that chunk."""
        if not self.chunks:
            return seconds
        at = seconds * SAMPLE_RATE
        i = max(0, bisect.bisect_right(self.offsets, at) - 1)
        if is_end and i > 0 and at <= self.offsets[i]:
            i -= 1
        start, end = self.chunks[i]
        return min(start + at - self.offsets[i], end) / SAMPLE_RATE

    def span_to_original(self, start: float, end: float, margin: float = JOIN_MARGIN) -> tuple[float, float]:
        """A segment's stream times in the file's timeline. Whisper starts a segment where the
        previous one ended, so a segment that crosses a cut-out pause and starts less than
        `margin` before it starts after it (and one that ends just after one ends before it)."""
        joins = [
            self.offsets[i + 1] / SAMPLE_RATE
            for i in range(len(self.chunks) - 1)
            if self._apart(i) and start < self.offsets[i + 1] / SAMPLE_RATE < end
        ]
        if joins and joins[0] - start < margin and end - joins[0] > margin:
            start = joins[0]
        if joins and end - joins[-1] < margin and joins[-1] - start > margin:
            end = joins[-1]
        return self.to_original(start), self.to_original(end, is_end=True)

    def region_ends(self, min_gap: float = REGION_GAP) -> list[int]:
        """Stream samples where a cut-out pause of at least `min_gap` seconds was, and the end."""
        gap = min_gap * SAMPLE_RATE
        cuts = [
            self.offsets[i + 1]
            for i in range(len(self.chunks) - 1)
            if self.chunks[i + 1][0] - self.chunks[i][1] >= gap
        ]
        return [*cuts, self.length]

    def _apart(self, i: int) -> bool:
        """Chunk i and the next are separated by audio that was cut out."""
        return self.chunks[i][1] < self.chunks[i + 1][0]


def pack_windows(
    bounds: list[tuple[int, int]],
    max_samples: int = WINDOW_SAMPLES,
    breaks: list[int] = (),
    fill: int | None = None,
) -> list[tuple[int, int]]:
    """Consecutive chunks packed into windows while they stay within `fill` samples (default:
    `max_samples`), cut only between chunks, and always at `breaks` (stream samples: long
    pauses, so that a window holds one stretch of speech). A chunk longer than `fill` is a
    window of its own; one longer than `max_samples`, which VAD does not make, is cut every window."""
    windows: list[tuple[int, int]] = []
    start = end = None
    fill = fill or max_samples
    for s, e in bounds:
        if start is not None and (e - start > fill or s in breaks):
            windows.append((start, end))
            start = None
        if start is None:
            start = s
            while e - start > max_samples:
                windows.append((start, start + max_samples))
                start += max_samples
        end = e
    if start is not None and end > start:
        windows.append((start, end))
    return windows


def quiet_cut_windows(wave: np.ndarray, min_seconds: float = 20.0, frame_seconds: float = 0.1):
    """Without VAD: windows of at most 30 s, each ending at the quietest 0.1 s frame of its
    last 10 s, so that a cut falls in a pause rather than inside a word."""
    frame, bounds, start = int(frame_seconds * SAMPLE_RATE), [], 0
    while len(wave) - start > WINDOW_SAMPLES:
        lo = start + int(min_seconds * SAMPLE_RATE)
        tail = wave[lo : start + WINDOW_SAMPLES]
        energy = (tail[: len(tail) // frame * frame].reshape(-1, frame) ** 2).mean(axis=1)
        end = lo + (int(np.argmin(energy)) + 1) * frame
        bounds.append((start, end))
        start = end
    bounds.append((start, len(wave)))
    return bounds


def is_silent(samples: np.ndarray) -> bool:
    """Too short to hold a word, or digital silence: a clear empty result, not a guess."""
    return samples.size < MIN_WINDOW_SAMPLES or float(np.abs(samples).max()) < SILENCE_PEAK


def tail_window(start: int, end: int, advance: float) -> tuple[int, int] | None:
    """The unfinished tail of window [start, end) (samples) after its last complete segment,
    `advance` seconds in: it is decoded again as a window of its own (None: nothing left)."""
    cut = start + int(round(advance * SAMPLE_RATE))
    return (cut, end) if end - cut >= MIN_WINDOW_SAMPLES else None


def split_segments(
    result: WindowResult, offset: float, window_seconds: float, timestamp_begin: int, decode, words_of=None
) -> tuple[list[Segment], float]:
    """openai-whisper's rule: text between consecutive timestamp pairs is a segment.

    Returns the segments (times from the audio start, given the window's `offset`) and how
    far to seek (seconds): to the last closed pair, or the whole window when the output ends
    on a single timestamp or has no pair (then one segment spans the window). With
    `words_of(lo, hi)` (the Words of result.tokens[lo:hi], window times), segments get words.
    """
    tokens = result.tokens
    is_ts = [t >= timestamp_begin for t in tokens]
    pair_ends = [i for i in range(1, len(tokens)) if is_ts[i] and is_ts[i - 1]]
    single_ending = len(tokens) >= 2 and not is_ts[-2] and is_ts[-1]

    def make(lo: int, hi: int, start: float, end: float) -> Segment:
        piece = tokens[lo:hi]
        text = decode([t for t in piece if t < timestamp_begin])
        seg = Segment(
            offset + start,
            offset + end,
            text,
            piece,
            result.avg_logprob,
            result.no_speech_prob,
            result.temperature,
            result.compression_ratio,
        )
        if words_of is not None:
            seg.words = words_of(lo, hi)
            for w in seg.words:
                w.start, w.end = offset + w.start, offset + w.end
        return seg

    def seconds(token: int) -> float:
        return (token - timestamp_begin) * TIME_PRECISION

    segments: list[Segment] = []
    if pair_ends:
        cuts = pair_ends + ([len(tokens)] if single_ending else [])
        last = 0
        for cut in cuts:
            piece = tokens[last:cut]
            if len(piece) >= 2 and piece[0] >= timestamp_begin:
                segments.append(make(last, cut, seconds(piece[0]), seconds(piece[-1])))
            last = cut
        seek = window_seconds if single_ending else seconds(tokens[pair_ends[-1] - 1])
    else:
        stamps = [t for t in tokens if t >= timestamp_begin]
        end = seconds(stamps[-1]) if stamps and stamps[-1] != timestamp_begin else window_seconds
        segments.append(make(0, len(tokens), 0.0, end))
        seek = window_seconds
    segments = [s for s in segments if s.text.strip()]
    for s in segments:  # a timestamp past the audio's end is clipped to it
        s.end = min(max(s.end, s.start), offset + window_seconds)
        s.start = min(s.start, s.end)
    return segments, min(max(seek, TIME_PRECISION), window_seconds)


def sequential_window(seek: int, region_ends: list[int]) -> tuple[int, int]:
    """openai-whisper's next window: 30 s from `seek`, not past the end of its speech region."""
    end = region_ends[bisect.bisect_right(region_ends, seek)] if seek < region_ends[-1] else seek
    return seek, min(seek + WINDOW_SAMPLES, end)


def coverage(chunks: list[tuple[float, float]], segments: list[Segment]) -> tuple[float, float, list[str]]:
    """(seconds of speech, the fraction of it inside segments, a warning per chunk of speech
    of at least a second that no segment touches). `chunks` in seconds."""
    total = sum(e - s for s, e in chunks)
    spans = [(seg.start, seg.end) for seg in segments]
    covered, warnings = 0.0, []
    for s, e in chunks:
        inside = sum(max(0.0, min(e, b) - max(s, a)) for a, b in spans)
        covered += min(inside, e - s)
        if e - s >= 1.0 and not any(a < e and b > s for a, b in spans):
            warnings.append(f"speech at {s:.1f}-{e:.1f} s produced no text")
    return total, (covered / total if total else 1.0), warnings


def word_anomaly(word: Word) -> float:
    """openai-whisper's score of a word that looks invented: improbable, or too short or long."""
    duration = word.end - word.start
    score = 1.0 if word.probability < 0.15 else 0.0
    if duration < 0.133:
        score += (0.133 - duration) * 15
    if duration > 2.0:
        score += duration - 2.0
    return score


def is_anomaly(segment: Segment | None) -> bool:
    if segment is None or not segment.words:
        return False
    words = [w for w in segment.words if w.word.strip() not in PREPEND + APPEND][:8]
    score = sum(word_anomaly(w) for w in words)
    return score >= 3 or score + 0.01 >= len(words)


def drop_hallucinations(
    segments: list[Segment], window: tuple[float, float], threshold: float
) -> tuple[list[Segment], float | None]:
    """openai-whisper's hallucination_silence_threshold over one window's segments (with words,
    times in seconds, `window` its (start, end)): an anomalous segment with more than
    `threshold` seconds of silence (or another anomaly, or the window's edge) on both sides is
    dropped with everything after it. Returns the segments kept and, when some were dropped,
    where in the window (seconds) decoding should resume; else None."""
    start, end = window
    first = next((s for s in segments if s.words), None)
    if is_anomaly(first) and first.start - start > threshold:  # leading silence, then an invention
        return [], first.start - start
    last_end = start
    for i, seg in enumerate(segments):
        if not seg.words:
            continue
        if is_anomaly(seg):
            after = next((s for s in segments[i + 1 :] if s.words), None)
            next_start = after.words[0].start if after is not None else end
            before_quiet = seg.start - last_end > threshold or seg.start - start < 2.0
            after_quiet = next_start - seg.end > threshold or is_anomaly(after) or end - seg.end < 2.0
            if before_quiet and after_quiet:
                return segments[:i], max(1.0, seg.start - start)
        last_end = seg.end
    return segments, None
