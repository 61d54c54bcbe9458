"""What a request gives back (vLLM's names: RequestOutput, CompletionOutput, Logprob)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class PromptLogprobQuery:
    """What a request asks of its own prompt, read once at prefill (vLLM's prompt logprobs, for
    one token): the log-probability of `token_id` as the token after decoder prompt position
    `position`."""

    position: int
    token_id: int


@dataclass
class Annotations:
    """What a model family's request processing says of a request beyond its tokens
    (`RequestOutput.annotations`); each family with something to say subclasses it."""


@dataclass
class Logprob:
    logprob: float
    rank: int | None = None  # 1 = most likely
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    """One decoder sequence of a request: its generated tokens (after the decoder prompt).

    `text` is detokenized when first read (the engine never decodes text on its own)."""

    index: int
    token_ids: list[int]
    cumulative_logprob: float
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None  # "stop" | "length" | "abort" | None while running
    stop_reason: int | None = None  # the stop token id, when one ended it
    score: float | None = None  # beam search: sum of log-probs / length ** length_penalty
    # With SamplingParams.cross_attention_heads, once finished: [heads, decoder tokens, encoder
    # positions], the row of token i being the attention when token i was the input.
    cross_attentions: Any = field(default=None, repr=False, compare=False)
    detokenize: Callable[[list[int]], str] | None = field(default=None, repr=False, compare=False)
    _text: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self.detokenize(self.token_ids) if self.detokenize is not None else ""
        return self._text

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    """One request: the echoed prompts and its completions.

    `prompt` / `prompt_token_ids` are the decoder prompt actually used (after the model's
    hook); `encoder_prompt` / `encoder_prompt_token_ids` echo the encoder input.
    """

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    encoder_prompt: str | None
    encoder_prompt_token_ids: list[int]
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = False
    # What the model's request processing adds beyond tokens (speech models: the language and
    # the no-speech probability); None for text models.
    annotations: Annotations | None = None
