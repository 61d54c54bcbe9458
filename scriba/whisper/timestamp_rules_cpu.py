"""Whisper's timestamp rules over CPU logits, one compiled pass per row (numba).

The same rules as logits_rules._timestamp_rules (which runs them as ~25 batched torch ops, the
path on a GPU), written as one loop: on a CPU a decode step of one request spent ~0.5 ms in
those small ops, launched one by one; here the row is read once. Tested against the torch
version row for row (tests/whisper/test_timestamp_rules_cpu.py).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

from scriba.kernels.cpu_exp import sum_exp

NO_LIMIT = -1  # max_initial_timestamp_index None


def timestamp_rules_cpu(logits: torch.Tensor, rows: list[int], begins: list[int], layout, step) -> None:
    """logits [num_rows, vocab] float32 on the CPU, in place; `rows` (each generating from
    decoder index `begins[i]`), `layout` (eot, no_timestamps, timestamp_begin,
    max_initial_timestamp_index), `step` the StepRows."""
    eot, no_timestamps, ts, max_initial = layout
    history = step.history()  # [num_rows, width] int, PAD (-1) past each length
    scores = logits.numpy()
    at = np.asarray(rows, dtype=np.int64)
    # The text's best below <|endoftext|> by numpy's vectorized max (numba's max reduction is
    # a scalar loop: 50 us a row); the rules leave that range as it is. Every row: in place.
    whole = len(rows) == len(scores)
    best_below_eot = scores[:, :eot].max(axis=1)[at] if whole else scores[at, :eot].max(axis=1)
    _apply(
        scores,
        np.ascontiguousarray(history.numpy()),  # a view of the history's buffer may be strided
        at,
        np.asarray([step.lengths[r] for r in rows], dtype=np.int64),
        np.asarray(begins, dtype=np.int64),
        best_below_eot,
        eot,
        no_timestamps,
        ts,
        NO_LIMIT if max_initial is None else max_initial,
    )


def load_kernel() -> None:
    """Load (from numba's cache, else compile) the rules' pass for the types
    `timestamp_rules_cpu` passes, without running it (engine/kernel_preload.py)."""
    rows, ints = numba.types.Array(numba.types.int64, 1, "C"), numba.types.int64
    history = numba.typeof(np.zeros((1, 1), dtype=np.int64))
    logits = numba.typeof(np.zeros((1, 1), dtype=np.float32))
    best = numba.typeof(np.zeros(1, dtype=np.float32))
    _apply.compile((logits, history, rows, rows, rows, best, ints, ints, ints, ints))


@numba.njit(cache=True, nogil=True)
def _apply(logits, history, rows, lengths, begins, best_below_eot, eot, no_timestamps, ts, max_initial):
    vocab = logits.shape[1]
    for i in range(rows.shape[0]):
        r, length, begin = rows[i], lengths[i], begins[i]
        row, tokens = logits[r], history[r]
        num = length - begin  # tokens generated after the prompt and the control tokens
        last_ts = num >= 1 and tokens[max(length - 1, 0)] >= ts
        penult_ts = num < 2 or tokens[max(length - 2, 0)] >= ts
        open_pair, closed_pair, first = last_ts and not penult_ts, last_ts and penult_ts, num == 0
        latest = -1
        for p in range(begin, tokens.shape[0]):
            if tokens[p] >= ts and tokens[p] > latest:
                latest = tokens[p]
        floor = ts if latest < 0 else latest + (0 if open_pair else 1)  # never back in time
        ceiling = vocab
        if closed_pair:
            ceiling = ts
        elif first and max_initial >= 0:
            ceiling = ts + max_initial + 1
        for c in range(ts, vocab):
            if c < floor or c >= ceiling:
                row[c] = -math.inf
        row[no_timestamps] = -math.inf
        _text_rule(row, open_pair, first, best_below_eot[i], eot, ts)


@numba.njit(cache=True, nogil=True)
def _text_rule(row, open_pair, first, best_below_eot, eot, ts):
    """Text is banned where the grammar says so, or everywhere when the timestamps' total
    probability beats every text token (compared on logits: log_softmax shifts both alike).
    best_below_eot: the row's maximum over [0, eot)."""
    text_end = eot if open_pair else (ts if first else 0)
    best_text = -math.inf
    if not first:
        best_text = best_below_eot if text_end == 0 else -math.inf
        for c in range(eot, ts):
            best_text = max(best_text, row[c])
    peak = np.float32(-math.inf)
    for c in range(ts, row.shape[0]):
        peak = max(peak, row[c])
    stamps = -math.inf
    if peak > -math.inf:  # their log-sum-exp, its exp vectorized
        stamps = peak + math.log(sum_exp(row[ts:], peak))
    limit = ts if stamps > best_text else text_end
    if limit > 0:
        for c in range(eot):
            row[c] = -math.inf
    for c in range(eot, limit):
        row[c] = -math.inf
