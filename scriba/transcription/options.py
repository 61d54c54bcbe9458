"""How to transcribe, as one frozen, checked object: `TranscribeOptions`.

Every surface builds one, converting its own inputs once: `transcribe(**options)` and
`transcribe_stream` (`TranscribeOptions.build`), the CLI (`cli.transcribe_options`), the web app
(its tab's handler), the server (`audio_api.options_of`) and `scriba batch` (its workers get the
object itself). Callbacks (progress, on_segments, cancel) are not options: they belong to one
call. What needs the model (is the language one it knows?) is checked when the model is loaded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scriba.transcription.language_vote import MAX_WINDOWS, THRESHOLD, LanguageVote
from scriba.transcription.vad_options import VadOptions

MODES = ("batched", "sequential")
# faster-whisper's transcribe() names that are said otherwise here
FASTER_WHISPER_NAMES = {
    "without_timestamps": "timestamps=False",
    "log_prob_threshold": "logprob_threshold",
    "log_progress": "progress=True",
    "chunk_length": "none: a window is Whisper's 30 s",
}
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # openai-whisper's fallback
# openai-whisper's guards: a window is decoded again when its text repeats this much (gzip ratio) or
# its mean log-prob is below LOGPROB; it is silence when <|nospeech|> is above NO_SPEECH and
# the log-prob is low too (guards.py)
COMPRESSION_RATIO, LOGPROB, NO_SPEECH = 2.4, -1.0, 0.6
# openai-whisper's marks joined to the next / the previous word (words.py)
PREPEND = "\"'“¡¿([{-"
APPEND = "\"'.。,，!！?？:：”)]}、"
VAD_CHOICES = {"auto": None, "on": True, "off": False}  # the CLI's and the page's words -> vad_filter


@dataclass(frozen=True)
class TranscribeOptions:
    """`model`: a Whisper checkpoint (Hugging Face id or folder, or a CTranslate2 folder); None is
    the bundled tiny.en. `language`: a code or name (None: detect; without it, a multilingual model
    detects the language from the file's first speech window, and when that window's probability
    is not above `language_detection_threshold`, up to `language_detection_segments` speech
    windows vote, language_vote.py). `mode`: "batched" (every window at once) or "sequential"
    (openai-whisper's loop). `temperature`: one or a fallback sequence, tried while a window's
    output fails the compression-ratio or log-prob thresholds. `vad_filter`: decode only the speech
    Silero VAD finds (None: for audio longer than one 30 s window); `vad_parameters`: VadOptions or
    a dict of them. `word_timestamps`: each segment gets `words` and starts at its first word.
    `diarize`: who spoke when (speaker_labels.py): segments and words get `speaker`, a segment is
    split where the speaker changes, the result lists `speakers`; `num_speakers` (exactly), or
    `min_speakers` / `max_speakers` (bounds; found from the voices when not given);
    `known_speakers`: {name: a short clip of that speaker} names the voices that match, beside
    the voices kept in the user's voice library (`scriba voices add`; kept_voices.py) unless
    `use_voice_library` is False;
    `speaker_model`: another speaker embedding (a SpeechBrain hub model's name, or a function;
    scriba/speakers/encoders.py), the bundled Resemblyzer encoder when None.
    `hallucination_silence_threshold` (seconds; word alignment runs for it): an improbable segment
    alone in that much silence is dropped and the audio after it decoded again (openai-whisper's
    rule). `on_error`: in a list, an unreadable input gives a result with `error` set ("report")
    or raises ("raise"). `engine`: EngineConfig settings for the shared engine.

    faster-whisper's options, with its meaning, in both modes: `hotwords` (hint phrases put before
    each window's previous text, but in a window that gets the prefix), `prefix` (the text the
    file's first window starts with), `multilingual` (each window's language detected: segments
    and words carry it), `clip_timestamps` ("start,end,start,end" seconds or a list of them, the
    last end optional: only these clips are decoded, windows never cross one), `max_new_tokens` (a
    window's tokens at most), `suppress_tokens` (token ids never written; -1: the model's
    non-speech set), `suppress_blank` (no blank or <|endoftext|> first), `max_initial_timestamp`
    (seconds; None: no limit), `prepend_punctuations` / `append_punctuations` (marks joined to the
    next / previous word), `best_of` (samples drawn at a fallback temperature, the likeliest kept),
    `prompt_reset_on_temperature` (a window decoded above it gives the next no previous text), for
    beam search `patience`, `length_penalty`; for every search `repetition_penalty`,
    `no_repeat_ngram_size`. faster-whisper's `without_timestamps=True` is `timestamps=False` here."""

    model: str | None = None
    language: str | None = None
    task: str = "transcribe"
    timestamps: bool = True
    mode: str = "batched"
    beam_size: int = 1
    temperature: float | Sequence[float] = TEMPERATURES
    compression_ratio_threshold: float | None = COMPRESSION_RATIO
    logprob_threshold: float | None = LOGPROB
    no_speech_threshold: float | None = NO_SPEECH
    condition_on_previous_text: bool = True
    initial_prompt: str | None = None
    vad_filter: bool | None = None
    vad_parameters: VadOptions | dict | None = None
    word_timestamps: bool = False
    diarize: bool = False
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    known_speakers: Mapping[str, Any] | None = None
    use_voice_library: bool = True
    speaker_model: Any = None
    hallucination_silence_threshold: float | None = None
    language_detection_threshold: float = THRESHOLD
    language_detection_segments: int = MAX_WINDOWS
    on_error: str = "report"
    hotwords: str | None = None
    prefix: str | None = None
    multilingual: bool = False
    clip_timestamps: str | Sequence[float] | None = None
    max_new_tokens: int | None = None
    suppress_tokens: Sequence[int] | None = (-1,)
    suppress_blank: bool = True
    max_initial_timestamp: float | None = 1.0
    prepend_punctuations: str = PREPEND
    append_punctuations: str = APPEND
    best_of: int = 5  # faster-whisper's and openai-whisper's command line's: docs/transcription.md
    prompt_reset_on_temperature: float = 0.5
    patience: float = 1.0
    length_penalty: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    engine: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_choices(self)
        # frozen: the checked forms replace the given ones once, here
        object.__setattr__(self, "temperature", _temperatures(self.temperature))
        object.__setattr__(self, "vad_parameters", VadOptions.from_user(self.vad_parameters))
        object.__setattr__(self, "engine", dict(self.engine))
        object.__setattr__(self, "clip_timestamps", clip_seconds(self.clip_timestamps))
        object.__setattr__(self, "suppress_tokens", _token_ids(self.suppress_tokens))
        _check_decoding(self)
        LanguageVote(self.language_detection_threshold, self.language_detection_segments)  # checks both
        _check_speakers(self)
        if self.aligns and self.beam_size > 1:
            raise ValueError("word_timestamps and hallucination_silence_threshold need beam_size=1")
        if self.language is not None:
            from scriba.whisper.languages import whisper_language_code

            whisper_language_code(self.language)  # a misspelled name fails here, before any work

    @property
    def aligns(self) -> bool:
        """Whether windows need their cross-attention alignment (word times)."""
        words = self.word_timestamps or self.hallucination_silence_threshold is not None
        return words or (self.diarize and self.beam_size == 1)  # speakers change between words

    @classmethod
    def build(cls, options: TranscribeOptions | None = None, **given) -> TranscribeOptions:
        """`options` with `given` changes: its fields, or EngineConfig fields (into `engine`). An
        unknown name is a one-line error naming the nearest known one."""
        from scriba.config import unknown_option
        from scriba.runtime.loops import engine_fields

        own, settings = {f.name for f in dataclasses.fields(cls)} - {"engine"}, engine_fields()
        for name in given:
            if name in FASTER_WHISPER_NAMES:
                raise TypeError(f"{name} is faster-whisper's name; Scriba's: {FASTER_WHISPER_NAMES[name]}")
            if name not in own | settings:
                raise unknown_option(name, own | settings)
        base = options or cls()
        engine = {**base.engine, **{k: v for k, v in given.items() if k in settings}}
        return dataclasses.replace(base, engine=engine, **{k: v for k, v in given.items() if k in own})


