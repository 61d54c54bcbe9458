"""Whose words: the speaker whose turns overlap a span most, else the nearest turn's."""

import numpy as np

from scriba.speakers.assign import speakers_of
from scriba.speakers.diarize import SpeakerTurn

TURNS = [SpeakerTurn(0.0, 2.0, "A"), SpeakerTurn(2.5, 4.0, "B"), SpeakerTurn(4.0, 6.0, "A")]


def test_the_most_overlap_wins_and_a_pause_takes_the_nearest_turn():
    spans = np.array([[0.5, 1.0], [1.8, 2.6], [1.9, 2.9], [2.1, 2.2], [2.35, 2.45], [3.9, 4.3], [7.0, 7.5]])
    assert speakers_of(spans, TURNS) == ["A", "A", "B", "A", "B", "A", "A"]


def test_many_spans_in_chunks_and_no_turns():
    spans = np.stack([np.arange(0, 6, 0.001), np.arange(0, 6, 0.001) + 0.0005], axis=1)
    found = speakers_of(spans, TURNS)
    assert found[100] == "A" and found[3000] == "B" and found[5000] == "A" and len(found) == len(spans)
    assert speakers_of(spans[:3], []) == [None, None, None]
