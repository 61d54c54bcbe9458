"""From logits to tokens: processors, then greedy or temperature / top-k / top-p sampling.

Log-probs are taken after the logits processors and before temperature and truncation,
as transformers' `output_scores` are under greedy decoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from scriba.engine.logits_processors import LogitsProcessor
from scriba.engine.outputs import Logprob
from scriba.engine.sampling_params import SamplingParams


@dataclass
class SampleRow:
    """One logits row: the sequence it belongs to and how to sample it."""

    token_ids: list[int]
    num_generated: int
    params: SamplingParams
    processors: list[LogitsProcessor]
    generator: Any = None  # torch.Generator or None
    num_samples: int = 1


@dataclass
class Sample:
    token_id: int
    logprob: float
    top_logprobs: dict[int, Logprob] | None


def sample(logits: torch.Tensor, rows: list[SampleRow]) -> list[list[Sample] | torch.Tensor]:
    """logits: [num_rows, vocab] float32. Returns, per row, `num_samples` samples; for a beam
    search row, its processed log-probs [vocab] (the processors run on log-probs there, as in
    transformers' beam search), from which the engine picks the beams."""
    for i, row in enumerate(rows):
        if row.params.use_beam_search:
            logits[i] = torch.log_softmax(logits[i], dim=-1)
        for processor in row.processors:
            logits[i] = processor(row.token_ids, row.num_generated, logits[i])
    logprobs = torch.log_softmax(logits, dim=-1)
    greedy = logits.argmax(dim=-1).tolist()
    results = []
    for i, row in enumerate(rows):
        if row.params.use_beam_search:
            results.append(logits[i].clone())
            continue
        if row.params.is_greedy:
            tokens = [greedy[i]] * row.num_samples
        else:
            tokens = _draw(logits[i], row)
        results.append([_describe(logprobs[i], t, row.params.logprobs) for t in tokens])
    return results


def truncate(scores: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Mask (to -inf) all but the top-k, then all but the top-p mass of a [vocab] row."""
    if 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, -float("inf"))
    if top_p < 1.0:
        # Drop the least likely tokens whose total mass stays within 1 - top_p (keep >= 1).
        sorted_scores, order = torch.sort(scores, descending=False)
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
        drop = cumulative <= 1 - top_p
        drop[-1] = False
        scores = scores.masked_fill(drop.scatter(0, order, drop), -float("inf"))
    return scores


def _draw(logits: torch.Tensor, row: SampleRow) -> list[int]:
    params = row.params
    probs = truncate(logits / params.temperature, params.top_k, params.top_p).softmax(dim=-1)
    drawn = torch.multinomial(probs, row.num_samples, replacement=True, generator=row.generator)
    return drawn.tolist()


def _describe(logprobs: torch.Tensor, token_id: int, num_top: int | None) -> Sample:
    chosen = logprobs[token_id].item()
    if num_top is None:
        return Sample(token_id, chosen, None)
    top: dict[int, Logprob] = {}
    if num_top > 0:
        values, ids = torch.topk(logprobs, num_top)
        top = {t: Logprob(v, rank=r + 1) for r, (t, v) in enumerate(zip(ids.tolist(), values.tolist()))}
    if token_id not in top:
        top[token_id] = Logprob(chosen, rank=int((logprobs > chosen).sum().item()) + 1)
    return Sample(token_id, chosen, top)