def _check_speakers(o: TranscribeOptions) -> None:
    from scriba.speakers.diarize import check_counts

    asked = ("num_speakers", "min_speakers", "max_speakers", "known_speakers", "speaker_model")
    given = [n for n in asked if getattr(o, n)]
    if given and not o.diarize:
        raise ValueError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} diarize=True")
    check_counts(o.num_speakers, o.min_speakers, o.max_speakers)
    if o.known_speakers is not None:
        if not isinstance(o.known_speakers, Mapping) or not all(
            isinstance(name, str) and name.strip() for name in o.known_speakers
        ):
            raise ValueError("known_speakers must map each speaker's name to a reference clip")
        object.__setattr__(o, "known_speakers", dict(o.known_speakers))


def _check_choices(o: TranscribeOptions) -> None:
    if o.on_error not in ("report", "raise"):
        raise ValueError(f"on_error must be 'report' or 'raise', got {o.on_error!r}")
    if o.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {o.mode!r}")
    if o.task not in ("transcribe", "translate"):
        raise ValueError(f"task must be 'transcribe' or 'translate', got {o.task!r}")
    if not isinstance(o.beam_size, int) or isinstance(o.beam_size, bool) or o.beam_size < 1:
        raise ValueError(f"beam_size must be a positive integer, got {o.beam_size!r}")


