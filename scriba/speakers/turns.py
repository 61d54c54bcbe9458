"""From voices of pieces to turns: the voice of each 10 ms frame, its runs, the runs' own voices
(the mean of their pieces) and the turns, named."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_RUN_FRAMES = 30  # a run shorter than 0.3 s inside a span joins its neighbour


@dataclass
class Run:
    start: int  # frames
    end: int
    voice: int  # -1: no piece reached it


def frame_labels(piece_frames: np.ndarray, sims: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """piece_frames [n, 2], sims [n, k] (each piece's similarity to each voice), spans [m, 2]
    -> [frames] the voice of each frame (-1 outside speech): the highest summed similarity over
    the pieces covering it; a frame no piece covers takes its span's nearest covered frame's."""
    end = int(spans[:, 1].max())
    score = np.zeros((end + 1, sims.shape[1]))
    np.add.at(score, piece_frames[:, 0], sims)
    np.add.at(score, piece_frames[:, 1], -sims)
    score = np.cumsum(score, axis=0)[:end]
    covered = np.zeros(end + 1, np.int64)
    np.add.at(covered, piece_frames[:, 0], 1)
    np.add.at(covered, piece_frames[:, 1], -1)
    covered = np.cumsum(covered)[:end] > 0
    labels = np.full(end, -1, np.int64)
    for a, b in spans:
        inside = np.flatnonzero(covered[a:b]) + a
        if inside.size:
            nearest = inside[np.clip(np.searchsorted(inside, np.arange(a, b)), 0, inside.size - 1)]
            labels[a:b] = score[nearest].argmax(axis=1)
    return labels


def runs_of(labels: np.ndarray, spans: np.ndarray) -> list[Run]:
    """The runs of one voice inside each span; a run shorter than MIN_RUN_FRAMES takes the voice
    of the run it touches (the one before, else after); a span no piece reached, its nearest."""
    runs = []
    for a, b in spans:
        inside = labels[a:b]
        cuts = np.flatnonzero(np.diff(inside)) + 1
        runs += [Run(a + lo, a + hi, int(inside[lo])) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, b - a])]
    labelled = [r for r in runs if r.voice >= 0]
    for run in runs:
        if run.voice < 0 and labelled:
            run.voice = min(labelled, key=lambda r: abs(r.start - run.start)).voice
    for i, run in enumerate(runs):
        if run.end - run.start < MIN_RUN_FRAMES:
            if i > 0 and runs[i - 1].end == run.start:
                run.voice = runs[i - 1].voice
            elif i + 1 < len(runs) and runs[i + 1].start == run.end:
                run.voice = runs[i + 1].voice
    return runs


def turn_embeddings(runs: list[Run], piece_frames: np.ndarray, embeddings: np.ndarray):
    """([runs, d] the unit mean of the pieces centred inside each run, [runs] bool: has one)."""
    centres = piece_frames.mean(axis=1)
    out = np.zeros((len(runs), embeddings.shape[1]), np.float32)
    has = np.zeros(len(runs), bool)
    for i, run in enumerate(runs):
        inside = (centres >= run.start) & (centres < run.end)
        if inside.any():
            mean = embeddings[inside].mean(axis=0)
            out[i], has[i] = mean / max(float(np.linalg.norm(mean)), 1e-8), True
    return out, has


def named_turns(runs: list[Run], names: list[str | None], seconds_per_frame: float):
    """(start, end, speaker) of each turn: touching runs of one voice joined; a voice without a
    known name is SPEAKER_00, SPEAKER_01, ... in order of first appearance."""
    joined: list[Run] = []
    for run in runs:
        if joined and joined[-1].voice == run.voice and joined[-1].end == run.start:
            joined[-1].end = run.end
        else:
            joined.append(Run(run.start, run.end, run.voice))
    unnamed = [v for v in dict.fromkeys(r.voice for r in joined) if not names[v]]
    label = {v: names[v] or f"SPEAKER_{unnamed.index(v):02d}" for v in dict.fromkeys(r.voice for r in joined)}
    return [(r.start * seconds_per_frame, r.end * seconds_per_frame, label[r.voice]) for r in joined]
