"""Times on the speech: segment and word boundaries moved off the pauses and onto the speech.

Whisper's timestamp tokens and the cross-attention word alignment place a boundary within a few
tenths of a second of the speech, often inside the pause before or after it: a subtitle shows
before anyone speaks, a speaker's turn runs on into the silence. The speech probabilities Silero
gives every 32 ms (vad.py; transcription has them already where VAD ran) say where the speech
is. The idea is stable-ts's silence suppression; the rules here are Scriba's own:

1. A start that falls in a pause moves on to where the speech begins, and an end that falls in
   a pause moves back to where it ended, unless that would leave the item shorter than its
   minimum (a word or segment that lies wholly in a pause keeps its times).
2. A start inside speech moves back to the onset of that speech, and an end inside speech on to
   its offset, by at most REACH seconds and never across the item before or after it or out of
   its window: the first word after a pause starts with its sound, not a little after it.

No boundary moves by less than Silero's 32 ms frame, the precision the speech is known to.

The speech is read tight (EDGES: a pause of 0.2 s or more splits it, 50 ms of padding): the
diarizer's looser reading (0.2 s of padding) let word ends run on into the pauses after them.
The settings were chosen on what people read, the transcript's segments and words against
reference turns and forced alignments (docs/decisions.md).
"""

from __future__ import annotations

import numpy as np

from scriba.media.load import SAMPLE_RATE
from scriba.transcription.vad import chunks_of
from scriba.transcription.vad_options import VadOptions

EDGES = VadOptions(min_silence_duration_ms=200, speech_pad_ms=50)
REACH = 1.0  # seconds a boundary inside speech may move to the speech's edge
MIN_WORD = 0.1  # seconds a word keeps at least when moved off a pause
MIN_SEGMENT = 0.2
STEP = 0.032  # Silero's frame: a move shorter than the speech is read to is not made


def speech_edges(probs: np.ndarray, num_samples: int) -> np.ndarray:
    """[m, 2] float64 seconds: the (start, end) of each stretch of speech, in order."""
    spans = chunks_of(probs, num_samples, EDGES)
    return np.array(spans, dtype=np.float64).reshape(-1, 2) / SAMPLE_RATE


def onto_speech(times: np.ndarray, shortest: np.ndarray, edges: np.ndarray, bounds=(0.0, np.inf)):
    """times [n, 2] seconds (items in order), shortest [n] seconds, edges [m, 2] (speech_edges)
    -> [n, 2] the times moved onto the speech (the module's rules), inside `bounds`."""
    times = np.asarray(times, dtype=np.float64).reshape(-1, 2).copy()
    if not len(times) or not len(edges):
        return times
    on, off, m = edges[:, 0], edges[:, 1], len(edges)
    a, b = times[:, 0], times[:, 1]
    # 1. off the pauses
    i = np.searchsorted(on, a, side="right") - 1
    in_pause = (i < 0) | (a >= off[np.maximum(i, 0)])
    onset = on[np.minimum(i + 1, m - 1)]
    moved = in_pause & (i + 1 < m) & (onset < b - shortest) & (onset - a >= STEP)
    a = np.where(moved, onset, a)
    k = np.searchsorted(on, b, side="left") - 1
    offset = off[np.maximum(k, 0)]
    moved = (k >= 0) & (b - offset >= STEP) & (offset > a + shortest)
    b = np.where(moved, offset, b)
    # 2. onto the speech's edges: ends first (up to the next item's start), then starts (back to
    # the previous item's end as it now is)
    k = np.searchsorted(on, b, side="left") - 1
    inside = (k >= 0) & (b <= off[np.maximum(k, 0)])
    later = np.r_[a[1:], bounds[1]]
    reach = np.minimum.reduce([off[np.maximum(k, 0)], later, b + REACH])
    b = np.where(inside & (reach - b >= STEP), reach, b)
    i = np.searchsorted(on, a, side="right") - 1
    inside = (i >= 0) & (a < off[np.maximum(i, 0)])
    earlier = np.r_[bounds[0], b[:-1]]
    reach = np.maximum.reduce([on[np.maximum(i, 0)], earlier, a - REACH])
    a = np.where(inside & (a - reach >= STEP), reach, a)
    return np.stack([a, b], axis=1)


def place_on_speech(segments: list, edges: np.ndarray, bounds=(0.0, np.inf)) -> None:
    """A window's segments (in order, file times) moved onto the speech, in place: the words of
    those that have them (the segment then runs from its first word to its last), the others
    whole. `bounds`: the window's span (seconds): nothing moves out of it."""
    items = [x for s in segments for x in (s.words or [s])]
    if not items or not len(edges):
        return
    is_word = np.array([x is not s for s in segments for x in (s.words or [s])])
    times = np.array([(x.start, x.end) for x in items], dtype=np.float64)
    placed = onto_speech(times, np.where(is_word, MIN_WORD, MIN_SEGMENT), edges, bounds)
    for x, (start, end) in zip(items, placed.tolist()):
        x.start, x.end = start, end
    for s in segments:
        if s.words:
            s.start, s.end = s.words[0].start, s.words[-1].end