def _check_decoding(o: TranscribeOptions) -> None:
    """faster-whisper's decoding options, each with a one-line error."""
    if o.clip_timestamps and o.vad_filter:
        raise ValueError(
            "clip_timestamps say which audio to decode: they cannot be combined with vad_filter=True"
        )
    if o.multilingual and o.language is not None:
        raise ValueError("multilingual=True detects each window's language: give no language with it")
    if o.max_new_tokens is not None and not (_is_int(o.max_new_tokens) and 1 <= o.max_new_tokens <= 444):
        raise ValueError(f"max_new_tokens must be an integer from 1 to 444, got {o.max_new_tokens!r}")
    if o.max_initial_timestamp is not None and not o.max_initial_timestamp >= 0:
        raise ValueError(
            f"max_initial_timestamp must be seconds >= 0 or None, got {o.max_initial_timestamp!r}"
        )
    for name in ("patience", "repetition_penalty"):
        if not getattr(o, name) > 0:
            raise ValueError(f"{name} must be > 0, got {getattr(o, name)!r}")
    if not (_is_int(o.best_of) and o.best_of >= 1):
        raise ValueError(f"best_of must be a positive integer, got {o.best_of!r}")
    if not (_is_int(o.no_repeat_ngram_size) and o.no_repeat_ngram_size >= 0):
        raise ValueError(f"no_repeat_ngram_size must be an integer >= 0, got {o.no_repeat_ngram_size!r}")
    for name in ("hotwords", "prefix", "prepend_punctuations", "append_punctuations"):
        if getattr(o, name) is not None and not isinstance(getattr(o, name), str):
            raise ValueError(f"{name} must be text, got {getattr(o, name)!r}")


def clip_seconds(clips) -> tuple[float, ...]:
    """faster-whisper's clip_timestamps, "0,10.5,20" or [0, 10.5, 20], as seconds in pairs
    (start, end, ...; an odd count's last clip runs to the end of the file): () for none."""
    if clips is None or clips == "" or clips == "0":
        return ()
    try:
        values = [float(x) for x in (clips.split(",") if isinstance(clips, str) else clips)]
    except (TypeError, ValueError):
        raise ValueError(
            f"clip_timestamps must be seconds as 'start,end,start,end' or a list of numbers, got {clips!r}"
        ) from None
    if any(v < 0 for v in values) or any(b <= a for a, b in zip(values[::2], values[1::2])):
        raise ValueError(f"clip_timestamps must be start < end pairs of seconds >= 0, got {clips!r}")
    return tuple(values)


def _token_ids(ids) -> tuple[int, ...] | None:
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)) or not all(_is_int(t) and t >= -1 for t in ids):
        raise ValueError(
            f"suppress_tokens must be a list of token ids (-1: the model's non-speech set), got {ids!r}"
        )
    return tuple(ids)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _temperatures(temperature) -> tuple[float, ...]:
    many = not isinstance(temperature, (int, float))
    temperatures = tuple(float(t) for t in temperature) if many else (float(temperature),)
    if not temperatures or any(t < 0 for t in temperatures):
        raise ValueError(
            f"temperature must be a non-negative number or a non-empty sequence of them, got {temperature!r}"
        )
    return temperatures
