"""Logits processors: small per-sequence filters, composed in a list and applied in order.

Each takes the sequence's decoder tokens so far (prompt + generated), how many of them were
generated, and its logits row [vocab], and returns the processed row (in place where it can).
The order of `build_processors` is transformers' `_get_logits_processor` order, so a
combination behaves as `generate()` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from scriba.engine.sampling_params import SamplingParams

LogitsProcessor = Callable[[list[int], int, torch.Tensor], torch.Tensor]


class RepetitionPenalty:
    """Divide positive / multiply negative logits of every token already in the sequence."""

    def __init__(self, penalty: float):
        self.penalty = penalty

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        seen = torch.tensor(sorted(set(token_ids)), device=logits.device)
        score = logits[seen]
        logits[seen] = torch.where(score < 0, score * self.penalty, score / self.penalty)
        return logits


class NoRepeatNGram:
    """Ban any token that would complete an n-gram already present in the sequence."""

    def __init__(self, n: int):
        self.n = n

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        n = self.n
        if len(token_ids) + 1 < n:
            return logits
        prefix = tuple(token_ids[len(token_ids) - n + 1 :])
        banned = {
            token_ids[i + n - 1]
            for i in range(len(token_ids) - n + 1)
            if tuple(token_ids[i : i + n - 1]) == prefix
        }
        if banned:
            logits[list(banned)] = -math.inf
        return logits


class MinTokens:
    """Forbid the stop tokens until `min_tokens` tokens have been generated."""

    def __init__(self, min_tokens: int, stop_ids: list[int]):
        self.min_tokens = min_tokens
        self.stop_ids = stop_ids

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        if num_generated < self.min_tokens:
            logits[self.stop_ids] = -math.inf
        return logits


class ForceToken:
    """Force `token_id` at one decoder length (forced BOS: length 1; forced EOS: the last slot)."""

    def __init__(self, token_id: int, at_length: int):
        self.token_id = token_id
        self.at_length = at_length

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        if len(token_ids) == self.at_length:
            logits.fill_(-math.inf)
            logits[self.token_id] = 0.0
        return logits


class SuppressTokens:
    def __init__(self, token_ids: list[int]):
        self.token_ids = token_ids

    def __call__(self, token_ids: list[int], num_generated: int, logits: torch.Tensor) -> torch.Tensor:
        logits[self.token_ids] = -math.inf
        return logits


def build_processors(params: SamplingParams, eos_token_ids: list[int], prompt_len: int) -> list[LogitsProcessor]:
    """The request's processors, in transformers' order (`eos_token_ids` empty with ignore_eos)."""
    processors: list[LogitsProcessor] = []
    if params.repetition_penalty != 1.0:
        processors.append(RepetitionPenalty(params.repetition_penalty))
    if params.no_repeat_ngram_size > 0:
        processors.append(NoRepeatNGram(params.no_repeat_ngram_size))
    stop_ids = list(eos_token_ids) + params.stop_token_ids
    if params.min_tokens > 0 and stop_ids:
        processors.append(MinTokens(params.min_tokens, stop_ids))
    if params.forced_bos_token_id is not None:
        processors.append(ForceToken(params.forced_bos_token_id, at_length=1))
    if params.forced_eos_token_id is not None:
        processors.append(ForceToken(params.forced_eos_token_id, at_length=prompt_len + params.max_tokens - 1))
    if params.suppress_tokens:
        processors.append(SuppressTokens(params.suppress_tokens))
    return processors
