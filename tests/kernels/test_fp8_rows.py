"""The fp8 row quantizer's Triton kernel (Triton's interpreter here, a GPU's compiler there) against
kv8.quantize, the torch reference: the same codes bit for bit and the same scales."""

import pytest
import torch

from scriba.kernels.fp8_rows import quantize_rows_fp8, quantize_rows_fp8_triton
from scriba.kernels.kv8 import FP8, quantize

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_codes_and_scales_match_the_reference(dtype):
    torch.manual_seed(0)
    x = torch.randn(19, 300) * torch.logspace(-4, 3, 19)[:, None]  # subnormal codes to 448
    x[4] = 0  # a zero row keeps a positive scale
    x = x.to(dtype).to(DEVICE)
    codes, scales = quantize_rows_fp8_triton(x)
    ref_codes, ref_scales = quantize(x, FP8)
    assert codes.dtype == FP8 and scales.shape == (19, 1)
    assert torch.equal(codes.view(torch.int8), ref_codes.view(torch.int8))
    assert torch.equal(scales[:, 0], ref_scales)
    dequantized = codes.float() * scales
    assert torch.allclose(dequantized, x.float(), rtol=0.07, atol=1e-9)  # e4m3: 3 mantissa bits


def test_a_strided_view_and_the_dispatcher():
    x = torch.randn(8, 96, device=DEVICE)[:, ::2]  # rows of 48, stride 96
    codes, scales = quantize_rows_fp8_triton(x)
    ref_codes, ref_scales = quantize_rows_fp8(x.contiguous())
    assert torch.equal(codes.view(torch.int8), ref_codes.view(torch.int8)) and torch.equal(scales, ref_scales)
