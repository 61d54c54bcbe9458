"""kernels/cpu_avx2_int8.py against integer arithmetic: a row quantized to 7-bit codes (0..127) over
its range, and the AVX2 product exactly the integer dot product of those codes with the weight
codes, scaled, even where every int16 pair sum of `vpmaddubsw` is at its largest."""

import numpy as np
from test_cpu_vnni import rows

from scriba.kernels import cpu_avx2_int8, cpu_vnni


def quantized_7bit(x: np.ndarray):
    codes, scales, zeros = (
        np.empty(x.shape, np.uint8),
        np.empty(len(x), np.float32),
        np.empty(len(x), np.int32),
    )
    cpu_vnni.quantize_rows(x, codes, scales, zeros, cpu_avx2_int8.LEVELS)
    return codes, scales, zeros


def test_rows_are_quantized_to_7_bits_over_their_range():
    x = rows(0, 4, 96)
    x[3] = -np.abs(x[3])  # all negative: the range still ends at zero
    codes, scales, zeros = quantized_7bit(x)
    low, high = np.minimum(x.min(axis=1), 0), np.maximum(x.max(axis=1), 0)
    assert np.allclose(scales, (high - low) / 127, rtol=1e-6)
    assert codes.max() == 127 and zeros[3] == 127  # the outlier row tops out; all-negative: z at the top
    dequantized = (codes.astype(np.float64) - zeros[:, None]) * scales[:, None]
    assert np.all(np.abs(dequantized - x) <= 0.51 * scales[:, None])  # half a step, as rounding leaves


def test_avx2_products_are_the_integer_dot_products_of_the_codes():
    if not cpu_avx2_int8.HAS_AVX2:  # this host: the step keeps its float32 products
        assert not cpu_avx2_int8.fits(32)
        return
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (1000, 160), dtype=np.int8)
    w[7], w[8] = 127, -128  # with codes of 127 every pair sum is +-2 * 127 * 127 or 2 * 127 * 128
    scales, bias = rng.random(1000, dtype=np.float32) / 100, rng.standard_normal(1000, dtype=np.float32)
    x = rows(3, 3, 160)
    x[2] = 50.0  # every code 127
    codes, row_scales, zeros = quantized_7bit(x)
    assert codes[2].min() == 127
    dots = (codes.astype(np.int64) - zeros[:, None]) @ w.T.astype(np.int64)
    expected = dots * row_scales[:, None].astype(np.float64) * scales.astype(np.float64) + bias
    sums = cpu_vnni.code_sums(w).astype(np.int64)
    for kernel in (cpu_avx2_int8.avx2_matvec, cpu_avx2_int8.avx2_matvec_serial):  # the pool's, one thread's
        out = np.empty((3, 1000), np.float32)
        kernel(w, sums, scales, bias, x, out)
        assert np.allclose(out, expected, rtol=1e-6, atol=1e-5)
    assert not cpu_avx2_int8.fits(48)  # not a multiple of 32: the float32 products
