"""exp for numba kernels that vectorizes: 2^x as 2^whole * 2^fraction.

numba's own exp is a scalar call per element. Here the fraction's power is a polynomial and the
whole part goes into a float32's exponent bits, so a loop of them compiles to vector code: the
attention kernels' softmax (cpu_paged_attention.py) and a logits row's normaliser (the sampler's
greedy log-probs, the timestamp rules' timestamp mass) use it.
"""

from __future__ import annotations

import numba
import numpy as np

# ln(2)^i / i!, i = 6 .. 1: 2^f's Taylor series, highest power first
_EXP2_TERMS = tuple(
    np.float32(c)
    for c in (
        1.5403530393381606e-4,
        1.3333558146428443e-3,
        9.618129107628477e-3,
        5.550410866482158e-2,
        0.2402265069591007,
        0.6931471805599453,
    )
)
LOG2_E = np.float32(1.4426950408889634)
# Fast-math without "no infinities" or "no NaNs": logits rows hold -inf (banned tokens), and
# under those flags LLVM may fold comparisons with them away.
FINITE_SAFE = {"nsz", "arcp", "contract", "afn", "reassoc"}


@numba.njit(fastmath=True, inline="always")
def exp2_fraction(f):
    """2^f for f in [-0.5, 0.5], to f^6: relative error under 2e-7."""
    power = np.float32(0.0)
    for c in _EXP2_TERMS:
        power = (power + c) * f
    return power + np.float32(1.0)


@numba.njit(fastmath=True, inline="always")
def softmax_weights(scores, n):
    """exp(scores[:n] - max) in place, as 2^(whole + fraction); returns their sum."""
    top = _maximum(scores, n)
    powers = np.empty(n, np.uint32)
    for t in range(n):
        x = max((scores[t] - top) * LOG2_E, np.float32(-126.0))
        whole = np.floor(x + np.float32(0.5))
        scores[t] = exp2_fraction(x - whole)
        powers[t] = np.uint32(np.int32(whole) + 127) << 23  # 2^whole as float32 bits
    scale = powers.view(np.float32)
    total = np.float32(0.0)
    for t in range(n):
        scores[t] *= scale[t]
        total += scores[t]
    return total


@numba.njit(fastmath=True, inline="always")
def _maximum(scores, n):
    """max(scores[:n]), n >= 1, over 16 lanes at once: one running maximum is a chain of
    dependent comparisons that does not vectorize (1,500 scores: 1.8 -> ~0.5 us)."""
    lanes = np.full(16, scores[0])
    t = 0
    while t + 16 <= n:
        for j in range(16):
            value = scores[t + j]
            lanes[j] = value if value > lanes[j] else lanes[j]
        t += 16
    top = scores[0]
    for j in range(16):
        top = max(top, lanes[j])
    for rest in range(t, n):
        top = max(top, scores[rest])
    return top


@numba.njit(fastmath=FINITE_SAFE, cache=True, nogil=True)
def sum_exp(row, peak):
    """sum(exp(row - peak)) for a float32 row whose values are <= peak, a finite float32; -inf
    values add 0 (as does anything under 2^-126 of the peak). Called, not inlined: its own
    fast-math flags (a caller's numba IR inlining would compile it under the caller's)."""
    n = row.shape[0]
    fractions = np.empty(n, np.float32)
    powers = np.empty(n, np.uint32)
    for t in range(n):
        x = max((row[t] - peak) * LOG2_E, np.float32(-127.0))
        whole = np.floor(x + np.float32(0.5))
        fractions[t] = exp2_fraction(x - whole)
        # 2^whole as float32 bits; whole = -127 gives 0 (zero exponent and fraction bits)
        powers[t] = np.uint32(np.int32(whole) + 127) << 23
    scale = powers.view(np.float32)
    total = np.float32(0.0)
    for t in range(n):
        total += fractions[t] * scale[t]
    return total


@numba.njit(fastmath=FINITE_SAFE, cache=True, nogil=True)
def log_softmax_at(scores, peaks, picks):
    """scores [R, V] float32, peaks [R] float32 (each row's maximum), picks [R] int64 -> [R]
    float64: log_softmax(scores[r])[picks[r]] = scores[r, picks[r]] - peaks[r] -
    log(sum(exp(scores[r] - peaks[r]))). A row that is all -inf gives NaN, as log_softmax."""
    out = np.empty(scores.shape[0], np.float64)
    for r in range(scores.shape[0]):
        if peaks[r] == -np.inf:
            out[r] = np.nan
        else:
            total = np.float64(sum_exp(scores[r], peaks[r]))
            out[r] = np.float64(scores[r, picks[r]]) - np.float64(peaks[r]) - np.log(total)
    return out


def load_kernel() -> None:
    """Load (from numba's cache, else compile) log_softmax_at for the sampler's types."""
    matrix = numba.typeof(np.zeros((1, 1), np.float32))
    rows = (numba.typeof(np.zeros(1, np.float32)), numba.typeof(np.zeros(1, np.int64)))
    log_softmax_at.compile((matrix, *rows))
