"""The fp8 row quantizer's Triton kernel (Triton's interpreter here, a GPU's compiler there) against
kv8.quantize, the torch reference: the same codes bit for bit and the same scales.

On a GPU torch divides by a Python number as a product with its reciprocal, which can put the
reference's scale one float32 step from the exact quotient (the kernel's); there the scales are
compared within that step and the codes against the reference's division by the kernel's scales."""

import pytest
import torch

from scriba.kernels.fp8_rows import CHUNK, quantize_rows_fp8, quantize_rows_fp8_triton
from scriba.kernels.kv8 import FP8, LARGEST, quantize

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def assert_like_the_reference(x, codes, scales):
    ref_codes, ref_scales = quantize(x, FP8)
    assert codes.dtype == FP8 and scales.shape == (x.shape[0], 1)
    if DEVICE == "cpu":
        assert torch.equal(scales[:, 0], ref_scales)
        assert torch.equal(codes.view(torch.int8), ref_codes.view(torch.int8))
    else:
        torch.testing.assert_close(scales[:, 0], ref_scales, rtol=2.4e-7, atol=0)
        by_kernel_scales = (x.float() / scales).clamp(-LARGEST[FP8], LARGEST[FP8]).to(FP8)
        assert torch.equal(codes.view(torch.int8), by_kernel_scales.view(torch.int8))
    error = (codes.float() * scales - x.float()).abs()
    # e4m3: 3 mantissa bits; below 2**-6 of a row's scale its codes are subnormal, 2**-9 apart
    assert (error <= 0.07 * x.float().abs() + scales * 2**-10).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_codes_and_scales_match_the_reference(dtype):
    torch.manual_seed(0)
    x = torch.randn(19, 300) * torch.logspace(-4, 3, 19)[:, None]  # subnormal codes to 448
    x[4] = 0  # a zero row keeps a positive scale
    x = x.to(dtype).to(DEVICE)
    codes, scales = quantize_rows_fp8_triton(x)
    assert_like_the_reference(x, codes, scales)


def test_rows_wider_than_a_chunk():
    """Rows read in several chunks, the last one partial; each row's largest value in a later chunk."""
    torch.manual_seed(3)
    cols = 2 * CHUNK + 200
    x = torch.randn(6, cols)
    x[torch.arange(6), torch.tensor([1, CHUNK - 1, CHUNK, 2 * CHUNK - 1, 2 * CHUNK, cols - 1])] = 40.0
    x = x.to(torch.float16).to(DEVICE)
    codes, scales = quantize_rows_fp8_triton(x)
    assert_like_the_reference(x, codes, scales)
    assert torch.equal(scales[:, 0], torch.full((6,), 40.0 / 448.0, device=DEVICE))


def test_a_strided_view_and_the_dispatcher():
    x = torch.randn(8, 96, device=DEVICE)[:, ::2]  # rows of 48, stride 96
    codes, scales = quantize_rows_fp8_triton(x)
    ref_codes, ref_scales = quantize_rows_fp8(x.contiguous())
    assert torch.equal(codes.view(torch.int8), ref_codes.view(torch.int8)) and torch.equal(scales, ref_scales)
