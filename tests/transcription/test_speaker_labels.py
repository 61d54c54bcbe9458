"""Speakers in transcripts (diarize=True): real two-speaker conversations against their reference
turns, in both modes, with and without VAD, streamed, named from reference clips, in German and
Spanish with model="base"; a segment split at the word where its speaker changes; bad requests."""

import os

import paths
import pytest
from speakers import REFERENCES, clip, conversation, speaker_at

import scriba
from benchmarks.conversations import build, utterances
from scriba.transcription.results import Segment, Transcription, Word
from scriba.transcription.speaker_labels import label_speakers, token_splitter
from scriba.speakers.diarize import Diarization, SpeakerTurn


@pytest.fixture(scope="module")
def talk():
    return conversation()


def agreement(result, reference, mapping) -> float:
    """The share of the words (segments without words: their middles) whose speaker is the
    reference's at that moment, through `mapping` (found label -> reference speaker)."""
    points = []
    for s in result.segments:
        items = s.words if s.words else [s]
        points += [((x.start + x.end) / 2, x.speaker) for x in items]
    scored = [(speaker_at(reference, t), who) for t, who in points if speaker_at(reference, t)]
    return sum(mapping.get(who) == truth for truth, who in scored) / len(scored)


LABELS = {"SPEAKER_00": "ljspeech", "SPEAKER_01": "librispeech_61"}  # the conversation's first voice is LJ's


@pytest.mark.parametrize("options", [{}, {"mode": "sequential"}, {"vad_filter": False}, {"vad_filter": True}])
def test_every_segment_is_labelled_with_its_speaker(talk, options):
    wave, reference = talk
    result = scriba.transcribe(wave, diarize=True, **options)
    assert [s.name for s in result.speakers] == ["SPEAKER_00", "SPEAKER_01"]
    assert all(s.speaker in LABELS for s in result.segments) and all(s.words is None for s in result.segments)
    assert agreement(result, reference, LABELS) >= 0.95
    spoken = {s.name: s.speaking_time for s in result.speakers}
    truth = {who: sum(b - a for a, b, s in reference if s == LABELS[who]) for who in LABELS}
    for who in LABELS:
        assert abs(spoken[who] - truth[who]) < 1.5, (spoken, truth)


def test_words_carry_their_speaker(talk):
    wave, reference = talk
    result = scriba.transcribe(wave, diarize=True, word_timestamps=True)
    assert all(w.speaker == s.speaker for s in result.segments for w in s.words)
    assert agreement(result, reference, LABELS) >= 0.95
    plain = scriba.transcribe(wave, word_timestamps=True)
    assert "".join(s.text for s in result.segments) == "".join(s.text for s in plain.segments)
    assert all(s.speaker is None for s in plain.segments) and plain.speakers is None


def test_the_stream_s_labels_come_with_its_transcription_at_the_end(talk):
    wave, reference = talk
    segments, info = scriba.transcribe_stream(wave, diarize=True)
    streamed = list(segments)
    assert streamed and all(s.speaker is None for s in streamed)
    assert [s.name for s in segments.transcription.speakers] == ["SPEAKER_00", "SPEAKER_01"]
    assert agreement(segments.transcription, reference, LABELS) >= 0.95


def test_known_speakers_are_named_from_their_clips(talk):
    wave, reference = talk
    known = {"Linda": clip(REFERENCES["ljspeech"]), "Sam": clip(REFERENCES["librispeech_61"])}
    result = scriba.transcribe(wave, diarize=True, known_speakers=known)
    assert [s.name for s in result.speakers] == ["Linda", "Sam"]
    assert agreement(result, reference, {"Linda": "ljspeech", "Sam": "librispeech_61"}) >= 0.95


def test_a_segment_is_split_at_the_word_where_its_speaker_changes():
    """Text tokens are letters here; timestamps from 100 on. The first word's speaker is the
    segment's; each part holds its words, text and tokens, the leading timestamp with the
    first part and the closing one with the last."""
    letters = lambda ids: "".join(" " + chr(96 + t) if t < 100 else "" for t in ids)
    words = [Word(0.0, 0.4, " a", 0.9), Word(0.5, 0.9, " b", 0.9), Word(1.6, 2.0, " c", 0.9),
             Word(2.1, 2.5, " d", 0.9)]
    segment = Segment(0.0, 2.5, " a b c d", [100, 1, 2, 3, 4, 125], -0.1, 0.0, words=words)
    result = Transcription("a b c d", "en", None, 3.0, [segment])
    turns = Diarization([SpeakerTurn(0.0, 1.2, "SPEAKER_00"), SpeakerTurn(1.5, 2.6, "SPEAKER_01")])
    label_speakers(result, turns, token_splitter(letters, 100))
    first, second = result.segments
    assert (first.text, first.tokens, first.speaker) == (" a b", [100, 1, 2], "SPEAKER_00")
    assert (second.text, second.tokens, second.speaker) == (" c d", [3, 4, 125], "SPEAKER_01")
    assert (first.start, first.end, second.start, second.end) == (0.0, 0.9, 1.6, 2.5)
    assert [w.speaker for w in first.words + second.words] == ["SPEAKER_00"] * 2 + ["SPEAKER_01"] * 2
    assert [(s.name, s.speaking_time) for s in result.speakers] == [("SPEAKER_00", 1.2), ("SPEAKER_01", 1.1)]


def test_a_lone_short_word_takes_its_neighbours_speaker():
    words = [Word(t, t + 0.3, f" w{i}", 0.9) for i, t in enumerate([0.0, 0.4, 0.8, 1.2])]
    segment = Segment(0.0, 1.5, "".join(w.word for w in words), [1, 2, 3, 4], -0.1, 0.0, words=words)
    result = Transcription("", "en", None, 2.0, [segment])
    turns = Diarization([SpeakerTurn(0.0, 0.75, "SPEAKER_00"), SpeakerTurn(0.75, 1.0, "SPEAKER_01"),
                         SpeakerTurn(1.0, 2.0, "SPEAKER_00")])
    label_speakers(result, turns)
    assert len(result.segments) == 1 and result.segments[0].speaker == "SPEAKER_00"


def test_base_labels_a_german_and_spanish_conversation():
    folder = os.path.join(paths.TEST_DATA, "multilingual")
    pool = utterances([os.path.join(folder, f) for f in os.listdir(folder) if "librivox" in f])
    name, wave, reference = build(pool, count=1, per_speaker=3)[0]
    result = scriba.transcribe(wave, model="base", diarize=True)
    assert len(result.speakers) == 2
    mapping = {}
    for s in result.segments:
        mapping.setdefault(s.speaker, speaker_at(reference, (s.start + s.end) / 2))
    assert agreement(result, reference, mapping) >= 0.9
    assert {s.language for s in result.segments} == {result.language}


@pytest.mark.parametrize("options, message", [
    ({"diarize": True, "num_speakers": 0}, "num_speakers must be a whole number of at least 1, got 0"),
    ({"diarize": True, "min_speakers": 3, "max_speakers": 2},
     "min_speakers (3) is more than max_speakers (2)"),
    ({"num_speakers": 2}, "num_speakers needs diarize=True"),
    ({"diarize": True, "known_speakers": {"Ana": b"not audio at all"}},
     "known speaker 'Ana': the reference clip is not usable"),
    ({"diarize": True, "known_speakers": ["Ana"]},
     "known_speakers must map each speaker's name to a reference clip"),
])
def test_bad_requests_are_one_line_errors(options, message):
    with pytest.raises(ValueError) as caught:
        scriba.transcribe(paths.JFK, **options)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
