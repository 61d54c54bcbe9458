"""A Whisper checkpoint's two configs as plain dataclasses, with Hugging Face's field names.

A CTranslate2 (faster-whisper) folder carries neither config.json in Hugging Face's form nor
generation_config.json; its reader (ctranslate2.py) fills these from the tensor shapes and the
tokenizer's control tokens. They hold the fields of transformers' `WhisperConfig` and
`GenerationConfig` that Scriba reads, so the offline models load without importing transformers
(1.0-1.3 s of a cold start). `to_dict()` gives the keyword arguments that build transformers' own
classes on the same values (the tests' oracle does so).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class WhisperConfig:
    """The network's shape and its special token ids (transformers' WhisperConfig names)."""

    model_type: ClassVar[str] = "whisper"  # picks Whisper's request processing

    vocab_size: int
    num_mel_bins: int
    d_model: int
    encoder_layers: int
    decoder_layers: int
    encoder_attention_heads: int
    decoder_attention_heads: int
    encoder_ffn_dim: int
    decoder_ffn_dim: int
    max_source_positions: int
    max_target_positions: int
    eos_token_id: int
    bos_token_id: int
    pad_token_id: int
    decoder_start_token_id: int
    suppress_tokens: list[int] | None = None
    begin_suppress_tokens: list[int] | None = None
    activation_function: str = "gelu"
    architectures: list[str] = field(default_factory=lambda: ["WhisperForConditionalGeneration"])

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class WhisperGenerationConfig:
    """How the checkpoint generates (transformers' GenerationConfig names, as Whisper's
    generation_config.json writes them); None means the file does not set the field."""

    decoder_start_token_id: int
    eos_token_id: int
    bos_token_id: int
    pad_token_id: int
    max_length: int
    no_timestamps_token_id: int
    is_multilingual: bool
    prev_sot_token_id: int | None = None
    suppress_tokens: list[int] | None = None
    begin_suppress_tokens: list[int] | None = None
    max_initial_timestamp_index: int = 50
    alignment_heads: list[list[int]] | None = None
    lang_to_id: dict[str, int] | None = None  # {"<|en|>": 50259, ...}, multilingual models only
    task_to_id: dict[str, int] | None = None  # {"translate": ..., "transcribe": ...}

    def to_dict(self) -> dict:
        """The fields the checkpoint sets."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def to_diff_dict(self) -> dict:
        """What transformers' `GenerationConfig.to_diff_dict()` answers: the values this file sets."""
        return self.to_dict()


def transformers_configs(config: WhisperConfig, generation_config: WhisperGenerationConfig):
    """transformers' (WhisperConfig, GenerationConfig) on the same values: to run the checkpoint
    in transformers' WhisperForConditionalGeneration (the tests' oracle, the benchmarks' peer)."""
    import transformers

    return (
        transformers.WhisperConfig(**config.to_dict()),
        transformers.GenerationConfig(**generation_config.to_dict()),
    )
