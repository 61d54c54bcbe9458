"""faster-whisper's transcribe() options, in both modes, against faster-whisper itself (float32,
the same weights and features: faster_whisper_oracle.py): the same tokens, and an option that
changes the transcript changes it (so a silently ignored option fails here)."""

import numpy as np
import pytest
from faster_whisper_oracle import faster_whisper_model, faster_whisper_tokens
from oracle import JFK

import scriba
from scriba.media.load import load_audio

COUNTRY = 1499  # tiny.en's " country"

# name: (faster-whisper's options, Scriba's where they differ, whether jfk's transcript changes)
CASES = {
    "hotwords": ({"hotwords": "country, ask"}, None, True),
    "prefix": ({"prefix": "And so, my dear"}, None, True),
    "prefix and hotwords": ({"prefix": "And so, my dear", "hotwords": "country, ask"}, None, True),
    "suppress_tokens": ({"suppress_tokens": [COUNTRY]}, None, True),
    "suppress_tokens -1 and more": ({"suppress_tokens": [-1, COUNTRY]}, None, True),
    "without_timestamps": ({"without_timestamps": True}, {"timestamps": False}, True),
    "clip_timestamps": ({"clip_timestamps": "2,8"}, None, True),
    "repetition_penalty": ({"repetition_penalty": 1.5}, None, True),
    "no_repeat_ngram_size": ({"no_repeat_ngram_size": 2}, None, True),
    # Whisper starts these windows at <|0.00|> whatever the limit: the same tokens, as theirs
    "max_initial_timestamp": ({"max_initial_timestamp": 0.0}, None, False),
    "suppress_blank": ({"suppress_blank": False}, None, False),
}


@pytest.fixture(scope="module")
def audio():
    return load_audio(JFK)


@pytest.fixture(scope="module")
def faster_whisper():
    return faster_whisper_model("tiny.en")


def tokens_of(result) -> list[int]:
    return [t for s in result.segments for t in s.tokens]


@pytest.mark.parametrize("mode", ["batched", "sequential"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_same_tokens_as_faster_whisper(audio, faster_whisper, case, mode):
    theirs_options, ours_options, changes = CASES[case]
    theirs = faster_whisper_tokens(faster_whisper, audio, **{k: _copy(v) for k, v in theirs_options.items()})
    ours = scriba.transcribe(audio, dtype="float32", mode=mode, **(ours_options or theirs_options))
    assert tokens_of(ours) == theirs
    plain = tokens_of(scriba.transcribe(audio, dtype="float32", mode=mode))
    assert (tokens_of(ours) != plain) == changes


def test_clips_keep_the_files_timeline(audio):
    result = scriba.transcribe(audio, dtype="float32", clip_timestamps=[2.0, 8.0])
    alone = scriba.transcribe(audio[2 * 16000 : 8 * 16000], dtype="float32")
    assert tokens_of(result) == tokens_of(alone)  # a clip decodes as that audio alone
    # the same times, to the frames where Silero, reading the whole file, hears the speech end
    assert np.allclose([(s.start - 2.0, s.end - 2.0) for s in result.segments],
                       [(s.start, s.end) for s in alone.segments], atol=0.05)
    with pytest.raises(ValueError, match="clip_timestamps .* vad_filter"):
        scriba.transcribe(audio, clip_timestamps="1,2", vad_filter=True)


@pytest.mark.parametrize("mode", ["batched", "sequential"])
def test_max_new_tokens_cuts_each_window(audio, mode):
    """A window's first n tokens, as the same greedy decoding writes them without the limit
    (transformers' max_new_tokens). faster-whisper passes prompt + n to CTranslate2 as its
    max_length, which then writes about half of that: not its meaning here."""
    plain = tokens_of(scriba.transcribe(audio, dtype="float32", mode=mode))
    for n in (2, 5, 9):  # (1: a lone <|0.00|>, a window with no text and no segment)
        assert tokens_of(scriba.transcribe(audio, dtype="float32", mode=mode, max_new_tokens=n)) == plain[:n]
    prefixed = scriba.transcribe(audio, dtype="float32", mode=mode, prefix="And so", max_new_tokens=2)
    assert prefixed.text == "And so my fellow"  # counted after the prefix


def test_punctuation_marks_join_the_words_asked():
    words = lambda **o: [
        w.word for s in scriba.transcribe(JFK, word_timestamps=True, **o).segments for w in s.words
    ]
    joined = words()
    assert joined[-1] == " country." and "." not in joined
    apart = words(append_punctuations="")
    assert apart[-2:] == [" country", "."] and len(apart) == len(joined) + 1


def test_a_language_per_segment():
    """multilingual=True: German, silence, Spanish, silence, German -> segments in de, es, de."""
    de = load_audio("tests/data/multilingual/de_librivox_aeneas_example7.mp3")
    es = load_audio("tests/data/multilingual/es_librivox_aeneas_example7.mp3")
    pause = np.zeros(3 * 16000, np.float32)
    mixed = np.concatenate(
        [de[2 * 16000 : 17 * 16000], pause, es[2 * 16000 : 17 * 16000], pause, de[30 * 16000 : 45 * 16000]]
    )
    for mode in ("batched", "sequential"):
        result = scriba.transcribe(
            mixed, model="base", multilingual=True, mode=mode, word_timestamps=mode == "sequential"
        )
        runs = [
            lang
            for i, lang in enumerate(s.language for s in result.segments)
            if i == 0 or lang != result.segments[i - 1].language
        ]
        assert runs == ["de", "es", "de"], [(s.start, s.language, s.text) for s in result.segments]
        assert result.language == "de"  # the first window's, whichever the batch completes first
        if mode == "batched":  # a window's last segment ends where the next window starts
            pairs = zip(result.segments, result.segments[1:])
            assert all(b.start >= a.end for a, b in pairs), [(s.start, s.end) for s in result.segments]
        for s in result.segments if mode == "sequential" else []:
            assert s.words and {w.language for w in s.words} == {s.language}
    with pytest.raises(ValueError, match="multilingual=True detects each window's language"):
        scriba.transcribe(mixed, model="base", multilingual=True, language="de")


def _copy(value):
    return list(value) if isinstance(value, list) else value  # faster-whisper extends its list in place
