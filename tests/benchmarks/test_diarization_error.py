"""The diarization error rate as NIST's md-eval scores it, on turns worked out by hand; the
meetings' layout from turns of many files; the built conversations' reference turns."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from benchmarks.conversations import build, group_of, speaker_of  # noqa: E402
from benchmarks.diarization_error import read_rttm, score, write_rttm  # noqa: E402
from benchmarks.meetings import layout_meetings  # noqa: E402

REFERENCE = [(0.0, 10.0, "a"), (10.0, 20.0, "b")]


@pytest.mark.parametrize("found, collar, expected", [
    ([(0, 10, "x"), (10, 20, "y")], 0.25, (0.0, 0.0, 0.0, 0.0)),  # names do not matter
    ([(0, 20, "x")], 0.0, (0.5, 0.0, 0.0, 0.5)),  # one voice for two: half confused
    ([(0, 5, "x")], 0.0, (0.75, 0.75, 0.0, 0.0)),  # three quarters missed
    ([(0, 10, "x"), (10, 20, "y"), (25, 30, "x")], 0.0, (0.25, 0.0, 0.25, 0.0)),  # 5 s of false alarm
    ([(0, 10.2, "x"), (10.2, 20, "y")], 0.25, (0.0, 0.0, 0.0, 0.0)),  # inside the collar
    ([(0, 10.2, "x"), (10.2, 20, "y")], 0.0, (0.01, 0.0, 0.0, 0.01)),  # without it: 0.2 s confused
])
def test_hand_worked_scores(found, collar, expected):
    s = score(REFERENCE, found, collar=collar)
    assert (s.der, s.missed, s.false_alarm, s.confusion) == pytest.approx(expected, abs=1e-9)


def test_collars_and_overlap_are_not_scored_and_pairs_are_one_to_one():
    s = score(REFERENCE, [(0, 20, "x")])
    assert s.speech == pytest.approx(19.0)  # 0.25 s after 0, 0.5 s around 10, 0.25 s before 20
    overlapped = [(0.0, 10.0, "a"), (5.0, 15.0, "b")]
    s = score(overlapped, [(0, 15, "x")], collar=0.0)
    assert s.speech == pytest.approx(10.0) and s.confusion == pytest.approx(0.5)  # 5-10 s not scored
    three = [(0, 5, "a"), (5, 10, "b"), (10, 15, "c")]
    s = score(three, [(0, 5, "x"), (5, 15, "y")], collar=0.0)
    assert s.confusion == pytest.approx(5 / 15)  # y pairs with b or c, not both


def test_rttm_round_trip_and_the_meetings_layout(tmp_path):
    turns = [(1.5, 2.25, "A"), (3.0, 4.5, "B")]
    (tmp_path / "x.rttm").write_text(write_rttm(turns, "x"))
    assert read_rttm(tmp_path / "x.rttm") == turns
    rttm = write_rttm(turns, "one") + write_rttm([(0.0, 1.0, "C")], "two")
    layout_meetings({"one": b"RIFF1", "two": b"RIFF2"}, rttm, tmp_path / "m")
    assert read_rttm(tmp_path / "m" / "two.rttm") == [(0.0, 1.0, "C")]
    assert (tmp_path / "m" / "one.wav").read_bytes() == b"RIFF1"
    with pytest.raises(ValueError, match="no reference turns for three"):
        layout_meetings({"three": b""}, rttm, tmp_path / "m")


def test_built_conversations_take_turns_of_whole_utterances():
    rng = np.random.default_rng(0)
    pool = {name: [rng.standard_normal(16000 * (2 + k)).astype(np.float32) for k in range(3)]
            for name in ("61", "ljspeech", "1221")}
    conversations = build(pool, count=3)
    for name, wave, reference in conversations:
        assert all(a < b <= c for (a, b, _), (c, _, _) in zip(reference, reference[1:]))
        changes = [i for i in range(1, len(reference)) if reference[i][2] == reference[i - 1][2]]
        assert all(reference[i][2] == reference[-1][2] for i in changes)  # once the others are done
        assert len(wave) == pytest.approx(reference[-1][1] * 16000, abs=16000)
        assert len({who for _, _, who in reference}) == int(name.split("_")[1][0])
    assert speaker_of("short/1221-135766-0001.flac") == "1221"
    assert speaker_of("x/ljspeech_LJ050-0075.wav") == "ljspeech"
    assert group_of("cmu_arctic_a0007") == group_of("cmu_arctic_a0009")
