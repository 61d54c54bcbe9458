"""kernels/cpu_vnni.py against integer arithmetic: a row's codes, scale and zero point as fbgemm's
dynamic uint8 rule gives them, and the VNNI product exactly the integer dot product of those codes with the
weight codes, scaled (where the host has AVX-512 VNNI; elsewhere the step must not choose it)."""

import numpy as np
import torch

from scriba.kernels import cpu_vnni


def rows(seed: int, count: int, size: int) -> np.ndarray:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(count, size, generator=g) * torch.logspace(-2, 2, count)[:, None]
    x[0, 5] = 40.0  # an outlier sets its row's scale
    return x.numpy()


def quantized(x: np.ndarray):
    codes, scales, zeros = (
        np.empty(x.shape, np.uint8),
        np.empty(len(x), np.float32),
        np.empty(len(x), np.int32),
    )
    cpu_vnni.quantize_rows(x, codes, scales, zeros)
    return codes, scales, zeros


def test_rows_are_quantized_over_their_range():
    x = rows(0, 4, 192)
    x[3] = np.abs(x[3])  # all positive: the range still starts at zero
    codes, scales, zeros = quantized(x)
    low, high = np.minimum(x.min(axis=1), 0), np.maximum(x.max(axis=1), 0)
    assert np.allclose(scales, (high - low) / 255, rtol=1e-6)
    assert np.array_equal(zeros, np.round(-low / scales).astype(np.int32)) and zeros[3] == 0
    expected = np.round(x / scales[:, None]).astype(np.int32) + zeros[:, None]
    assert np.abs(codes.astype(np.int32) - expected).max() <= 1  # x * (1 / s) against x / s: a tie
    assert (codes.astype(np.int32) != expected).mean() < 1e-2
    assert codes[0, 5] == 255 and codes[0].min() == 0  # the outlier ends the range, the least starts it
    dequantized = (codes.astype(np.float64) - zeros[:, None]) * scales[:, None]
    assert np.all(np.abs(dequantized - x) <= 0.51 * scales[:, None])  # half a step, as rounding leaves


def test_code_sums_are_each_row_s_sum():
    w = np.random.default_rng(1).integers(-127, 128, (2, 5, 64), dtype=np.int8)
    sums = cpu_vnni.code_sums(w)
    assert sums.shape == (2, 5) and sums.dtype == np.int32
    assert np.array_equal(sums, w.astype(np.int64).sum(-1))


def test_vnni_products_are_the_integer_dot_products_of_the_codes():
    if not cpu_vnni.HAS_VNNI:  # this host: the step keeps its float32 products (test_decoder_step)
        assert not cpu_vnni.fits(64)
        return
    rng = np.random.default_rng(2)
    w = rng.integers(-127, 128, (1000, 192), dtype=np.int8)
    w[7] = 127  # the largest sums: exact in int32
    scales, bias = rng.random(1000, dtype=np.float32) / 100, rng.standard_normal(1000, dtype=np.float32)
    x = rows(3, 3, 192)
    x[2] = 50.0  # every code 255
    codes, row_scales, zeros = quantized(x)
    dots = (codes.astype(np.int64) - zeros[:, None]) @ w.T.astype(np.int64)
    expected = dots * row_scales[:, None].astype(np.float64) * scales.astype(np.float64) + bias
    for kernel in (cpu_vnni.vnni_matvec, cpu_vnni.vnni_matvec_serial):  # the pool's, one thread's
        out = np.empty((3, 1000), np.float32)
        kernel(w, cpu_vnni.code_sums(w), scales, bias, x, out)
        assert np.allclose(out, expected, rtol=1e-6, atol=1e-5)
    assert not cpu_vnni.fits(96)  # not a multiple of 64: the float32 products
