"""Transcripts written a segment at a time (the CLI's terminal output) equal the whole file; each
format as literal text, with and without speakers."""

import json

import pytest

from scriba.transcription.results import Segment, Speaker, Transcription, Word
from scriba.transcription.subtitles import WORD_CUES, SubtitleOptions
from scriba.transcription.writers import FORMATS, format_transcript, stream_transcript, transcript_bytes


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


STREAMED = ["txt", "srt", "vtt", "tsv", "lrc"]
PACKED = SubtitleOptions(max_line_width=16, max_line_count=2)  # cues across segments: written whole


CASES = [(False, None), (True, None), (True, WORD_CUES), (True, PACKED)]


@pytest.mark.parametrize("fmt", STREAMED)
@pytest.mark.parametrize("with_words, subtitles", CASES)
def test_pieces_joined_are_the_whole_transcript(fmt, with_words, subtitles):
    result = _transcript(with_words)
    pieces = list(stream_transcript(iter(result.segments), fmt, subtitles))
    assert "".join(pieces) == format_transcript(result, fmt, subtitles)
    if subtitles is PACKED and fmt in ("srt", "vtt"):
        assert len(pieces) == 1
        return
    per_word = subtitles is WORD_CUES and fmt in ("srt", "vtt")
    cues = sum(len(s.words) for s in result.segments) if per_word else len(result.segments)
    assert len(pieces) == cues + 1  # the head: empty, or the format's header


def test_nothing_heard_is_still_a_valid_file_and_json_is_refused():
    empty = Transcription("", "en", None, 1.0, [])
    for fmt in STREAMED:
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
        "3\n00:00:06,000 --> 00:00:08,500\nyour country can do.\n\n"
    )
    assert format_transcript(result, "vtt") == (
        "WEBVTT\n\n"
        "00:00.000 --> 00:02.500\nAnd so, my fellow Americans,\n\n"
        "00:03.000 --> 00:05.500\nask not -> what\n\n"
        "00:06.000 --> 00:08.500\nyour country can do.\n\n"
    )
    assert format_transcript(result, "tsv") == (
        "start\tend\ttext\n0\t2500\tAnd so, my fellow Americans,\n3000\t5500\task not --> what\n"
        "6000\t8500\tyour country can do.\n"
    )
    assert format_transcript(result, "lrc") == (
        "[by:scriba]\n[00:00.00]And so, my fellow Americans,\n[00:03.00]ask not --> what\n"
        "[00:06.00]your country can do.\n"
    )
    words = format_transcript(_transcript(True), "srt", WORD_CUES).split("\n\n")
    assert words[0] == "1\n00:00:00,000 --> 00:00:00,400\nAnd"
    assert words[6] == "7\n00:00:03,500 --> 00:00:03,900\nnot"
    assert '"tokens": [1, 2]' in format_transcript(result, "json")
    late = Transcription("x", "en", None, 4000.0, [Segment(3725.5, 3726.0, " late", [1], -0.1, 0.0)])
    assert "01:02:05,500 --> 01:02:06,000" in format_transcript(late, "srt")
    assert "01:02:05.500 --> 01:02:06.000" in format_transcript(late, "vtt")
    assert "[62:05.50]late\n" in format_transcript(late, "lrc")


def _diarized() -> Transcription:
    result = _transcript(True)
    for segment, who in zip(result.segments, ["SPEAKER_00", "SPEAKER_01", "Ana"]):
        segment.speaker = who
        for w in segment.words:
            w.speaker = who
    result.speakers = [Speaker("SPEAKER_00", 2.5), Speaker("SPEAKER_01", 2.5), Speaker("Ana", 2.5)]
    return result


def test_each_format_with_speakers_as_literal_text():
    """WhisperX's labels, `[SPEAKER_00]: ` before each line or cue (a known name as is); JSON
    carries `speaker` on segments and words and the speakers with their speaking time."""
    result = _diarized()
    assert format_transcript(result, "txt") == (
        "[SPEAKER_00]: And so, my fellow Americans,\n"
        "[SPEAKER_01]: ask not --> what\n"
        "[Ana]: your country can do.\n"
    )
    # with words, a cue runs from its first word to its last (openai-whisper's writers)
    assert format_transcript(result, "srt") == (
        "1\n00:00:00,000 --> 00:00:02,400\n[SPEAKER_00]: And so, my fellow Americans,\n\n"
        "2\n00:00:03,000 --> 00:00:04,900\n[SPEAKER_01]: ask not -> what\n\n"
        "3\n00:00:06,000 --> 00:00:07,900\n[Ana]: your country can do.\n\n"
    )
    assert format_transcript(result, "vtt") == (
        "WEBVTT\n\n"
        "00:00.000 --> 00:02.400\n[SPEAKER_00]: And so, my fellow Americans,\n\n"
        "00:03.000 --> 00:04.900\n[SPEAKER_01]: ask not -> what\n\n"
        "00:06.000 --> 00:07.900\n[Ana]: your country can do.\n\n"
    )
    assert format_transcript(result, "tsv").splitlines()[2] == "3000\t5500\t[SPEAKER_01]: ask not --> what"
    assert format_transcript(result, "lrc").splitlines()[3] == "[00:06.00][Ana]: your country can do."
    packed = format_transcript(result, "srt", SubtitleOptions(max_line_width=80, max_line_count=3))
    assert packed.count("\n\n") == 3  # a cue never holds two speakers, however much room is left
    assert format_transcript(result, "srt", WORD_CUES).split("\n\n")[5] == (
        "6\n00:00:03,000 --> 00:00:03,400\n[SPEAKER_01]: ask"
    )
    data = json.loads(format_transcript(result, "json"))
    assert [s["speaker"] for s in data["segments"]] == ["SPEAKER_00", "SPEAKER_01", "Ana"]
    assert data["segments"][1]["words"][0]["speaker"] == "SPEAKER_01"
    assert data["speakers"] == [
        {"name": "SPEAKER_00", "speaking_time": 2.5}, {"name": "SPEAKER_01", "speaking_time": 2.5},
        {"name": "Ana", "speaking_time": 2.5},
    ]
    for fmt in STREAMED:
        assert "".join(stream_transcript(iter(result.segments), fmt)) == format_transcript(result, fmt)


def test_without_diarization_no_label_is_written():
    result = _transcript(True)
    assert not any("SPEAKER" in transcript_bytes(result, fmt).decode("latin-1") for fmt in FORMATS)
    data = json.loads(format_transcript(result, "json"))
    assert data["speakers"] is None and data["segments"][0]["speaker"] is None
