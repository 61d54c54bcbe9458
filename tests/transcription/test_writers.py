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
