"""Subtitle cues people can play: every writer's cues in order, none empty or of no length, none
starting before the one before it ends; JSON times to the millisecond. On segments made to break
those rules (a word aligned to a point, segments that overlap) and on a diarized real recording,
the files read back."""

import json
import os
import re

import paths
import pytest

import scriba
from scriba.transcription.results import Segment, Transcription, Word
from scriba.transcription.subtitles import SubtitleOptions, WORD_CUES
from scriba.transcription.writers import format_transcript, stream_transcript

CUE_TIME = re.compile(r"^(?:(\d+):)?(\d\d):(\d\d)[,.](\d{3}) --> (?:(\d+):)?(\d\d):(\d\d)[,.](\d{3})$")
CUTS = [SubtitleOptions(), WORD_CUES, SubtitleOptions(highlight_words=True),
        SubtitleOptions(max_line_width=42, max_line_count=2), SubtitleOptions(max_words_per_line=3)]


def read_cues(text: str) -> list[tuple[int, int, str]]:
    """(start ms, end ms, text) of each cue of an SRT or VTT file, as a player reads them."""
    out = []
    for block in text.replace("WEBVTT\n", "", 1).strip().split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.isdigit()]
        m = CUE_TIME.match(lines[0])
        assert m, f"not a cue's times: {lines[0]!r}"
        h1, m1, s1, ms1, h2, m2, s2, ms2 = (int(g or 0) for g in m.groups())
        out.append(((h1 * 60 + m1) * 60_000 + s1 * 1000 + ms1, (h2 * 60 + m2) * 60_000 + s2 * 1000 + ms2,
                    "\n".join(lines[1:])))
    return out


def assert_playable(cues: list[tuple[int, int, str]]) -> None:
    assert cues
    for i, (start, end, text) in enumerate(cues):
        assert end > start, f"cue {i + 1} has no length: {start} -> {end}"
        assert text.strip(), f"cue {i + 1} is empty"
        if i:
            assert start >= cues[i - 1][1], f"cue {i + 1} starts at {start}, before cue {i} ends"


def _broken() -> Transcription:
    """Three segments: the second's one word aligned to a point, the third starting before the
    second ends (as a diarized segment split at a turn can), and a floating-point time."""
    words = [
        [Word(6.0, 6.5, " This", 0.9), Word(6.5, 8.36, " is", 0.9)],
        [Word(8.36, 8.36, " Diane.", 0.9)],
        [Word(8.2, 8.9, " And", 0.9), Word(8.9, 17.900000000000002, " I'm", 0.9)],
    ]
    segments = [Segment(w[0].start, w[-1].end, "".join(x.word for x in w), [1], -0.2, 0.0, words=w)
                for w in words]
    return Transcription("", "en", None, 20.0, segments)


@pytest.mark.parametrize("subtitles", CUTS)
@pytest.mark.parametrize("fmt", ["srt", "vtt"])
def test_cues_made_from_broken_times_are_playable(fmt, subtitles):
    result = _broken()
    assert_playable(read_cues(format_transcript(result, fmt, subtitles)))
    bare = Transcription("", "en", None, 20.0,
                         [Segment(s.start, s.end, s.text, [1], -0.2, 0.0) for s in result.segments])
    assert_playable(read_cues(format_transcript(bare, fmt)))


@pytest.mark.parametrize("subtitles", [SubtitleOptions(), WORD_CUES])
@pytest.mark.parametrize("fmt", ["srt", "vtt"])
def test_cues_streamed_a_segment_at_a_time_are_the_whole_file_s(fmt, subtitles):
    result = _broken()
    streamed = "".join(stream_transcript(result.segments, fmt, subtitles))
    assert streamed == format_transcript(result, fmt, subtitles)


def test_a_cue_of_no_length_shows_and_the_next_waits_for_it():
    cues = read_cues(format_transcript(_broken(), "srt"))
    assert [(a, b) for a, b, _ in cues] == [(6000, 8360), (8360, 8560), (8560, 17900)]
    assert [text for _, _, text in cues] == ["This is", "Diane.", "And I'm"]


def test_json_times_are_to_the_millisecond():
    data = json.loads(format_transcript(_broken(), "json"))
    assert data["segments"][2]["end"] == 17.9 and data["segments"][2]["words"][1]["end"] == 17.9
    assert "17.900000000000002" not in format_transcript(_broken(), "json")
    assert _broken().to_dict()["segments"][2]["end"] == 17.9


@pytest.fixture(scope="module")
def diarized():
    clip = os.path.join(paths.ROOT, "assets", "two_speakers.ogg")
    return scriba.transcribe(clip, diarize=True, word_timestamps=True)


@pytest.mark.parametrize("subtitles", CUTS)
@pytest.mark.parametrize("fmt", ["srt", "vtt"])
def test_every_writer_s_cues_on_a_diarized_recording_are_playable(diarized, fmt, subtitles):
    assert len(diarized.speakers) == 2
    cues = read_cues(format_transcript(diarized, fmt, subtitles))
    assert_playable(cues)
    labels = {re.match(r"\[(\w+)\]: ", text).group(1) for _, _, text in cues}
    assert labels == {s.name for s in diarized.speakers}
    data = json.loads(format_transcript(diarized, "json"))
    times = [x[k] for s in data["segments"] for x in [s, *s["words"]] for k in ("start", "end")]
    assert all(round(t, 3) == t for t in times)
