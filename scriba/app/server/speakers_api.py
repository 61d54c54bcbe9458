"""Speakers through the audio API, in OpenAI's shape: `response_format=diarized_json` (segments
with `speaker`: A, B, ... or a known speaker's name; `type` transcript.text.segment), the known
speakers as `known_speaker_names[]` with `known_speaker_references[]` (short clips as data URLs),
and Scriba's fields `diarize`, `num_speakers`, `min_speakers`, `max_speakers` (speakers in
verbose_json, srt, vtt and text) and `use_voice_library` (false: the voices kept on the server,
`scriba voices`, name no one)."""

from __future__ import annotations

import base64
import binascii
import string

from scriba.app.server.errors import APIError
from scriba.transcription.results import Transcription

NAMES, REFERENCES = "known_speaker_names[]", "known_speaker_references[]"


def speaker_options(form, fmt: str) -> dict:
    """The form's speaker fields as TranscribeOptions keyword arguments (diarized_json, a
    count or known speakers turn diarization on)."""
    options = {}
    for name in ("num_speakers", "min_speakers", "max_speakers"):
        text = form.get(name)
        if isinstance(text, str) and text.strip():
            try:
                options[name] = int(text)
            except ValueError:
                raise APIError(400, f"{name} must be a whole number, got {text!r}", name) from None
    known = known_speakers(form.getlist(NAMES), form.getlist(REFERENCES))
    if known:
        options["known_speakers"] = known
    flag = _switch(form, "diarize")
    if fmt == "diarized_json" or flag in ("true", "1") or options:
        options["diarize"] = True
    if _switch(form, "use_voice_library") in ("false", "0"):
        options["use_voice_library"] = False
    return options


def _switch(form, name: str) -> str:
    """A true/false form field as given ('' when it is not)."""
    flag = str(form.get(name, "")).strip().lower()
    if flag not in ("", "true", "false", "1", "0"):
        raise APIError(400, f"{name} must be true or false, got {flag!r}", name)
    return flag


def known_speakers(names: list, references: list) -> dict[str, bytes]:
    """{name: the clip's bytes}; names and references must pair up, each reference a data URL."""
    if len(names) != len(references):
        raise APIError(
            400, f"{len(names)} known_speaker_names[] but {len(references)} known_speaker_references[]: "
            "give one reference clip per name", NAMES if len(names) > len(references) else REFERENCES,
        )
    known = {}
    for i, (name, reference) in enumerate(zip(names, references)):
        if not isinstance(name, str) or not name.strip():
            raise APIError(400, f"known_speaker_names[{i}] is empty", NAMES)
        known[name.strip()] = _data_url_bytes(reference, i)
    return known


def _data_url_bytes(reference, i: int) -> bytes:
    """The bytes of a `data:<type>;base64,<data>` URL."""
    head, comma, data = str(reference).partition(",")
    if not (head.startswith("data:") and head.endswith(";base64") and comma):
        message = f"known_speaker_references[{i}] must be a data URL (data:audio/...;base64,...)"
        raise APIError(400, message, REFERENCES)
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise APIError(400, f"known_speaker_references[{i}] is not valid base64", REFERENCES) from None


def letter(label: str | None, order: list[str]) -> str | None:
    """OpenAI's labels for unnamed speakers, in `order`: A, B, ... (AA, AB, ... past Z); a known
    name as is."""
    unnamed = [n for n in order if n.startswith("SPEAKER_")]
    if label is None or label not in unnamed:
        return label
    index, name = unnamed.index(label), ""
    while True:
        index, rest = divmod(index, 26)
        name = string.ascii_uppercase[rest] + name
        if index == 0:
            return name
        index -= 1


def diarized(result: Transcription, task: str = "transcribe") -> dict:
    """The transcription as OpenAI's TranscriptionDiarized."""
    order = [s.name for s in result.speakers or []]
    return {
        "task": task,
        "duration": round(result.duration, 3),
        "text": result.text,
        "segments": [segment_event(i, s, order) for i, s in enumerate(result.segments)],
        "usage": {"type": "duration", "seconds": round(result.duration, 3)},
    }


def segment_event(i: int, segment, order: list[str]) -> dict:
    """A segment as OpenAI's transcript.text.segment (also the stream's event)."""
    return {
        "type": "transcript.text.segment",
        "id": f"seg_{i}",
        "start": round(segment.start, 2),
        "end": round(segment.end, 2),
        "text": segment.text,
        "speaker": letter(segment.speaker, order) or "A",
    }
