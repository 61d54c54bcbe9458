"""Whose words: each span of time (a word, or a segment without words) goes to the speaker whose
turns overlap it most, or, in a pause, to the nearest turn's speaker (as WhisperX assigns them)."""

from __future__ import annotations

import numpy as np

CHUNK = 4096  # spans scored at once: [chunk, turns] overlaps


def speakers_of(spans: np.ndarray, turns) -> list[str | None]:
    """spans [n, 2] seconds, turns [SpeakerTurn] -> [n] the speaker of each span (None: no turns)."""
    if not len(turns):
        return [None] * len(spans)
    names = list(dict.fromkeys(t.speaker for t in turns))
    starts = np.array([t.start for t in turns])
    ends = np.array([t.end for t in turns])
    who = np.array([names.index(t.speaker) for t in turns])
    owners = np.zeros((len(turns), len(names)))
    owners[np.arange(len(turns)), who] = 1.0
    out: list[str | None] = []
    for lo in range(0, len(spans), CHUNK):
        part = np.asarray(spans[lo : lo + CHUNK], dtype=np.float64).reshape(-1, 2)
        overlap = np.clip(np.minimum(part[:, 1:], ends) - np.maximum(part[:, :1], starts), 0.0, None)
        by_speaker = overlap @ owners  # [spans, speakers]
        middle = part.mean(axis=1, keepdims=True)
        gap = np.maximum(starts - middle, 0.0) + np.maximum(middle - ends, 0.0)  # [spans, turns]
        nearest = who[gap.argmin(axis=1)]
        best = np.where(by_speaker.max(axis=1) > 0, by_speaker.argmax(axis=1), nearest)
        out += [names[i] for i in best]
    return out
