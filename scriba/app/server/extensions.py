"""Form fields the audio routes take beyond OpenAI's: openai-whisper's and faster-whisper's
transcription options under their own names (`prompt` stays OpenAI's initial prompt). A value
that does not parse is a 400 naming its field; TranscribeOptions checks the rest."""

from __future__ import annotations

from scriba.app.server.errors import APIError
from scriba.transcription.subtitles import SubtitleOptions


def _flag(text: str) -> bool:
    if text.strip().lower() in ("true", "1", "yes", "on"):
        return True
    if text.strip().lower() in ("false", "0", "no", "off"):
        return False
    raise ValueError("true or false")


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


# form field -> (TranscribeOptions field, parser)
FIELDS = {
    "hotwords": ("hotwords", str),
    "prefix": ("prefix", str),
    "multilingual": ("multilingual", _flag),
    "clip_timestamps": ("clip_timestamps", str),
    "max_new_tokens": ("max_new_tokens", int),
    "suppress_tokens": ("suppress_tokens", _ids),
    "suppress_blank": ("suppress_blank", _flag),
    "max_initial_timestamp": ("max_initial_timestamp", float),
    "prepend_punctuations": ("prepend_punctuations", str),
    "append_punctuations": ("append_punctuations", str),
    "beam_size": ("beam_size", int),
    "best_of": ("best_of", int),
    "prompt_reset_on_temperature": ("prompt_reset_on_temperature", float),
    "patience": ("patience", float),
    "length_penalty": ("length_penalty", float),
    "repetition_penalty": ("repetition_penalty", float),
    "no_repeat_ngram_size": ("no_repeat_ngram_size", int),
    "condition_on_previous_text": ("condition_on_previous_text", _flag),
    "vad_filter": ("vad_filter", _flag),
    "without_timestamps": ("timestamps", lambda text: not _flag(text)),
}


def extension_options(form) -> dict:
    """The extension fields present in a request's form, as TranscribeOptions keyword arguments."""
    options = {}
    for name, (field, parse) in FIELDS.items():
        text = form.get(name)
        if text is None or not isinstance(text, str):
            continue
        try:
            options[field] = parse(text)
        except ValueError:
            raise APIError(400, f"{name} could not be read: {text!r}", name) from None
    return options


# openai-whisper's subtitle line control (subtitles.py), for srt and vtt; each needs word times
SUBTITLE_FIELDS = {
    "max_line_width": int, "max_line_count": int, "max_words_per_line": int, "highlight_words": _flag,
}


def subtitle_fields(form, fmt: str) -> SubtitleOptions:
    """The subtitle fields present in a request's form; one given for a format other than srt and
    vtt, or not read, is a 400 naming it."""
    values = {}
    for name, parse in SUBTITLE_FIELDS.items():
        text = form.get(name)
        if text is None or not isinstance(text, str):
            continue
        if fmt not in ("srt", "vtt"):
            raise APIError(400, f"{name} applies to response_format srt and vtt, not {fmt}", name)
        try:
            values[name] = parse(text)
            SubtitleOptions(**{name: values[name]})  # checks the value
        except ValueError as e:
            raise APIError(400, f"{name} could not be read: {text!r} ({e})", name) from None
    return SubtitleOptions(**values)
