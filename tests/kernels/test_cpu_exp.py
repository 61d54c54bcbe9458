"""The vectorized exp's sums and softmax against float64 numpy."""

import numpy as np
import pytest

from scriba.kernels.cpu_exp import log_softmax_at, softmax_weights, sum_exp


def _row(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    row = (rng.standard_normal(n) * rng.uniform(0.1, 30)).astype(np.float32)
    row[rng.random(n) < 0.3] = -np.inf  # banned tokens
    row[rng.integers(n)] = row.max() - 200  # far below: adds 0, as in float32
    return row


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n", [1, 17, 1501, 51865])
def test_sum_exp_is_the_float64_sum(seed, n):
    row = _row(seed, n)
    if not np.isfinite(row).any():
        row[0] = 1.0
    peak = row.max()
    expected = np.exp(row.astype(np.float64) - peak).sum()
    assert sum_exp(row, peak) == pytest.approx(expected, rel=2e-6)
    assert sum_exp(row[n // 2 :], peak) == pytest.approx(
        np.exp(row[n // 2 :] - np.float64(peak)).sum(), rel=2e-6
    )


def test_log_softmax_at_is_log_softmax_at_the_picks():
    rows = np.stack([_row(s, 5000) for s in range(5)])
    rows[3] = -np.inf  # every token banned: NaN, as log_softmax gives
    peaks = rows.max(axis=1)
    with np.errstate(invalid="ignore"):
        shifted = rows.astype(np.float64) - peaks[:, None]
        expected = shifted - np.log(np.exp(shifted).sum(axis=1))[:, None]
    banned = np.flatnonzero(rows[0] == -np.inf)[0]
    for picks in (rows.argmax(axis=1), np.array([banned, 7, 4999, 0, 123])):  # the maxima; any token
        got = log_softmax_at(rows, peaks, picks.astype(np.int64))
        assert np.isnan(got[3])
        keep = [0, 1, 2, 4]
        assert np.allclose(got[keep], expected[keep, picks[keep]], rtol=1e-6, atol=2e-6)
    assert got[0] == -np.inf  # a banned token's


def test_softmax_weights_are_the_shifted_exps():
    scores = np.random.default_rng(1).normal(0, 8, 1500).astype(np.float32)
    expected = np.exp(scores.astype(np.float64) - scores.max())
    weights = scores.copy()
    total = softmax_weights(weights, len(weights))
    assert np.allclose(weights, expected, rtol=1e-5, atol=1e-30)  # float32 rounding of (x - max)
    assert total == pytest.approx(expected.sum(), rel=2e-6)
