"""Subtitle line control (scriba/transcription/subtitles.py) against openai-whisper's own writers
(whisper/utils.py of the openai-whisper package): the same segments and words give the same SRT,
VTT and TSV text, for every combination of its options, on made-up and on real words."""

import io
import random

import pytest
from whisper.utils import WriteSRT, WriteTSV, WriteVTT

import paths

import scriba
from scriba.transcription.results import Segment, Transcription, Word
from scriba.transcription.subtitles import SubtitleOptions
from scriba.transcription.writers import format_transcript

WORDS = "the quick brown fox jumps over a lazy dog while seventeen extraordinarily long words arrive".split()


def _made_up(seed: int) -> Transcription:
    """Segments of 1-12 words, some pauses over 3 s, some words longer than a line."""
    rng = random.Random(seed)
    segments, t = [], rng.uniform(0, 2)
    for _ in range(rng.randint(1, 6)):
        words = []
        for _ in range(rng.randint(1, 12)):
            t += rng.choice([0.0, 0.1, 0.3, 3.5]) if words else rng.uniform(0, 5)
            length = round(rng.uniform(0.1, 0.9), 3)
            words.append(Word(round(t, 3), round(t + length, 3), " " + rng.choice(WORDS), 0.9))
            t += length
        text = "".join(w.word for w in words)
        segments.append(Segment(words[0].start, words[-1].end, text, [1], -0.2, 0.0, words=words))
    return Transcription("", "en", None, t, segments)


def _as_openai(result: Transcription) -> dict:
    return {"segments": [{"start": s.start, "end": s.end, "text": s.text,
                          **({"words": [{"word": w.word, "start": w.start, "end": w.end} for w in s.words]}
                             if s.words is not None else {})} for s in result.segments]}


def _openai(writer, result: Transcription, options: SubtitleOptions) -> str:
    out = io.StringIO()
    kwargs = {k: v for k, v in vars(options).items() if v not in (None, False)}
    writer(".").write_result(_as_openai(result), out, **kwargs)
    return out.getvalue()


OPTIONS = [
    SubtitleOptions(),
    SubtitleOptions(max_line_width=20),
    SubtitleOptions(max_line_width=20, max_line_count=2),
    SubtitleOptions(max_line_width=42, max_line_count=1),
    SubtitleOptions(max_words_per_line=3),
    SubtitleOptions(max_words_per_line=1),
    SubtitleOptions(max_line_width=24, max_line_count=2, max_words_per_line=4),
    SubtitleOptions(highlight_words=True),
    SubtitleOptions(max_line_width=30, max_line_count=2, highlight_words=True),
]


@pytest.mark.parametrize("options", OPTIONS, ids=repr)
@pytest.mark.parametrize("seed", range(6))
def test_cues_equal_openai_whisper_s_writers(options, seed):
    result = _made_up(seed)
    assert format_transcript(result, "srt", options) == _openai(WriteSRT, result, options)
    assert format_transcript(result, "vtt", options) == _openai(WriteVTT, result, options)


def test_segments_without_words_and_tsv_equal_openai_whisper_s():
    result = _made_up(1)
    for s in result.segments:
        s.words = None
    for fmt, writer in (("srt", WriteSRT), ("vtt", WriteVTT), ("tsv", WriteTSV)):
        assert format_transcript(result, fmt) == _openai(writer, result, SubtitleOptions())


@pytest.fixture(scope="module")
def jfk_words():
    return scriba.transcribe(paths.JFK, word_timestamps=True)


@pytest.mark.parametrize("options", OPTIONS[1:4] + OPTIONS[6:], ids=repr)
def test_real_words_cut_as_openai_whisper_cuts_them(jfk_words, options):
    assert format_transcript(jfk_words, "srt", options) == _openai(WriteSRT, jfk_words, options)
    assert format_transcript(jfk_words, "vtt", options) == _openai(WriteVTT, jfk_words, options)


def test_a_line_never_passes_its_width_unless_one_word_does(jfk_words):
    text = format_transcript(jfk_words, "srt", SubtitleOptions(max_line_width=20, max_line_count=2))
    cues = [c.split("\n")[2:] for c in text.strip().split("\n\n")]
    assert len(cues) > 2 and all(1 <= len(lines) <= 2 for lines in cues)
    assert all(len(line) <= 20 or " " not in line for lines in cues for line in lines)


@pytest.mark.parametrize("bad", [{"max_line_width": 0}, {"max_line_count": -1}, {"max_words_per_line": 2.5}])
def test_bad_limits_are_one_line_errors(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=f"{name} must be a whole number >= 1"):
        SubtitleOptions(**bad)
