"""models/decoder_step/kernel.py's pieces against their torch oracles: the int8 KV write against
kv8.quantize (codes and scales equal, ties included), the logits' matrix-vector product against
torch's over the dequantized codes. The whole step is checked in tests/models/test_decoder_step.py."""

import numpy as np
import torch

from scriba.kernels.kv8 import quantize
from scriba.models.decoder_step import kernel


def test_int8_write_equals_kv8_quantize():
    torch.manual_seed(0)
    rows, heads, dim, slots = 5, 3, 16, 40
    kv = torch.randn(2, rows, heads, dim) * torch.logspace(-3, 3, rows)[None, :, None, None]
    kv[0, 0, 0] = torch.arange(dim) - 7.5  # scale 1 (its largest, 127, at 127): halves, ties to even
    kv[0, 0, 0, 0] = 127.0
    kv[1, 1, 2] = 0.0  # a zero vector keeps a positive scale
    cache = np.zeros((2, heads, slots, dim), np.int8)
    scales = np.zeros((2, slots, heads), np.float32)
    where = np.array([3, 17, 18, 31, 39], np.int32)
    kernel._write_int8(kv.numpy(), where, cache, scales)
    for i in range(2):
        codes, expected = quantize(kv[i], torch.int8)  # [rows, heads, dim], [rows, heads]
        assert torch.equal(torch.from_numpy(cache[i][:, where]).transpose(0, 1), codes)
        assert torch.equal(torch.from_numpy(scales[i][where]), expected)
    assert not cache[:, :, np.setdiff1d(np.arange(slots), where)].any()


def test_int8_matvec_equals_the_dequantized_product():
    torch.manual_seed(1)
    q = torch.randint(-127, 128, (1000, 96), dtype=torch.int8)
    scales, bias, x = torch.rand(1000) / 100, torch.randn(1000), torch.randn(3, 96)
    out = torch.empty(3, 1000)
    kernel.int8_matvec(q.numpy(), scales.numpy(), bias.numpy(), x.numpy(), out.numpy())
    expected = x.double() @ (q.double() * scales.double()[:, None]).T + bias.double()
    assert torch.allclose(out.double(), expected, rtol=1e-5, atol=1e-5)
