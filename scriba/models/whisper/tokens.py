"""The control tokens of a Whisper vocabulary, read from its configs."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from scriba.models.whisper.language_names import LANGUAGES


@dataclass
class WhisperTokens:
    """The control tokens of a Whisper vocabulary, and the checkpoint's suppression lists."""

    eot: int
    sot: int
    translate: int
    transcribe: int
    start_of_prev: int
    no_speech: int
    no_timestamps: int
    lang_to_id: dict[str, int] = field(default_factory=dict)  # "en" -> id of <|en|>
    is_multilingual: bool = True
    suppress_tokens: list[int] = field(default_factory=list)
    begin_suppress_tokens: list[int] = field(default_factory=list)
    max_initial_timestamp_index: int | None = 50

    @property
    def timestamp_begin(self) -> int:
        return self.no_timestamps + 1

    @property
    def start_of_lm(self) -> int:  # <|startoflm|>: eot sot <langs> translate transcribe startoflm ...
        return self.start_of_prev - 1

    @functools.cached_property
    def id_to_lang(self) -> dict[int, str]:
        return {i: code for code, i in self.lang_to_id.items()}

    @classmethod
    def from_configs(cls, config, generation_config) -> "WhisperTokens":
        """From generation_config.json as Hugging Face's Whisper checkpoints write it; where a
        field is absent, from the standard layout after <|endoftext|> (config.eos_token_id)."""
        gen = generation_config
        get = lambda name, default=None: (  # noqa: E731
            getattr(gen, name, None) if getattr(gen, name, None) is not None else default
        )
        eot = config.eos_token_id
        multilingual = get("is_multilingual", config.vocab_size >= 51865)
        no_ts = get("no_timestamps_token_id", config.vocab_size - 1502)  # 1501 timestamps follow it
        # eot sot <langs> translate transcribe startoflm startofprev nospeech notimestamps
        num_langs = no_ts - eot - 7
        lang_to_id = {k.strip("<|>"): v for k, v in (get("lang_to_id") or {}).items()}
        if not lang_to_id and multilingual:
            lang_to_id = {code: eot + 2 + i for i, code in enumerate(list(LANGUAGES)[:num_langs])}
        tasks = get("task_to_id") or {"translate": no_ts - 5, "transcribe": no_ts - 4}
        return cls(
            eot=eot,
            sot=get("decoder_start_token_id", config.decoder_start_token_id),
            translate=tasks["translate"],
            transcribe=tasks["transcribe"],
            start_of_prev=get("prev_sot_token_id", no_ts - 2),
            no_speech=no_ts - 1,
            no_timestamps=no_ts,
            lang_to_id=lang_to_id if multilingual else {},
            is_multilingual=multilingual,
            suppress_tokens=list(get("suppress_tokens", getattr(config, "suppress_tokens", None) or [])),
            begin_suppress_tokens=list(
                get("begin_suppress_tokens", getattr(config, "begin_suppress_tokens", None) or [])
            ),
            max_initial_timestamp_index=get("max_initial_timestamp_index", 50),
        )
