"""Transcripts as txt, srt, vtt or json."""

from __future__ import annotations

import json
import os

from scriba.app.segments import Transcription

FORMATS = ("txt", "srt", "vtt", "json")


def _clock(seconds: float, decimal: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def to_txt(result: Transcription) -> str:
    """One line per segment."""
    return "".join(seg.text.strip() + "\n" for seg in result.segments)


def to_srt(result: Transcription) -> str:
    blocks = [
        f"{i}\n{_clock(seg.start, ',')} --> {_clock(seg.end, ',')}\n{seg.text.strip().replace('-->', '->')}\n"
        for i, seg in enumerate(result.segments, start=1)
    ]
    return "\n".join(blocks)


def to_vtt(result: Transcription) -> str:
    cues = [
        f"{_clock(seg.start, '.')} --> {_clock(seg.end, '.')}\n{seg.text.strip().replace('-->', '->')}\n"
        for seg in result.segments
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


def to_json(result: Transcription) -> str:
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n"


_WRITERS = {"txt": to_txt, "srt": to_srt, "vtt": to_vtt, "json": to_json}


def format_transcript(result: Transcription, fmt: str) -> str:
    if fmt not in _WRITERS:
        raise ValueError(f"unknown format {fmt!r}; use one of {FORMATS}")
    return _WRITERS[fmt](result)


def write_transcript(result: Transcription, fmt: str, output_dir: str, stem: str) -> str:
    """Write `<output_dir>/<stem>.<fmt>` and return its path."""
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, f"{stem}.{fmt}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(format_transcript(result, fmt))
    return path
