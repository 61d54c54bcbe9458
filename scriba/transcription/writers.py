"""Transcripts as txt, srt, vtt, tsv, lrc or json: openai-whisper's writers' text (srt, vtt, tsv, txt),
whisper.cpp's lyrics (lrc); and as documents (docx, html, md: documents.py)."""

from __future__ import annotations

import json
import os
import re

from scriba.transcription.documents import DOCUMENTS, render_document, to_html, to_markdown
from scriba.transcription.results import Transcription
from scriba.transcription.subtitles import SubtitleOptions, cues, labelled, well_formed

TEXT_FORMATS = ("txt", "srt", "vtt", "tsv", "lrc", "json")
FORMATS = TEXT_FORMATS + DOCUMENTS
LINE_FORMATS = ("srt", "vtt")  # the formats whose cues follow SubtitleOptions


def _clock(seconds: float, decimal: str, hours: bool = True) -> str:
    """openai-whisper's timestamp: [hh:]mm:ss<decimal>mmm, the hours always or when not 0."""
    millis = round(max(seconds, 0.0) * 1000.0)
    hour, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    lead = f"{hour:02d}:" if hours or hour > 0 else ""
    return f"{lead}{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _txt_line(segment) -> str:
    return labelled(segment.text.strip(), segment.speaker) + "\n"


def _srt_cue(i: int, start: float, end: float, text: str) -> str:
    return f"{i}\n{_clock(start, ',')} --> {_clock(end, ',')}\n{text.replace('-->', '->')}\n\n"


def _vtt_cue(start: float, end: float, text: str) -> str:
    span = f"{_clock(start, '.', hours=False)} --> {_clock(end, '.', hours=False)}"
    return f"{span}\n{text.replace('-->', '->')}\n\n"


def _tsv_line(segment) -> str:
    """openai-whisper's tsv: integer milliseconds, tabs in the text made spaces."""
    text = labelled(segment.text.strip(), segment.speaker).replace("\t", " ")
    return f"{round(1000 * segment.start)}\t{round(1000 * segment.end)}\t{text}\n"


def _lrc_line(segment) -> str:
    """[mm:ss.xx]text, as whisper.cpp writes lyrics (hundredths, minutes past 59 kept)."""
    hundredths = int(max(segment.start, 0.0) * 100)
    minutes, hundredths = divmod(hundredths, 6000)
    text = labelled(segment.text.strip(), segment.speaker)
    return f"[{minutes:02d}:{hundredths // 100:02d}.{hundredths % 100:02d}]{text}\n"


_HEADS = {"vtt": "WEBVTT\n\n", "tsv": "start\tend\ttext\n", "lrc": "[by:scriba]\n"}
_LINES = {"txt": _txt_line, "tsv": _tsv_line, "lrc": _lrc_line}


def stream_transcript(segments, fmt: str, subtitles: SubtitleOptions | None = None):
    """txt, srt, vtt, tsv or lrc a piece per segment, as the segments arrive: the pieces joined
    are `format_transcript` of the whole transcript (cues packed across segments, by
    max_line_width with max_line_count, come whole: the transcript written at the end)."""
    if fmt not in ("txt", *LINE_FORMATS, *_LINES):
        raise ValueError(f"{fmt} is written whole, not segment by segment")
    subtitles = subtitles or SubtitleOptions()
    if fmt in LINE_FORMATS and subtitles.max_line_width and subtitles.max_line_count:
        yield _HEADS.get(fmt, "") + _cue_text(fmt, cues(list(segments), subtitles))
        return
    yield _HEADS.get(fmt, "")
    number, last = 0, 0.0
    for segment in segments:
        if fmt in _LINES:
            yield _LINES[fmt](segment)
            continue
        for cue in well_formed(cues([segment], subtitles), after=last):
            number, last = number + 1, cue[1]
            yield _srt_cue(number, *cue) if fmt == "srt" else _vtt_cue(*cue)


def to_txt(result: Transcription, subtitles: SubtitleOptions | None = None) -> str:
    """One line per segment (after its speaker's label, when diarized)."""
    return "".join(_txt_line(seg) for seg in result.segments)


def _cue_text(fmt: str, cues_: list) -> str:
    if fmt == "srt":
        return "".join(_srt_cue(i, *cue) for i, cue in enumerate(cues_, start=1))
    return "".join(_vtt_cue(*cue) for cue in cues_)


def to_srt(result: Transcription, subtitles: SubtitleOptions | None = None) -> str:
    """openai-whisper's srt, its lines cut by `subtitles` when the segments have words."""
    return _cue_text("srt", cues(result.segments, subtitles))


def to_vtt(result: Transcription, subtitles: SubtitleOptions | None = None) -> str:
    """openai-whisper's vtt (hours only past the first hour), its lines cut as srt's."""
    return _HEADS["vtt"] + _cue_text("vtt", cues(result.segments, subtitles))


def to_tsv(result: Transcription, subtitles: SubtitleOptions | None = None) -> str:
    return _HEADS["tsv"] + "".join(_tsv_line(seg) for seg in result.segments)


def to_lrc(result: Transcription, subtitles: SubtitleOptions | None = None) -> str:
    return _HEADS["lrc"] + "".join(_lrc_line(seg) for seg in result.segments)


_NUMBER_LIST = re.compile(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]")


def to_json(result: Transcription, subtitles: SubtitleOptions | None = None) -> str:
    """Indented, with each token list on one line."""
    text = json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
    return (
        _NUMBER_LIST.sub(lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text) + "\n"
    )


_WRITERS = {"txt": to_txt, "srt": to_srt, "vtt": to_vtt, "tsv": to_tsv, "lrc": to_lrc, "json": to_json}
_TEXT_DOCUMENTS = {"html": to_html, "md": to_markdown}


def format_transcript(
    result: Transcription, fmt: str, subtitles: SubtitleOptions | None = None, times: bool = False
) -> str:
    """The transcript as text in `fmt` (any format but docx, which is a binary file).
    `subtitles`: how SRT/VTT cues are cut from the words (subtitles.py; WORD_CUES: a cue per word);
    `times`: the documents' paragraphs show when they start."""
    if fmt in _TEXT_DOCUMENTS:
        return _TEXT_DOCUMENTS[fmt](result, times)
    if fmt == "docx":
        raise ValueError("docx is a binary file, not text: write it to a file (--output-dir)")
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    return _WRITERS[fmt](result, subtitles)


def transcript_bytes(
    result: Transcription, fmt: str, subtitles: SubtitleOptions | None = None, times: bool = False,
    title: str = "Transcript",
) -> bytes:
    """The file's bytes in any of FORMATS (text in UTF-8); `title` heads a document."""
    if fmt in DOCUMENTS:
        return render_document(result, fmt, times, title)
    return format_transcript(result, fmt, subtitles).encode("utf-8")


def write_transcript(
    result: Transcription, fmt: str, output_dir: str, stem: str, subtitles: SubtitleOptions | None = None,
    times: bool = False,
) -> str:
    """Write `<output_dir>/<stem>.<fmt>` (the stem may hold sub-folders) and return its path."""
    path = os.path.join(output_dir, f"{stem}.{fmt}")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    title = os.path.basename(stem)
    with open(path, "wb") as f:
        f.write(transcript_bytes(result, fmt, subtitles, times, title))
    return path
