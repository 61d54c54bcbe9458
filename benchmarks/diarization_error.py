"""Diarization error rate, as NIST's md-eval scores it: missed speech, false alarm and speaker
confusion over the scored reference speech, a collar around every reference turn's ends left
unscored, overlapped reference speech not scored, reference and found speakers paired one to
one to agree the most (the Hungarian assignment). On a 10 ms grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

STEP = 0.01  # seconds per grid cell


@dataclass(frozen=True)
class Score:
    der: float
    missed: float  # each as a share of the scored reference speech
    false_alarm: float
    confusion: float
    speech: float  # seconds of scored reference speech


def read_rttm(path: str) -> list[tuple[float, float, str]]:
    """(start, end, speaker) of each SPEAKER line."""
    turns = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "SPEAKER":
                start, duration = float(parts[3]), float(parts[4])
                turns.append((start, start + duration, parts[7]))
    return turns


def write_rttm(turns, file_id: str) -> str:
    return "".join(
        f"SPEAKER {file_id} 1 {a:.3f} {b - a:.3f} <NA> <NA> {s} <NA> <NA>\n" for a, b, s in turns
    )


def _grid(turns, speakers: list[str], cells: int) -> np.ndarray:
    """[cells, speakers] bool: who speaks in each cell."""
    grid = np.zeros((cells, len(speakers)), bool)
    for a, b, s in turns:
        grid[int(round(a / STEP)) : int(round(b / STEP)), speakers.index(s)] = True
    return grid


def score(reference, found, collar: float = 0.25) -> Score:
    """reference, found: [(start, end, speaker)] in seconds."""
    ref_names = sorted({s for _, _, s in reference})
    hyp_names = sorted({s for _, _, s in found})
    end = max([b for _, b, _ in list(reference) + list(found)], default=0.0)
    cells = int(round(end / STEP)) + 1
    ref, hyp = _grid(reference, ref_names, cells), _grid(found, hyp_names, cells)
    scored = ref.sum(axis=1) <= 1  # overlapped reference speech is not scored
    edge = int(round(collar / STEP))
    for a, b, _ in reference:
        for t in (a, b):
            c = int(round(t / STEP))
            scored[max(0, c - edge) : c + edge] = False
    ref, hyp = ref[scored], hyp[scored]
    ref_speech, hyp_speech = ref.any(axis=1), hyp.any(axis=1)
    total = int(ref_speech.sum())
    missed = int((ref_speech & ~hyp_speech).sum())
    false_alarm = int((~ref_speech & hyp_speech).sum())
    # hypothesis cells with several found speakers count once, on the one paired best
    overlap = ref.T.astype(np.int64) @ hyp.astype(np.int64)  # [ref speakers, found speakers]
    matched = 0
    if overlap.size:
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(-overlap)
        pairs = np.zeros_like(overlap, bool)
        pairs[rows, cols] = True
        matched = int((ref[:, :, None] & hyp[:, None, :] & pairs[None]).any(axis=(1, 2)).sum())
    both = int((ref_speech & hyp_speech).sum())
    confusion = both - matched
    share = 1.0 / total if total else 0.0
    return Score(
        (missed + false_alarm + confusion) * share, missed * share, false_alarm * share,
        confusion * share, total * STEP,
    )
