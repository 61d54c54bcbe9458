"""Transcripts written a segment at a time (the CLI's terminal output) equal the whole file."""

import pytest

from scriba.transcription.results import Segment, Transcription, Word
from scriba.transcription.writers import format_transcript, stream_transcript


def _transcript(with_words: bool) -> Transcription:
    texts = [" And so, my fellow Americans,", " ask not --> what", " your country can do."]
    segments = []
    for i, text in enumerate(texts):
        words = [
            Word(i * 3 + k * 0.5, i * 3 + k * 0.5 + 0.4, " " + w, 0.9) for k, w in enumerate(text.split())
        ]
        segments.append(
            Segment(i * 3.0, i * 3.0 + 2.5, text, [1, 2], -0.2, 0.01, words=words if with_words else None)
        )
    return Transcription("".join(texts).strip(), "en", None, 9.0, segments)


@pytest.mark.parametrize("fmt", ["txt", "srt", "vtt"])
@pytest.mark.parametrize("with_words, word_cues", [(False, False), (True, False), (True, True)])
def test_pieces_joined_are_the_whole_transcript(fmt, with_words, word_cues):
    result = _transcript(with_words)
    pieces = list(stream_transcript(iter(result.segments), fmt, word_cues))
    assert "".join(pieces) == format_transcript(result, fmt, word_cues)
    cues = sum(len(s.words) for s in result.segments) if word_cues and fmt != "txt" else len(result.segments)
    assert len(pieces) == cues + (fmt == "vtt")


def test_nothing_heard_is_still_a_valid_file_and_json_is_refused():
    empty = Transcription("", "en", None, 1.0, [])
    for fmt in ("txt", "srt", "vtt"):
        assert "".join(stream_transcript(iter([]), fmt)) == format_transcript(empty, fmt)
    with pytest.raises(ValueError, match="json is written whole"):
        list(stream_transcript(iter([]), "json"))


def test_each_format_as_literal_text():
    """The files as a player reads them, written out: SRT numbers its cues and uses a comma
    before the milliseconds, VTT a header and a dot; "-->" inside a text is escaped (it would
    end a cue's timing line); JSON keeps each token list on one line."""
    result = _transcript(False)
    assert format_transcript(result, "txt") == (
        "And so, my fellow Americans,\nask not --> what\nyour country can do.\n"
    )
    assert format_transcript(result, "srt") == (
        "1\n00:00:00,000 --> 00:00:02,500\nAnd so, my fellow Americans,\n\n"
        "2\n00:00:03,000 --> 00:00:05,500\nask not -> what\n\n"
        "3\n00:00:06,000 --> 00:00:08,500\nyour country can do.\n"
    )
    assert format_transcript(result, "vtt") == (
        "WEBVTT\n\n"
        "00:00:00.000 --> 00:00:02.500\nAnd so, my fellow Americans,\n\n"
        "00:00:03.000 --> 00:00:05.500\nask not -> what\n\n"
        "00:00:06.000 --> 00:00:08.500\nyour country can do.\n"
    )
    words = format_transcript(_transcript(True), "srt", word_cues=True).split("\n\n")
    assert words[0] == "1\n00:00:00,000 --> 00:00:00,400\nAnd"
    assert words[6] == "7\n00:00:03,500 --> 00:00:03,900\nnot"
    assert '"tokens": [1, 2]' in format_transcript(result, "json")
    late = Transcription("x", "en", None, 4000.0, [Segment(3725.5, 3726.0, " late", [1], -0.1, 0.0)])
    assert "01:02:05,500 --> 01:02:06,000" in format_transcript(late, "srt")
