"""Prompt forms and their processing into token ids for the encoder and the decoder.

Accepted (as in vLLM's encoder/decoder API):
    "text"                                   encoder text; default decoder prompt
    {"prompt": "text"}                       same
    {"prompt_token_ids": [ids]}              encoder token ids
    {"encoder_prompt": P, "decoder_prompt": Q | None}   explicit pair, P and Q any of the above

and a model's own prompt forms, processed by its request processing (speech models: a dict
with "audio" or "input_features").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Union

if TYPE_CHECKING:  # features need numpy; text-only use (and the scheduler) does not
    import numpy as np


class TextPrompt(TypedDict):
    prompt: str


class TokensPrompt(TypedDict):
    prompt_token_ids: list[int]


SingletonPrompt = Union[str, TextPrompt, TokensPrompt]


class ExplicitEncoderDecoderPrompt(TypedDict):
    encoder_prompt: SingletonPrompt
    decoder_prompt: SingletonPrompt | None


# or a model's own prompt form (a dict its request processing reads)
PromptType = Union[SingletonPrompt, ExplicitEncoderDecoderPrompt, Mapping[str, Any]]


@dataclass
class EncoderDecoderInputs:
    """A request's inputs after tokenization and the model's decoder-prompt hook."""

    encoder_token_ids: list[int]
    decoder_token_ids: list[int]
    encoder_prompt: str | None = None
    decoder_prompt: str | None = None
    encoder_features: np.ndarray | None = None  # [mel_bins, frames] for an audio encoder
    num_encoder_positions: int | None = None  # what the features encode to (1500 for 30 s of speech)
    model_data: Any = None  # what the model's request processing keeps about the prompt
    # Prompt tokens that transformers would generate (forced) rather than take as prompt:
    # beam scores count them in the generated length, as transformers does.
    num_forced_prompt_tokens: int = 0

    @property
    def encoder_len(self) -> int:
        """Encoder positions, which size the cross-attention block table."""
        return (
            len(self.encoder_token_ids) if self.num_encoder_positions is None else self.num_encoder_positions
        )


class DecoderPromptHooks(Protocol):
    """What a model class says about its decoder prompt (the text models in models/)."""

    def default_decoder_prompt(self) -> list[int]: ...

    def prepare_decoder_prompt(self, token_ids: list[int]) -> list[int]: ...


@dataclass
class InputLimits:
    vocab_size: int
    max_encoder_len: int
    max_decoder_len: int


class PromptReader:
    """Turns any accepted prompt form into checked `EncoderDecoderInputs`."""

    def __init__(self, tokenizer: Any, hooks: DecoderPromptHooks, limits: InputLimits):
        self.tokenizer = tokenizer
        self.hooks = hooks
        self.limits = limits

    def read(self, prompt: PromptType) -> EncoderDecoderInputs:
        if is_audio_prompt(prompt):
            raise ValueError("this model takes text, not audio")
        if isinstance(prompt, dict) and "encoder_prompt" in prompt:
            unknown = set(prompt) - {"encoder_prompt", "decoder_prompt"}
            if unknown:
                raise ValueError(f"unknown keys in encoder/decoder prompt: {sorted(unknown)}")
            encoder_text, encoder_ids = self.tokenize(prompt["encoder_prompt"], "encoder")
            decoder = prompt.get("decoder_prompt")
        else:
            encoder_text, encoder_ids = self.tokenize(prompt, "encoder")
            decoder = None
        if decoder is None:
            decoder_text, decoder_ids = None, self.hooks.default_decoder_prompt()
        else:
            decoder_text, decoder_ids = self.tokenize(decoder, "decoder", add_special_tokens=False)
            decoder_ids = self.hooks.prepare_decoder_prompt(decoder_ids)
        self.check(encoder_ids, "encoder", self.limits.max_encoder_len)
        self.check(decoder_ids, "decoder", self.limits.max_decoder_len)
        inputs = EncoderDecoderInputs(encoder_ids, decoder_ids, encoder_text, decoder_text)
        if decoder is None:  # after <DEC>, the default prompt holds tokens transformers forces
            inputs.num_forced_prompt_tokens = len(decoder_ids) - 1
        return inputs

    def text_ids(self, text: Any, which: str, leading_space: bool) -> list[int]:
        if text is None or text == "":
            return []
        if isinstance(text, list) and all(isinstance(t, int) for t in text):
            return list(text)
        if not isinstance(text, str):
            raise ValueError(f"{which} must be text or a list of token ids, got {type(text).__name__}")
        if self.tokenizer is None:
            raise ValueError(f"this model has no tokenizer: give the {which} as token ids")
        text = " " + text.strip() if leading_space else text
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def tokenize(
        self, prompt: Any, which: str, add_special_tokens: bool = True
    ) -> tuple[str | None, list[int]]:
        if isinstance(prompt, dict):
            if "prompt_token_ids" in prompt:
                ids = prompt["prompt_token_ids"]
                if not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
                    raise ValueError(f"{which} prompt_token_ids must be a list of ints")
                return prompt.get("prompt"), list(ids)
            if "prompt" in prompt:
                prompt = prompt["prompt"]
            else:
                raise ValueError(
                    f"{which} prompt dict needs 'prompt' or 'prompt_token_ids', got keys {sorted(prompt)}"
                )
        if not isinstance(prompt, str):
            raise TypeError(f"{which} prompt must be a str or a prompt dict, got {type(prompt).__name__}")
        if which == "encoder" and not prompt.strip():
            raise ValueError("empty encoder prompt: give some text or token ids")
        if self.tokenizer is None:
            raise ValueError("this model has no tokenizer: pass {'prompt_token_ids': [...]} instead of text")
        return prompt, self.tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"]

    def check(self, ids: list[int], which: str, max_len: int) -> None:
        if not ids:
            raise ValueError(f"empty {which} prompt: it has no tokens")
        if len(ids) > max_len:
            raise ValueError(
                f"{which} prompt has {len(ids)} tokens, more than the model's {max_len} positions"
            )
        bad = [t for t in ids if not 0 <= t < self.limits.vocab_size]
        if bad:
            raise ValueError(
                f"{which} prompt has token ids outside the vocabulary [0, {self.limits.vocab_size}): "
                f"{bad[:5]}"
            )


def _is_audio(prompt: Any) -> bool:
    return isinstance(prompt, dict) and ("audio" in prompt or "input_features" in prompt)


def is_audio_prompt(prompt: Any) -> bool:
    """An audio prompt, or an explicit pair whose encoder prompt is audio."""
    return _is_audio(prompt) or (isinstance(prompt, dict) and _is_audio(prompt.get("encoder_prompt")))
