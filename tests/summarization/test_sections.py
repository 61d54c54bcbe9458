"""Summaries of transcripts: sections at segment boundaries, in order, without gaps or overlaps,
each with its time range and summary; the same from a result and from its JSON."""

import json

import pytest

import scriba
from scriba.runtime.loops import get_engine
from scriba.summarization.result import Section, hms
from scriba.summarization.sections import sections
from scriba.transcription.results import Segment, Transcription
from scriba.transcription.writers import to_json


def transcript(n: int, gap: float = 1.5) -> Transcription:
    """n segments of 4 s with `gap` s of silence between them; each says which it is."""
    segments = [
        Segment(i * (4 + gap) + 2, i * (4 + gap) + 6, f" Part {i} tells of item {i % 5}.", [], -0.2, 0.01)
        for i in range(n)
    ]
    return Transcription("".join(s.text for s in segments).strip(), "en", None, n * (4 + gap) + 4, segments)


def test_sections_cover_the_segments_in_order(tiny_bart):
    tokenizer = get_engine(tiny_bart[0]).tokenizer
    spans = [(s.start, s.end, s.text.strip()) for s in transcript(40).segments]
    cut = sections(spans, tokenizer, 256)
    assert len(cut) > 3
    assert " ".join(text for _, _, text in cut) == " ".join(text for _, _, text in spans)
    assert cut[0][0] == spans[0][0] and cut[-1][1] == spans[-1][1]
    assert all(a[1] == b[0] for a, b in zip(cut, cut[1:]))  # each ends where the next begins
    assert all(len(tokenizer(text)["input_ids"]) <= 256 for _, _, text in cut)
    starts = {s[0] for s in spans}
    assert all(start in starts for start, _, _ in cut)  # cut at segment boundaries


def test_a_segment_too_long_for_one_input_shares_its_time():
    from scriba.summarization.pieces import token_counter

    class Bytes:  # a token per byte, as the tiny tokenizer
        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": list(text.encode()) + ([0, 2] if add_special_tokens else [])}

    long_text = " ".join(f"Sentence {i:03d} says hi." for i in range(30))  # 659 bytes
    cut = sections([(10.0, 40.0, long_text), (41.0, 43.0, "Short.")], Bytes(), 256)
    assert len(cut) == 3 and " ".join(t for _, _, t in cut) == long_text + " Short."
    assert cut[0][0] == 10.0 and cut[-1][1] == 43.0 and all(a[1] == b[0] for a, b in zip(cut, cut[1:]))
    assert all(token_counter(Bytes())(t) <= 254 for _, _, t in cut)
    # 11, 11 and 8 sentences (241, 241 and 175 bytes): the 30 s shared out by their lengths
    assert [c[0] for c in cut] == pytest.approx([10.0, 10 + 30 * 241 / 657, 10 + 30 * 482 / 657])


def test_summarize_a_transcript_and_its_json(tiny_bart):
    result = transcript(40)
    summary = scriba.summarize(result, model=tiny_bart[0], max_length=20)
    assert summary.pieces[0] == len(summary.sections) > 3
    assert summary.sections[0].start == result.segments[0].start
    assert summary.sections[-1].end == result.segments[-1].end
    assert all(a.end == b.start and a.start < a.end for a, b in zip(summary.sections, summary.sections[1:]))
    assert all(s.summary for s in summary.sections) and str(summary)
    from_json = scriba.summarize(json.loads(to_json(result)), model=tiny_bart[0], max_length=20)
    assert from_json == summary and from_json.sections == summary.sections
    as_dict = summary.to_dict()
    assert as_dict["levels"] == summary.levels and len(as_dict["sections"]) == len(summary.sections)
    assert (
        as_dict["sections"][0]["time_range"]
        == f"{hms(result.segments[0].start)}–{hms(summary.sections[0].end)}"
    )


def test_a_short_transcript_is_one_section(tiny_bart):
    summary = scriba.summarize(transcript(3), model=tiny_bart[0])
    assert summary.pieces == (1,) and summary.sections == (Section(2.0, 17.0, str(summary)),)


def test_time_ranges_and_bad_transcripts(tiny_bart):
    assert Section(750.0, 1450.4, "x").time_range == "00:12:30–00:24:10"
    assert hms(3725.6) == "01:02:06"
    with pytest.raises(ValueError, match="transcript 0 has no text"):
        scriba.summarize({"segments": [{"start": 0, "end": 1, "text": "  "}]}, model=tiny_bart[0])
    with pytest.raises(ValueError, match="transcript 1: each segment needs start, end and text"):
        scriba.summarize(["Fine text.", {"segments": [{"text": "no times"}]}], model=tiny_bart[0])
    with pytest.raises(TypeError, match="text 0 is a int, not a str or a transcript"):
        scriba.summarize(3, model=tiny_bart[0])


def test_a_diarized_transcript_is_summarized_with_who_said_what(tiny_bart):
    """The text handed to the summarizer carries each segment's speaker: summarizing the
    diarized transcript is summarizing its segments written as "SPEAKER_00: ..."."""
    from scriba.summarization.sections import transcript_spans

    diarized = transcript(12)
    for i, s in enumerate(diarized.segments):
        s.speaker = ("SPEAKER_00", "Ana")[i % 2]
    spans = transcript_spans(diarized)
    assert spans[0][2] == "SPEAKER_00: Part 0 tells of item 0."
    assert spans[1][2] == "Ana: Part 1 tells of item 1."
    assert transcript_spans(json.loads(to_json(diarized))) == spans
    written = transcript(12)
    for s, d in zip(written.segments, diarized.segments):
        s.text = f" {d.speaker}: {s.text.strip()}"
    summary = scriba.summarize(diarized, model=tiny_bart[0], max_length=20)
    assert summary == scriba.summarize(written, model=tiny_bart[0], max_length=20)
    assert summary != scriba.summarize(transcript(12), model=tiny_bart[0], max_length=20)
