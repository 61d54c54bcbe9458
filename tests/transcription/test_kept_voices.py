"""Voices kept across recordings (kept_voices.py): a voice kept from a clip names that person in
a later diarized transcription, beside or instead of known_speakers, and not with
use_voice_library=False; clips that hold no speech and names already kept are one-line errors."""

import numpy as np
import pytest
from speakers import REFERENCES, clip, conversation, speaker_at

import scriba
from scriba.speakers.voice_library import VoiceLibrary, VoiceLibraryError


@pytest.fixture(scope="module")
def talk():
    return conversation()


@pytest.fixture()
def library(tmp_path, monkeypatch):
    monkeypatch.setenv("SCRIBA_DATA", str(tmp_path))
    return VoiceLibrary()


def named_share(result, reference, who: str, truth: str) -> float:
    """The share of the segments of `truth`'s turns labelled `who`."""
    labels = [s.speaker for s in result.segments if speaker_at(reference, (s.start + s.end) / 2) == truth]
    return labels.count(who) / len(labels)


def test_a_kept_voice_names_its_speaker_in_the_next_recording(talk, library):
    wave, reference = talk
    kept = scriba.remember_voice("Linda", clip(REFERENCES["ljspeech"]))
    assert kept.name == "Linda" and kept.seconds >= 1.0 and list(scriba.kept_voices()) == ["Linda"]
    result = scriba.transcribe(wave, diarize=True)
    assert [s.name for s in result.speakers] == ["Linda", "SPEAKER_00"]
    assert named_share(result, reference, "Linda", "ljspeech") >= 0.95
    assert named_share(result, reference, "SPEAKER_00", "librispeech_61") >= 0.95
    unnamed = scriba.transcribe(wave, diarize=True, use_voice_library=False)
    assert [s.name for s in unnamed.speakers] == ["SPEAKER_00", "SPEAKER_01"]
    both = scriba.transcribe(wave, diarize=True, known_speakers={"Sam": clip(REFERENCES["librispeech_61"])})
    assert [s.name for s in both.speakers] == ["Linda", "Sam"]
    scriba.forget_voice("Linda")
    assert scriba.kept_voices() == {}


def test_clips_without_speech_and_names_taken_are_one_line_errors(library):
    scriba.remember_voice("Linda", clip(REFERENCES["ljspeech"]))
    silence = np.zeros(3 * 16000, np.float32)
    for act, message in [
        (lambda: scriba.remember_voice("Sam", silence),
         "clip 1: not usable as a voice clip: it holds 0.0 s of speech; a voice needs at least 1 s"),
        (lambda: scriba.remember_voice("Sam", "/no/such.wav"), "/no/such.wav: not usable as a voice clip"),
        (lambda: scriba.remember_voice("Linda", clip(REFERENCES["librispeech_61"])),
         "a voice named 'Linda' is already kept"),
        (lambda: scriba.remember_voice("Sam", []), "no clip of 'Sam''s voice was given"),
    ]:
        with pytest.raises(VoiceLibraryError) as caught:
            act()
        assert str(caught.value).startswith(message) and "\n" not in str(caught.value), caught.value
    assert list(scriba.kept_voices()) == ["Linda"]  # nothing half-kept
