"""Scriba: a paged encoder/decoder inference engine for Whisper and BART."""

from scriba.config import EngineConfig
from scriba.engine import (
    CompletionOutput,
    Engine,
    ExplicitEncoderDecoderPrompt,
    Logprob,
    PromptType,
    RequestOutput,
    SamplingParams,
    TextPrompt,
    TokensPrompt,
)

__version__ = "0.1.0"

__all__ = [
    "CompletionOutput",
    "Engine",
    "EngineConfig",
    "ExplicitEncoderDecoderPrompt",
    "Logprob",
    "PromptType",
    "RequestOutput",
    "SamplingParams",
    "TextPrompt",
    "TokensPrompt",
]
