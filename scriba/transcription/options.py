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

from scriba.transcription.guards import COMPRESSION_RATIO, LOGPROB, NO_SPEECH
from scriba.transcription.language_vote import MAX_WINDOWS, THRESHOLD, LanguageVote
from scriba.transcription.vad import VadOptions

MODES = ("batched", "sequential")
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # openai-whisper's fallback
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
    `hallucination_silence_threshold` (seconds; word alignment runs for it): an improbable segment
    alone in that much silence is dropped and the audio after it decoded again (openai-whisper's
    rule). `on_error`: in a list, an unreadable input gives a result with `error` set ("report")
    or raises ("raise"). `engine`: EngineConfig settings for the shared engine."""

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
    hallucination_silence_threshold: float | None = None
    language_detection_threshold: float = THRESHOLD
    language_detection_segments: int = MAX_WINDOWS
    on_error: str = "report"
    engine: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_choices(self)
        # frozen: the checked forms replace the given ones once, here
        object.__setattr__(self, "temperature", _temperatures(self.temperature))
        object.__setattr__(self, "vad_parameters", VadOptions.from_user(self.vad_parameters))
        object.__setattr__(self, "engine", dict(self.engine))
        LanguageVote(self.language_detection_threshold, self.language_detection_segments)  # checks both
        if self.aligns and self.beam_size > 1:
            raise ValueError("word_timestamps and hallucination_silence_threshold need beam_size=1")
        if self.language is not None:
            from scriba.whisper.languages import whisper_language_code

            whisper_language_code(self.language)  # a misspelled name fails here, before any work

    @property
    def aligns(self) -> bool:
        """Whether windows need their cross-attention alignment (word times)."""
        return self.word_timestamps or self.hallucination_silence_threshold is not None

    @classmethod
    def build(cls, options: TranscribeOptions | None = None, **given) -> TranscribeOptions:
        """`options` with `given` changes: its fields, or EngineConfig fields (into `engine`). An
        unknown name is a one-line error naming the nearest known one."""
        from scriba.runtime.loops import engine_fields, unknown_option

        own, settings = {f.name for f in dataclasses.fields(cls)} - {"engine"}, engine_fields()
        for name in given:
            if name not in own | settings:
                raise unknown_option(name, own | settings)
        base = options or cls()
        engine = {**base.engine, **{k: v for k, v in given.items() if k in settings}}
        return dataclasses.replace(base, engine=engine, **{k: v for k, v in given.items() if k in own})


def _check_choices(o: TranscribeOptions) -> None:
    if o.on_error not in ("report", "raise"):
        raise ValueError(f"on_error must be 'report' or 'raise', got {o.on_error!r}")
    if o.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {o.mode!r}")
    if o.task not in ("transcribe", "translate"):
        raise ValueError(f"task must be 'transcribe' or 'translate', got {o.task!r}")
    if not isinstance(o.beam_size, int) or isinstance(o.beam_size, bool) or o.beam_size < 1:
        raise ValueError(f"beam_size must be a positive integer, got {o.beam_size!r}")


def _temperatures(temperature) -> tuple[float, ...]:
    many = not isinstance(temperature, (int, float))
    temperatures = tuple(float(t) for t in temperature) if many else (float(temperature),)
    if not temperatures or any(t < 0 for t in temperatures):
        raise ValueError(
            f"temperature must be a non-negative number or a non-empty sequence of them, got {temperature!r}"
        )
    return temperatures
