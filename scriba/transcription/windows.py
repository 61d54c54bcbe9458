"""Which windows to decode: a file's speech laid end to end (`SpeechMap`, and back to the
file's timeline), packed into windows cut in pauses, silent windows skipped, a window's
unfinished tail, openai-whisper's next sequential window. Pure: no engine, no audio decoding.

Times: the audio that is decoded is a file's speech chunks laid end to end (the "stream"; the
whole file when VAD is off). `SpeechMap` maps stream times back to the file's timeline.
"""

from __future__ import annotations

import bisect

import numpy as np

from scriba.media.load import SAMPLE_RATE
from scriba.whisper.constants import WINDOW_SAMPLES

MIN_WINDOW_SAMPLES = SAMPLE_RATE // 10  # windows shorter than 0.1 s hold no word
SILENCE_PEAK = 1e-4  # windows quieter than this (-80 dBFS) are not decoded at all
JOIN_MARGIN = 1.0  # seconds: see SpeechMap.span_to_original
REGION_GAP = 2.0  # seconds: a cut-out pause this long ends a window (both modes)
# Batched windows are filled to 25 s, not 30: a window whose speech runs to its last second
# often ends on an unclosed segment, whose tail is then encoded and decoded again. On the dev
# long-form recordings: 8 tails at 30 s, 2 at 25 s.
FILL_SAMPLES = 25 * SAMPLE_RATE


class SpeechMap:
    """A file's speech chunks ([(start, end)] samples, in order) laid end to end, and back;
    `pauses` (file samples, in order, inside chunks) are more places where a window may be cut."""

    def __init__(self, chunks: list[tuple[int, int]], pauses: list[int] = (), region_gap: float = REGION_GAP):
        """`region_gap`: seconds of cut-out audio between two chunks that end a region (no window
        crosses it)."""
        self.chunks = chunks
        self.pauses = list(pauses)
        self.region_gap = region_gap
        lengths = [e - s for s, e in chunks]
        self.offsets = list(np.cumsum([0, *lengths[:-1]])) if chunks else []  # stream start of each
        self.length = int(sum(lengths))

    @classmethod
    def whole(cls, num_samples: int) -> SpeechMap:
        return cls([(0, num_samples)] if num_samples else [])

    @classmethod
    def clips(cls, seconds: tuple[float, ...], num_samples: int) -> SpeechMap:
        """faster-whisper's clip_timestamps: (start, end, ...) seconds, an odd count's last clip
        running to the end; each clip a region of its own, so no window crosses one."""
        ends = [*seconds[1::2], num_samples / SAMPLE_RATE][: (len(seconds) + 1) // 2]
        spans = [
            (round(a * SAMPLE_RATE), min(round(b * SAMPLE_RATE), num_samples))
            for a, b in zip(seconds[::2], ends)
        ]
        return cls([(a, b) for a, b in spans if b > a], region_gap=0.0)

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
        return float(min(start + at - self.offsets[i], end) / SAMPLE_RATE)  # a plain float, not numpy's

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

    def region_ends(self) -> list[int]:
        """Stream samples where a cut-out pause of at least `region_gap` seconds was, and the end."""
        gap = self.region_gap * SAMPLE_RATE
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


def sequential_window(seek: int, region_ends: list[int]) -> tuple[int, int]:
    """openai-whisper's next window: 30 s from `seek`, not past the end of its speech region."""
    end = region_ends[bisect.bisect_right(region_ends, seek)] if seek < region_ends[-1] else seek
    return seek, min(seek + WINDOW_SAMPLES, end)
