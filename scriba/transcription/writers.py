"""Transcripts as txt, srt, vtt or json."""

from __future__ import annotations

import json
import os
import re

from scriba.transcription.results import Transcription

FORMATS = ("txt", "srt", "vtt", "json")


def _clock(seconds: float, decimal: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def labelled(text: str, speaker: str | None) -> str:
    """The text after its speaker's label, as WhisperX writes it: `[SPEAKER_00]: text`."""
    return text if speaker is None else f"[{speaker}]: {text}"


def to_txt(result: Transcription, word_cues: bool = False) -> str:
    """One line per segment (after its speaker's label, when diarized)."""
    return "".join(labelled(seg.text.strip(), seg.speaker) + "\n" for seg in result.segments)


def _cues(segments, word_cues: bool) -> list[tuple[float, float, str]]:
    """(start, end, text) per segment, or per word when asked and the words are there; the text
    after its speaker's label when diarized."""
    if word_cues and all(seg.words is not None for seg in segments):
        return [(w.start, w.end, labelled(w.word.strip(), w.speaker)) for seg in segments for w in seg.words]
    return [(seg.start, seg.end, labelled(seg.text.strip(), seg.speaker)) for seg in segments]


def _srt_cue(i: int, start: float, end: float, text: str) -> str:
    return f"{i}\n{_clock(start, ',')} --> {_clock(end, ',')}\n{text.replace('-->', '->')}\n"


def _vtt_cue(start: float, end: float, text: str) -> str:
    return f"{_clock(start, '.')} --> {_clock(end, '.')}\n{text.replace('-->', '->')}\n"


def to_srt(result: Transcription, word_cues: bool = False) -> str:
    cues = _cues(result.segments, word_cues)
    return "\n".join(_srt_cue(i, *cue) for i, cue in enumerate(cues, start=1))


def to_vtt(result: Transcription, word_cues: bool = False) -> str:
    return "WEBVTT\n\n" + "\n".join(_vtt_cue(*cue) for cue in _cues(result.segments, word_cues))


def stream_transcript(segments, fmt: str, word_cues: bool = False):
    """txt, srt or vtt a piece per segment, as the segments arrive: the pieces joined are
    `format_transcript` of the whole transcript."""
    if fmt not in ("txt", "srt", "vtt"):
        raise ValueError(f"{fmt} is written whole, not segment by segment")
    number = 0
    if fmt == "vtt":
        yield "WEBVTT\n\n"
    for segment in segments:
        if fmt == "txt":
            yield labelled(segment.text.strip(), segment.speaker) + "\n"
            continue
        for cue in _cues([segment], word_cues):
            number += 1
            between = "\n" if number > 1 else ""
            yield between + (_srt_cue(number, *cue) if fmt == "srt" else _vtt_cue(*cue))


_NUMBER_LIST = re.compile(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]")


def to_json(result: Transcription, word_cues: bool = False) -> str:
    """Indented, with each token list on one line."""
    text = json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
    return (
        _NUMBER_LIST.sub(lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text) + "\n"
    )


_WRITERS = {"txt": to_txt, "srt": to_srt, "vtt": to_vtt, "json": to_json}


def format_transcript(result: Transcription, fmt: str, word_cues: bool = False) -> str:
    """`word_cues`: SRT/VTT get one cue per word (with word timestamps)."""
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")
    return _WRITERS[fmt](result, word_cues)


def write_transcript(result: Transcription, fmt: str, output_dir: str, stem: str, word_cues=False) -> str:
    """Write `<output_dir>/<stem>.<fmt>` and return its path."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, f"{stem}.{fmt}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(format_transcript(result, fmt, word_cues))
    return path
