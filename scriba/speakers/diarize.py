"""Who spoke when: the speech's pieces embedded, clustered into voices (clustering.py), each 10 ms
of speech given the voice its covering pieces are nearest to, and the turns this makes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scriba.speakers.clustering import centroids, dense, merge_voices, spectral
from scriba.speakers.encoders import unit
from scriba.speakers.pieces import pieces, regular_starts, speech_mels, starts_across, wave_pieces
from scriba.speakers.turns import Run, frame_labels, named_turns, runs_of, turn_embeddings
from scriba.speakers.voice_encoder import FRAME_SAMPLES, PIECE_FRAMES, SAMPLE_RATE, embed, level_gain

# A piece every 1.6 s, end to end, finds the voices; where the voice changes inside a span, a piece
# centred on the change places it (each 10 ms has the votes of the pieces that cover it): about
# half the encoder's work of pieces every 0.8 s, for the same error on the dev conversations.
HOP_FRAMES = 160
CHANGE_OFFSETS = (80,)
NAME_SIMILARITY = 0.6  # a voice takes a reference's name at this cosine similarity or more


@dataclass(frozen=True)
class SpeakerTurn:
    start: float  # seconds
    end: float
    speaker: str


@dataclass
class Diarization:
    """The turns in order; `speakers` in order of their first turn."""

    turns: list[SpeakerTurn] = field(default_factory=list)

    @property
    def speakers(self) -> list[str]:
        return list(dict.fromkeys(t.speaker for t in self.turns))


def check_counts(num_speakers=None, min_speakers=None, max_speakers=None) -> None:
    """A one-line error for counts that cannot be."""
    given = (("num_speakers", num_speakers), ("min_speakers", min_speakers), ("max_speakers", max_speakers))
    for name, value in given:
        whole = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        if value is not None and (not whole or value < 1):
            raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
    if min_speakers is not None and max_speakers is not None and min_speakers > max_speakers:
        raise ValueError(f"min_speakers ({min_speakers}) is more than max_speakers ({max_speakers})")


def diarize(
    wave: np.ndarray,
    speech: list[tuple[int, int]],
    num_speakers: int | None = None,
    min_speakers: int | None = None,
    max_speakers: int | None = None,
    known: dict[str, np.ndarray] | None = None,
    encoder=None,
) -> Diarization:
    """The speaker turns of a 16 kHz `wave` whose speech is `speech` ([(start, end)] samples).
    `known`: name -> a voice (voice_of) naming the voice nearest to it; `encoder`: another
    speaker embedding (encoders.py; None: the bundled voice encoder)."""
    check_counts(num_speakers, min_speakers, max_speakers)
    spans = [(int(s), int(e)) for s, e in speech if e > s]
    if not spans:
        return Diarization()
    gain = level_gain(np.concatenate([wave[s:e] for s, e in spans]))
    speech = speech_mels(wave, spans, gain)
    starts = [regular_starts(len(m), HOP_FRAMES) for m in speech.mels]
    mels, frames = pieces(speech, starts)
    if len(mels) == 0:  # speech too short to tell voices apart: one speaker
        return Diarization([SpeakerTurn(s / SAMPLE_RATE, e / SAMPLE_RATE, "SPEAKER_00") for s, e in spans])
    embeddings = _embedded(speech, starts, mels, encoder)
    labels = spectral(embeddings, num_speakers, min_speakers, max_speakers)
    voices = centroids(embeddings, labels)
    runs = runs_of(frame_labels(frames, embeddings @ voices.T, speech.spans), speech.spans)
    changes = [b.start for a, b in zip(runs, runs[1:]) if a.end == b.start and a.voice != b.voice]
    across = starts_across(speech, changes, CHANGE_OFFSETS, starts)
    more_mels, more_frames = pieces(speech, across)
    if len(more_mels):
        embeddings = np.concatenate([embeddings, _embedded(speech, across, more_mels, encoder)])
        frames = np.concatenate([frames, more_frames])
        runs = runs_of(frame_labels(frames, embeddings @ voices.T, speech.spans), speech.spans)
    turns, has = turn_embeddings(runs, frames, embeddings)
    if num_speakers is None and has.sum() > 1:
        _relabel(runs, has, merge_voices(turns[has], np.array([r.voice for r in runs])[has], min_speakers))
    voice = dense(np.array([r.voice for r in runs]))
    for run, v in zip(runs, voice):
        run.voice = int(v)
    named = _names(centroids(turns[has], voice[has]) if has.any() else voices, known)
    return Diarization([SpeakerTurn(*t) for t in named_turns(runs, named, FRAME_SAMPLES / SAMPLE_RATE)])


def voice_of(wave: np.ndarray, encoder=None) -> np.ndarray:
    """[d] the unit mean voice of a clip of one speaker (16 kHz), e.g. a known speaker's
    reference (`encoder`: as diarize's)."""
    speech = speech_mels(wave, [(0, len(wave))], level_gain(wave))
    starts = [regular_starts(len(speech.mels[0]), PIECE_FRAMES // 2)]
    mels, _ = pieces(speech, starts)
    if len(mels) == 0:
        raise ValueError("a reference clip must hold at least half a second of speech")
    mean = _embedded(speech, starts, mels, encoder).mean(axis=0)
    return mean / max(float(np.linalg.norm(mean)), 1e-8)


def _embedded(speech, starts, mels: np.ndarray, encoder) -> np.ndarray:
    """[n, d] unit embeddings of the pieces: the bundled encoder's of their mels, or `encoder`'s
    of their samples."""
    return embed(mels) if encoder is None else unit(encoder(wave_pieces(speech, starts)))


def _relabel(runs: list[Run], has: np.ndarray, merged: np.ndarray) -> None:
    """The runs with pieces take their merged voice; the others their nearest such run's."""
    with_pieces = np.flatnonzero(has)
    starts = np.array([r.start for r in runs])
    for run, v in zip((runs[i] for i in with_pieces), merged):
        run.voice = int(v)
    for i in np.flatnonzero(~has):
        runs[i].voice = runs[with_pieces[np.abs(starts[with_pieces] - starts[i]).argmin()]].voice


def _names(voices: np.ndarray, known: dict[str, np.ndarray] | None) -> list[str | None]:
    """Each voice's known name (one to one, the most similar pairs), or None."""
    names: list[str | None] = [None] * len(voices)
    if not known:
        return names
    from scipy.optimize import linear_sum_assignment

    refs = list(known)
    sims = voices @ np.stack([known[r] for r in refs]).T
    for v, r in zip(*linear_sum_assignment(-sims)):
        if sims[v, r] >= NAME_SIMILARITY:
            names[v] = refs[r]
    return names
