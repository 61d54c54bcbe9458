"""EngineConfig.encoder_quantization="fp8": Fp8Linear against its arithmetic done by hand (codes times
scales, a float32 product), each row's result alone or in a batch, and the engine on a tiny Whisper
whose encoder runs in fp8 against the same weights in float32."""

import pytest
import torch
from tiny_whisper import synthetic_clip
from torch import nn

from scriba import Engine, SamplingParams
from scriba.kernels.kv8 import FP8, quantize
from scriba.models.fp8_linear import Fp8Linear, quantize_encoder_fp8

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def product_tolerance(fp8: Fp8Linear) -> dict:
    """The by-hand product's float32 within the product's own dtype's rounding (a GPU's row-wise
    kernels may write bfloat16 only: 8 mantissa bits)."""
    return dict(rtol=1e-5, atol=1e-5) if fp8.product_dtype == torch.float32 else dict(rtol=8e-3, atol=2e-2)


def test_the_product_is_the_codes_times_their_scales():
    torch.manual_seed(1)
    linear = nn.Linear(96, 48, device=DEVICE)
    fp8 = Fp8Linear(linear)
    x = torch.randn(2, 7, 96, device=DEVICE)
    w_codes, w_scales = quantize(linear.weight.detach(), FP8)
    x_codes, x_scales = quantize(x.reshape(-1, 96), FP8)
    by_hand = (x_codes.float() * x_scales[:, None]) @ (w_codes.float() * w_scales[:, None]).t() + linear.bias
    with torch.no_grad():
        out = fp8(x)
        exact = linear(x)
    assert out.shape == (2, 7, 48) and out.dtype == torch.float32
    torch.testing.assert_close(out.reshape(-1, 48), by_hand, **product_tolerance(fp8))
    assert (out - exact).norm() / exact.norm() < 0.06  # e4m3 on both sides
    with torch.no_grad():
        alone = fp8(x[1, 3:4])  # a row's scale is its own: its codes do not depend on the batch
    torch.testing.assert_close(alone[0], out[1, 3], **product_tolerance(fp8))  # (the sums' order may)


def test_a_build_whose_row_wise_products_write_bfloat16_only(monkeypatch):
    """Where torch._scaled_mm refuses the compute dtype as its output (some CUDA builds' row-wise
    kernels), the product is made in bfloat16, its bias with it, and the result cast back."""
    from scriba.models import fp8_linear

    scaled_mm = torch._scaled_mm

    def bfloat16_only(*args, out_dtype, **kwargs):
        if out_dtype != torch.bfloat16:
            raise RuntimeError("Only bf16 high precision output types are supported for row-wise scaling.")
        return scaled_mm(*args, out_dtype=out_dtype, **kwargs)

    monkeypatch.setattr(torch, "_scaled_mm", bfloat16_only)
    fp8_linear.product_dtype.cache_clear()
    try:
        torch.manual_seed(2)
        linear = nn.Linear(64, 32, device=DEVICE)
        fp8 = Fp8Linear(linear)
        x = torch.randn(5, 64, device=DEVICE)
        with torch.no_grad():
            out, exact = fp8(x), linear(x)
    finally:
        fp8_linear.product_dtype.cache_clear()  # probed again with the real op
    assert fp8.product_dtype == torch.bfloat16 and fp8.bias.dtype == torch.bfloat16
    assert out.dtype == torch.float32 and (out - exact).norm() / exact.norm() < 0.06


def test_the_encoder_s_feed_forward_layers_only(tiny_whispers):
    path, _ = tiny_whispers["multilingual"]
    engine = Engine(path, dtype="float32", num_kv_blocks=200, encoder_quantization="fp8")
    kinds = {
        n: type(m).__name__ for n, m in engine.model.named_modules() if isinstance(m, (nn.Linear, Fp8Linear))
    }
    fp8 = sorted(n for n, k in kinds.items() if k == "Fp8Linear")
    layers = len(engine.model.model.encoder.layers)
    assert fp8 == sorted(f"model.encoder.layers.{i}.{fc}" for i in range(layers) for fc in ("fc1", "fc2"))
    assert quantize_encoder_fp8(nn.Sequential()) is not None  # nothing to replace: no error


def test_the_engine_decodes_close_to_the_float_encoder(tiny_whispers):
    path, _ = tiny_whispers["multilingual"]
    prompts = [
        {"audio": (synthetic_clip(s, seed), 16000), "language": "en"} for seed, s in enumerate([3.0, 12.0])
    ]
    params = SamplingParams(max_tokens=3, logprobs=0)
    exact = Engine(path, dtype="float32", num_kv_blocks=400).generate(prompts, params)
    fp8 = Engine(path, dtype="float32", num_kv_blocks=400, encoder_quantization="fp8")
    fp8 = fp8.generate(prompts, params)
    for a, b in zip(exact, fp8):
        assert a.outputs[0].token_ids[:2] == b.outputs[0].token_ids[:2]
        first = [
            next(iter(step.values())).logprob for step in (a.outputs[0].logprobs[0], b.outputs[0].logprobs[0])
        ]
        assert first[0] == pytest.approx(first[1], abs=0.05)


def test_bad_settings_say_what_is_wrong(tiny_whispers):
    path, _ = tiny_whispers["multilingual"]
    with pytest.raises(ValueError, match="encoder_quantization must be one of"):
        Engine(path, encoder_quantization="int4")
    with pytest.raises(ValueError, match="needs encoder_runtime='torch'"):
        Engine(path, device="cpu", encoder_quantization="fp8", encoder_runtime="openvino")
