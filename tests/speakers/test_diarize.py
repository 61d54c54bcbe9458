"""Who spoke when on a real two-speaker conversation, against its reference turns."""

import numpy as np
import pytest
from speakers import REFERENCES, clip, conversation

from benchmarks.diarization_error import score
from scriba.media.load import load_audio
from scriba.speakers.diarize import check_counts, diarize, voice_of
from scriba.transcription.vad import speech_chunks
from scriba.transcription.speaker_labels import SPEECH


@pytest.fixture(scope="module")
def talk():
    wave, reference = conversation()
    return wave, reference, speech_chunks(wave, SPEECH)


def found_turns(d):
    return [(t.start, t.end, t.speaker) for t in d.turns]


def test_two_speakers_found_with_their_turns(talk):
    wave, reference, speech = talk
    d = diarize(wave, speech)
    assert d.speakers == ["SPEAKER_00", "SPEAKER_01"]
    assert score(reference, found_turns(d)).der <= 0.05
    assert d.turns[0].speaker == "SPEAKER_00" and d.turns[0].start < 0.3


def test_counts_given_or_bounded(talk):
    wave, reference, speech = talk
    assert score(reference, found_turns(diarize(wave, speech, num_speakers=2))).der <= 0.05
    assert len(diarize(wave, speech, num_speakers=1).speakers) == 1
    assert len(diarize(wave, speech, min_speakers=2, max_speakers=2).speakers) == 2
    assert len(diarize(wave, speech, num_speakers=3).speakers) == 3


def test_known_voices_name_the_speakers(talk):
    wave, reference, speech = talk
    known = {name: voice_of(load_audio(clip(file))) for name, file in REFERENCES.items()}
    d = diarize(wave, speech, known=known)
    assert sorted(d.speakers) == sorted(REFERENCES)
    assert score(reference, found_turns(d)).confusion == 0.0  # the names are the reference's own


def test_no_speech_and_speech_too_short_to_tell():
    wave = np.zeros(16000 * 3, np.float32)
    assert diarize(wave, []).turns == []
    short = diarize(load_audio(clip("ljspeech_LJ050-0075")), [(0, 3000)])
    assert [t.speaker for t in short.turns] == ["SPEAKER_00"]


@pytest.mark.parametrize("counts, message", [
    ((0, None, None), "num_speakers must be a whole number of at least 1, got 0"),
    ((None, 3, 2), "min_speakers (3) is more than max_speakers (2)"),
    ((None, -1, None), "min_speakers must be a whole number of at least 1, got -1"),
    ((2.5, None, None), "num_speakers must be a whole number of at least 1, got 2.5"),
    ((True, None, None), "num_speakers must be a whole number of at least 1, got True"),
])
def test_impossible_counts_are_one_line_errors(counts, message):
    with pytest.raises(ValueError) as caught:
        check_counts(*counts)
    assert str(caught.value) == message


def test_a_reference_clip_without_speech_is_refused():
    with pytest.raises(ValueError, match="at least half a second of speech"):
        voice_of(np.zeros(1000, np.float32))
