"""A file's language: from its first window of speech (after VAD), and when that window is not
sure, a vote of more speech windows (faster-whisper's language_detection_threshold and
language_detection_segments). The rule in isolation, then the real multilingual base on files
that start with silence and music-like noise, and on a file whose first window is Spanish and
the rest German."""

from types import SimpleNamespace

import numpy as np
import pytest
from multilingual import clip

import scriba
from scriba.media.load import SAMPLE_RATE, load_audio
from scriba.transcription.language_vote import LanguageVote
from scriba.transcription.window_decoder import WindowDecoder


def votes(*pairs, threshold=0.5, windows=3):
    vote = LanguageVote(threshold, windows)
    for k, (language, probability) in enumerate(pairs):
        vote.add(k, SimpleNamespace(language=language, language_probability=probability))
    return vote


def test_the_first_sure_window_decides():
    assert votes(("de", 0.9)).decided and votes(("de", 0.9)).outcome() == ("de", 0.9)
    vote = votes(("en", 0.3), ("de", 0.8))
    assert vote.decided and vote.outcome() == ("de", 0.8)


def test_unsure_windows_vote_and_the_majority_wins():
    assert not votes(("en", 0.3)).decided and not votes(("en", 0.3), ("de", 0.4)).decided
    vote = votes(("en", 0.3), ("de", 0.4), ("de", 0.45))
    assert vote.decided and vote.outcome() == ("de", 0.45)
    assert votes(("en", 0.3), ("de", 0.4), ("fr", 0.2)).outcome() == ("en", 0.3)  # a tie: the first
    assert votes(("en", 0.3), threshold=0.5, windows=1).decided  # faster-whisper's default: one window
    assert LanguageVote().outcome() == (None, None)


@pytest.mark.parametrize("threshold, windows", [(1.5, 3), (-0.1, 3), (0.5, 0), (0.5, 1.5)])
def test_bad_settings_are_refused(threshold, windows):
    with pytest.raises(ValueError, match="language_detection"):
        scriba.transcribe(
            np.zeros(16000, np.float32),
            language_detection_threshold=threshold,
            language_detection_segments=windows,
        )


def music_like_noise(seconds: float, seed: int = 0) -> np.ndarray:
    """Chords of harmonic tones that change every half second, over a little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    notes = rng.choice([196.0, 220.0, 261.6, 293.7, 329.6, 392.0], size=(int(seconds * 2) + 1, 3))
    chord = notes[(t * 2).astype(int)]  # [samples, 3]
    tones = sum(np.sin(2 * np.pi * chord * k * t[:, None]).sum(axis=1) / k for k in (1, 2, 3))
    return (0.05 * tones + 0.01 * rng.standard_normal(len(t))).astype(np.float32)


@pytest.fixture(scope="module")
def german():
    return load_audio(clip("de_")["path"])


@pytest.fixture
def submitted(monkeypatch):
    """The (language, start in the stream) of every window the decoder queues."""
    seen = []
    prompt = WindowDecoder._prompt

    def spy(self, window):
        seen.append((window.language, window.start))
        return prompt(self, window)

    monkeypatch.setattr(WindowDecoder, "_prompt", spy)
    return seen


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_silence_and_music_before_german_speech(german, submitted, mode):
    audio = np.concatenate([np.zeros(5 * SAMPLE_RATE, np.float32), music_like_noise(15.0), german])
    result = scriba.transcribe((audio, SAMPLE_RATE), model="base", mode=mode)
    assert result.language == "de" and result.language_probability > 0.9
    assert result.segments[0].start > 19.0  # nothing before the speech
    assert "Christoffel" in result.text and "Wahrheit zu sagen" in result.text
    assert submitted[0][0] is None and all(language == "de" for language, _ in submitted[1:])


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_windows_vote_when_unsure_and_the_outvoted_one_is_decoded_again(german, submitted, mode):
    spanish = load_audio(clip("es_")["path"])[: 20 * SAMPLE_RATE]
    gap = np.zeros(3 * SAMPLE_RATE, np.float32)  # a long pause: the Spanish is a window of its own
    audio = np.concatenate([spanish, gap, german[: 45 * SAMPLE_RATE]])  # German: two windows
    # No window is "sure" above 1.0: three speech windows vote, German wins two to one.
    result = scriba.transcribe(
        (audio, SAMPLE_RATE),
        model="base",
        mode=mode,
        language_detection_threshold=1.0,
        language_detection_segments=3,
    )
    assert result.language == "de" and 0.9 < result.language_probability <= 1.0
    voters = [start for language, start in submitted if language is None]
    assert len(voters) == 3
    assert ("de", voters[0]) in submitted  # the Spanish window again, as German
    assert "Christoffel" in result.text and "Lebensbeschreibung" in result.text
