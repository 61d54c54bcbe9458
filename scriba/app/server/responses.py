"""Transcriptions in OpenAI's response formats: json, text, srt, vtt, verbose_json (segments with
id, seek, start, end, text, tokens, temperature, avg_logprob, compression_ratio, no_speech_prob;
words; with diarization, speakers), diarized_json (speakers_api.py), and the streamed events
(transcript.text.delta / transcript.text.segment / transcript.text.done)."""

from __future__ import annotations

import json

from fastapi.responses import JSONResponse, PlainTextResponse

from scriba.app.server.speakers_api import diarized
from scriba.models.whisper.language_names import LANGUAGES
from scriba.transcription.results import Transcription
from scriba.transcription.subtitles import SubtitleOptions
from scriba.transcription.writers import to_lrc, to_srt, to_tsv, to_txt, to_vtt

# OpenAI's, then openai-whisper's tsv and whisper.cpp's lrc
FORMATS = ("json", "text", "srt", "vtt", "verbose_json", "diarized_json", "tsv", "lrc")


def language_name(code: str | None) -> str:
    return LANGUAGES.get(code or "", code or "")


def verbose(result: Transcription, task: str, words: bool, segments: bool) -> dict:
    body = {
        "task": task,
        "language": language_name(result.language),
        "duration": round(result.duration, 3),
        "text": result.text,
    }
    if segments:
        body["segments"] = [
            {
                "id": i,
                "seek": int(s.start * 100),
                "start": round(s.start, 2),
                "end": round(s.end, 2),
                "text": s.text,
                "tokens": list(s.tokens),
                "temperature": s.temperature,
                "avg_logprob": s.avg_logprob,
                "compression_ratio": s.compression_ratio,
                "no_speech_prob": s.no_speech_prob,
                "language": language_name(s.language),  # Scriba's: per segment with multilingual
                **({"speaker": s.speaker} if s.speaker else {}),  # Scriba's: with diarize
            }
            for i, s in enumerate(result.segments)
        ]
    if result.speakers is not None:
        body["speakers"] = [{"speaker": p.name, "speaking_time": p.speaking_time} for p in result.speakers]
    if words:
        body["words"] = [
            {"word": w.word.strip(), "start": round(w.start, 2), "end": round(w.end, 2)}
            | ({"speaker": w.speaker} if w.speaker else {})
            for s in result.segments
            for w in s.words or []
        ]
    return body


def render(
    result: Transcription, fmt: str, task: str, granularities: set[str], subtitles: SubtitleOptions = None
):
    if fmt == "json":
        return JSONResponse({"text": result.text})
    if fmt == "text":
        return PlainTextResponse(to_txt(result) if result.speakers is not None else result.text + "\n")
    if fmt == "diarized_json":
        return JSONResponse(diarized(result, task))
    if fmt == "srt":
        return PlainTextResponse(to_srt(result, subtitles))
    if fmt == "vtt":
        return PlainTextResponse(to_vtt(result, subtitles), media_type="text/vtt")
    if fmt == "tsv":
        return PlainTextResponse(to_tsv(result), media_type="text/tab-separated-values")
    if fmt == "lrc":
        return PlainTextResponse(to_lrc(result))
    segments = "segment" in granularities or not granularities
    return JSONResponse(verbose(result, task, "word" in granularities, segments))


def sse(event: dict) -> str:
    return f"data: {json.dumps(event, ensure_ascii=False)}\n\n"


def delta_event(text: str) -> str:
    return sse({"type": "transcript.text.delta", "delta": text})


def done_event(text: str) -> str:
    return sse({"type": "transcript.text.done", "text": text})


def error_event(error: Exception) -> str:
    """The stream's last event when it fails: the error's one line (a bad file names itself)."""
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    return sse({"type": "error", "error": {"message": message, "type": type(error).__name__}})
