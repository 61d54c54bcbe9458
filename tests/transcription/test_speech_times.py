"""Times on the speech (speech_times.py): the rules on stretches of speech laid out by hand; then
real recordings, the word times against forced alignments (tests/data/alignments, read with
praatio) and a conversation's segments against its utterances' spans, each with the placing on
and off, in both modes and with and without VAD."""

import os
import re

import numpy as np
import paths
import pytest
from praatio import textgrid
from speakers import conversation

import scriba
import scriba.transcription.file as file_module
from benchmarks.diarization_error import score
from scriba.transcription.speech_times import MIN_SEGMENT, MIN_WORD, REACH, onto_speech

EDGES = np.array([[1.0, 2.0], [3.0, 4.0]])


def placed(items, shortest=MIN_WORD, bounds=(0.0, np.inf), edges=EDGES):
    out = onto_speech(np.array(items, dtype=float), np.full(len(items), shortest), edges, bounds)
    return [tuple(round(x, 6) for x in row) for row in out.tolist()]


def test_a_start_in_a_pause_moves_to_the_speech_and_an_end_back_from_it():
    assert placed([(0.5, 1.8)]) == [(1.0, 2.0)]  # on to the onset; the end out to the offset
    assert placed([(1.5, 2.6)]) == [(1.0, 2.0)]  # back to the offset; the start to the onset
    assert placed([(0.2, 4.6)]) == [(1.0, 4.0)]  # across a pause: only the ends move


def test_what_lies_in_a_pause_or_would_be_too_short_keeps_its_times():
    assert placed([(2.3, 2.8)]) == [(2.3, 2.8)]
    # each with the next word starting where it ends: its end stays
    assert placed([(0.5, 1.05), (1.05, 1.9)])[0] == (0.5, 1.05)  # 0.05 s of speech: under a word's minimum
    assert placed([(0.5, 1.15), (1.15, 1.9)], MIN_SEGMENT)[0] == (0.5, 1.15)
    assert placed([(0.5, 1.15), (1.15, 1.9)])[0] == (1.0, 1.15)


def test_a_boundary_inside_speech_reaches_its_edge_but_never_past_a_neighbour_or_the_window():
    assert placed([(1.2, 1.5), (1.6, 1.9)]) == [(1.0, 1.6), (1.6, 2.0)]
    assert placed([(1.2, 1.5)], bounds=(1.1, 1.8)) == [(1.1, 1.8)]
    long = np.array([[0.0, 10.0]])
    assert placed([(5.0, 6.0)], edges=long) == [(5.0 - REACH, 6.0 + REACH)]
    assert placed([(5.0, 6.0)], edges=np.zeros((0, 2))) == [(5.0, 6.0)]


def _aligned(name: str):
    folder = os.path.join(paths.TEST_DATA, "alignments")
    grid = textgrid.openTextgrid(os.path.join(folder, name + ".TextGrid"), includeEmptyIntervals=False)
    words = [(e.start, e.end, e.label.lower()) for e in grid.getTier("word").entries]
    return os.path.join(folder, name + ".wav"), words


def _word_errors(monkeypatch, on: bool) -> np.ndarray:
    """[boundaries] seconds off: each word's start and end against the forced alignment's."""
    if not on:
        monkeypatch.setattr(file_module, "place_on_speech", lambda *a, **k: None)
    errors = []
    for name in ("bobby", "mary"):
        audio, reference = _aligned(name)
        words = [w for s in scriba.transcribe(audio, word_timestamps=True).segments for w in s.words]
        assert [re.sub(r"[^a-z]", "", w.word.lower()) for w in words] == [r[2] for r in reference]
        errors += [w.start - r[0] for w, r in zip(words, reference)]
        errors += [w.end - r[1] for w, r in zip(words, reference)]
    monkeypatch.undo()
    return np.abs(np.array(errors))


def test_word_times_come_closer_to_a_forced_alignment(monkeypatch):
    before, after = _word_errors(monkeypatch, False), _word_errors(monkeypatch, True)
    assert after.mean() <= before.mean() - 0.02, (before.mean(), after.mean())  # 0.106 s -> 0.080 s
    assert after.mean() <= 0.09 and np.mean(after <= 0.1) >= 0.65, after


@pytest.fixture(scope="module")
def talk():
    return conversation()


MODES = [{}, {"mode": "sequential"}, {"vad_filter": True}, {"word_timestamps": True}]


@pytest.mark.parametrize("options", MODES)
def test_segments_keep_to_the_utterances(talk, monkeypatch, options):
    """Against the utterances' spans: less time in the pauses, no speech lost for it."""
    wave, reference = talk
    spans = lambda r: [(s.start, s.end, "one") for s in r.segments]  # noqa: E731
    one = [(a, b, "one") for a, b, _ in reference]
    monkeypatch.setattr(file_module, "place_on_speech", lambda *a, **k: None)
    before = score(one, spans(scriba.transcribe(wave, **options)))
    monkeypatch.undo()
    after = score(one, spans(scriba.transcribe(wave, **options)))
    assert after.false_alarm <= before.false_alarm and after.missed <= before.missed + 0.005, (before, after)
    assert after.der <= 0.03, after
