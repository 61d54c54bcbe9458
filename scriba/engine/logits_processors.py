"""Logits processors: per-request filters, applied to a whole step's rows at once.

A request holds a list of processor objects (its settings). Each step, the rows that carry a
processor of one class are processed together by that class's `apply`, with the per-request
settings gathered into index tensors once; classes run in `ORDER`, transformers'
`_get_logits_processor` order, so a combination behaves as `generate()` does. Which rows a
rule touches is decided on the host from lengths the host already knows; the logits are only
touched by a few indexed tensor operations, with no synchronisation.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import torch

from scriba.engine.sampling_params import SamplingParams
from scriba.engine.to_device import to_device

NEG_INF = -math.inf


@dataclass
class StepRows:
    """What processors may read about the step's rows (row i of the logits)."""

    lengths: list[int]  # decoder tokens so far (prompt + generated)
    num_generated: list[int]
    history: Callable[[], torch.Tensor]  # -> tokens [rows, max length], PAD (-1) past a length


class LogitsProcessor:
    """Base class. `apply(logits, rows, procs, step)`: `rows` are the logits rows carrying this
    class, `procs` their processor objects (same order); logits [num_rows, vocab] in place.
    Classes run by ascending `order` (transformers' order; forcing last, where it wins)."""

    order: float = 50

    @classmethod
    def apply(cls, logits: torch.Tensor, rows: list[int], procs: list, step: StepRows) -> None:
        raise NotImplementedError


def index(values: Iterable[int], device: torch.device) -> torch.Tensor:
    return to_device(list(values), device, torch.long)


def ban(logits: torch.Tensor, rows: list[int], token_ids: Sequence[int]) -> None:
    """-inf at `token_ids` in each of `rows`: one indexed write (a fill of those columns when
    the rows are all of them, as in a lone request's step: 3x faster on a CPU)."""
    if rows and token_ids:
        dev = logits.device
        columns = _token_index(tuple(token_ids), dev)  # a request's list, the same every step
        if rows == list(range(logits.shape[0])):
            logits.index_fill_(1, columns, NEG_INF)
        else:
            # a device scalar: a Python float would be copied to the GPU from pageable memory
            # on each call, a copy the host waits for (torch.cuda.set_sync_debug_mode finds them)
            logits[index(rows, dev)[:, None], columns[None, :]] = _neg_inf(dev, logits.dtype)


