"""Prompt forms and their processing into token ids for the encoder and the decoder.

Accepted (as in vLLM's encoder/decoder API):
    "text"                                   encoder text; default decoder prompt
    {"prompt": "text"}                       same
    {"prompt_token_ids": [ids]}              encoder token ids
    {"encoder_prompt": P, "decoder_prompt": Q | None}   explicit pair, P and Q any of the above
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, Union


class TextPrompt(TypedDict):
    prompt: str


class TokensPrompt(TypedDict):
    prompt_token_ids: list[int]


SingletonPrompt = Union[str, TextPrompt, TokensPrompt]


class ExplicitEncoderDecoderPrompt(TypedDict):
    encoder_prompt: SingletonPrompt
    decoder_prompt: SingletonPrompt | None


PromptType = Union[SingletonPrompt, ExplicitEncoderDecoderPrompt]


@dataclass
class EncoderDecoderInputs:
    """A request's inputs after tokenization and the model's decoder-prompt hook."""

    encoder_token_ids: list[int]
    decoder_token_ids: list[int]
    encoder_prompt: str | None = None
    decoder_prompt: str | None = None


class DecoderPromptHooks(Protocol):
    """What a model class says about its decoder prompt (see models/bart.py)."""

    def default_decoder_prompt(self) -> list[int]: ...

    def prepare_decoder_prompt(self, token_ids: list[int]) -> list[int]: ...


@dataclass
class InputLimits:
    vocab_size: int
    max_encoder_len: int
    max_decoder_len: int


class InputProcessor:
    """Turns any accepted prompt form into checked `EncoderDecoderInputs`."""

    def __init__(self, tokenizer: Any, hooks: DecoderPromptHooks, limits: InputLimits):
        self.tokenizer = tokenizer
        self.hooks = hooks
        self.limits = limits

    def process(self, prompt: PromptType) -> EncoderDecoderInputs:
        if isinstance(prompt, dict) and "encoder_prompt" in prompt:
            unknown = set(prompt) - {"encoder_prompt", "decoder_prompt"}
            if unknown:
                raise ValueError(f"unknown keys in encoder/decoder prompt: {sorted(unknown)}")
            encoder_text, encoder_ids = self._tokenize(prompt["encoder_prompt"], "encoder")
            decoder = prompt.get("decoder_prompt")
        else:
            encoder_text, encoder_ids = self._tokenize(prompt, "encoder")
            decoder = None
        if decoder is None:
            decoder_text, decoder_ids = None, self.hooks.default_decoder_prompt()
        else:
            decoder_text, decoder_ids = self._tokenize(decoder, "decoder", add_special_tokens=False)
            decoder_ids = self.hooks.prepare_decoder_prompt(decoder_ids)
        self._check(encoder_ids, "encoder", self.limits.max_encoder_len)
        self._check(decoder_ids, "decoder", self.limits.max_decoder_len)
        return EncoderDecoderInputs(encoder_ids, decoder_ids, encoder_text, decoder_text)

    def _tokenize(self, prompt: Any, which: str, add_special_tokens: bool = True) -> tuple[str | None, list[int]]:
        if isinstance(prompt, dict):
            if "prompt_token_ids" in prompt:
                ids = prompt["prompt_token_ids"]
                if not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
                    raise ValueError(f"{which} prompt_token_ids must be a list of ints")
                return prompt.get("prompt"), list(ids)
            if "prompt" in prompt:
                prompt = prompt["prompt"]
            else:
                raise ValueError(f"{which} prompt dict needs 'prompt' or 'prompt_token_ids', got keys {sorted(prompt)}")
        if not isinstance(prompt, str):
            raise TypeError(f"{which} prompt must be a str or a prompt dict, got {type(prompt).__name__}")
        if which == "encoder" and not prompt.strip():
            raise ValueError("empty encoder prompt: give some text or token ids")
        if self.tokenizer is None:
            raise ValueError("this model has no tokenizer: pass {'prompt_token_ids': [...]} instead of text")
        return prompt, self.tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"]

    def _check(self, ids: list[int], which: str, max_len: int) -> None:
        if not ids:
            raise ValueError(f"empty {which} prompt: it has no tokens")
        if len(ids) > max_len:
            raise ValueError(f"{which} prompt has {len(ids)} tokens, more than the model's {max_len} positions")
        bad = [t for t in ids if not 0 <= t < self.limits.vocab_size]
        if bad:
            raise ValueError(f"{which} prompt has token ids outside the vocabulary [0, {self.limits.vocab_size}): {bad[:5]}")