@functools.lru_cache(maxsize=16)
def _neg_inf(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    return torch.full((), NEG_INF, device=device, dtype=dtype)


@functools.lru_cache(maxsize=256)
def _token_index(token_ids: tuple[int, ...], device: torch.device) -> torch.Tensor:
    return index(token_ids, device)


def by_key(rows: list[int], procs: list, key: Callable[[Any], Any]) -> dict[Any, list[int]]:
    """Rows grouped by a processor setting (e.g. the same suppress list: one write per group)."""
    groups: dict[Any, list[int]] = defaultdict(list)
    for row, proc in zip(rows, procs):
        groups[key(proc)].append(row)
    return groups


def select(
    rows: list[int], procs: list, when: Callable[[int, Any], bool], key: Callable[[Any], Any]
) -> dict[Any, list[int]]:
    """The rows where `when(row, proc)` holds, grouped by `key(proc)`."""
    active = [(r, p) for r, p in zip(rows, procs) if when(r, p)]
    return by_key([r for r, _ in active], [p for _, p in active], key)


class RepetitionPenalty(LogitsProcessor):
    """Divide positive / multiply negative logits of every token already in the sequence."""

    order = 10

    def __init__(self, penalty: float):
        self.penalty = penalty

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        dev = logits.device
        r = index(rows, dev)
        seen = step.history()[r]  # [n, length]
        seen = torch.where(seen < 0, seen[:, :1], seen)  # pad with a token the row has anyway
        penalty = to_device([p.penalty for p in procs], dev)[:, None]
        sub = logits[r]
        score = sub.gather(1, seen)
        sub.scatter_(1, seen, torch.where(score < 0, score * penalty, score / penalty))
        logits[r] = sub


class NoRepeatNGram(LogitsProcessor):
    """Ban any token that would complete an n-gram already present in the sequence."""

    order = 20

    def __init__(self, n: int):
        self.n = n

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        for n, group in by_key(rows, procs, lambda p: p.n).items():
            group = [r for r in group if step.lengths[r] + 1 >= n]
            if group:
                _ban_ngrams(logits, group, n, step)


def _ban_ngrams(logits: torch.Tensor, rows: list[int], n: int, step: StepRows) -> None:
    dev = logits.device
    r = index(rows, dev)
    tokens = step.history()[r]  # [m, width]
    if tokens.shape[1] < n:
        tokens = torch.nn.functional.pad(tokens, (0, n - tokens.shape[1]), value=-1)
    lengths = index((step.lengths[i] for i in rows), dev)
    windows = tokens.unfold(1, n, 1)  # [m, width - n + 1, n]
    prefix_pos = (lengths[:, None] - n + 1 + torch.arange(n - 1, device=dev)).clamp(min=0)
    prefix = tokens.gather(1, prefix_pos)  # the last n - 1 tokens
    starts = torch.arange(windows.shape[1], device=dev)
    inside = starts[None, :] + n - 1 < lengths[:, None]
    match = (windows[:, :, : n - 1] == prefix[:, None, :]).all(-1) & inside
    banned = windows[:, :, n - 1].clamp(min=0)
    src = torch.where(match, NEG_INF, math.inf).to(logits.dtype)
    sub = logits[r]
    sub.scatter_reduce_(1, banned, src, reduce="amin")
    logits[r] = sub


class MinTokens(LogitsProcessor):
    """Forbid the stop tokens until `min_tokens` tokens have been generated."""

    order = 30

    def __init__(self, min_tokens: int, stop_ids: list[int]):
        self.min_tokens = min_tokens
        self.stop_ids = tuple(stop_ids)

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        early = select(rows, procs, lambda r, p: step.num_generated[r] < p.min_tokens, lambda p: p.stop_ids)
        for ids, group in early.items():
            ban(logits, group, ids)


class SuppressTokens(LogitsProcessor):
    order = 60

    def __init__(self, token_ids: list[int]):
        self.token_ids = tuple(token_ids)

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        for ids, group in by_key(rows, procs, lambda p: p.token_ids).items():
            ban(logits, group, ids)


class ForceToken(LogitsProcessor):
    """Force `token_id` at one decoder length (forced BOS: length 1; forced EOS: the last slot)."""

    order = 100

    def __init__(self, token_id: int, at_length: int):
        self.token_id = token_id
        self.at_length = at_length

    @classmethod
    def apply(cls, logits, rows, procs, step) -> None:
        forced = {r: p.token_id for r, p in zip(rows, procs) if step.lengths[r] == p.at_length}
        if forced:
            r = index(forced, logits.device)
            logits.index_fill_(0, r, NEG_INF)
            logits[r, index(forced.values(), logits.device)] = 0.0


def apply_processors(logits: torch.Tensor, processors: list[list[LogitsProcessor]], step: StepRows) -> None:
    """Run every row's processors (`processors[i]` for row i), one `apply` per class."""
    groups: dict[type, tuple[list[int], list]] = {}
    for row, procs in enumerate(processors):
        for proc in procs:
            rows, objs = groups.setdefault(type(proc), ([], []))
            rows.append(row)
            objs.append(proc)
    for cls in sorted(groups, key=lambda c: c.order):
        cls.apply(logits, *groups[cls], step)


def build_processors(
    params: SamplingParams, eos_token_ids: list[int], prompt_len: int
) -> list[LogitsProcessor]:
    """The request's processors (`eos_token_ids` empty with ignore_eos)."""
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
        processors.append(
            ForceToken(params.forced_eos_token_id, at_length=prompt_len + params.max_tokens - 1)
        )
    if params.suppress_tokens:
        processors.append(SuppressTokens(params.suppress_tokens))
    return processors
