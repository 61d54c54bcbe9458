"""int8 weights with dynamic int8 activations for a model's Linear layers and its logits, on the CPU.

Every `nn.Linear` (encoder and decoder projections, feed-forward layers) becomes a
`RowScaledLinear` over PyTorch's quantized (fbgemm) ops: weights packed as int8 with one scale per
output channel, activations quantized per call with one scale per row (so a request's result
does not depend on its batch), products in fbgemm's int8 kernels. The output projection
(a tied embedding, not a Linear) gets its own quantized copy, `model.quantized_head`, which
`compute_logits` uses; the embedding itself stays in float32 for the token lookup. A model
loaded from an int8 checkpoint (`model.int8_weights`, see models/loader.gather_int8) keeps the
checkpoint's own int8 weights and per-row scales instead of requantizing its float weights.
Where the CPU has bfloat16 dot products, the decoder's layers are `WeightOnlyInt8Linear`s instead.

Why PyTorch's own quantized ops: measured on this project's 2-core AVX2 CPU (torch 2.13),
it runs tiny.en's encoder GEMM [12000, 384] x [384, 1536] in 87 ms (float32: 119 ms) and its
output projection [24, 384] x [384, 51864] in 5.7 ms (float32: 22.7 ms); torchao 0.18's
Int8DynamicActivationInt8WeightConfig, eager, took 2911 ms and 190 ms for the same products.
PyTorch has deprecated its quantized modules in favour of torchao; revisit when torchao's CPU path
is fast without torch.compile.
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import Future

import torch
from torch import nn

from scriba.kernels.cpu_features import native_bfloat16

QUANTIZATIONS = ("int8",)


def quantize_int8(model: nn.Module, weight_only_decoder: bool | None = None) -> nn.Module:
    """Quantize `model` (on the CPU, float32) in place; returns it. `weight_only_decoder`: the
    decoder's Linear layers, but the cross-attention K/V projection (1,500 encoder rows a
    window), as WeightOnlyInt8Linear; None: where the CPU computes bfloat16 natively. Each layer
    is built once from its int8 weights: one fbgemm prepack for a RowScaledLinear (on a thread
    of their own), none for a WeightOnlyInt8Linear (tiny.en's start-up spent 0.6 s packing,
    unpacking and repacking, then 0.2 s packing its output projection)."""
    checkpoint = model.int8_weights
    weight, bias = model.output_projection()
    head_name = next((n for n, p in model.named_parameters() if p is weight), None)
    weight_only = native_bfloat16() if weight_only_decoder is None else weight_only_decoder
    to_pack: list[RowScaledLinear] = []
    for name, linear in [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]:
        q, scales = per_channel_int8(linear.weight, checkpoint.get(f"{name}.weight"))
        if weight_only and name.startswith("model.decoder.") and not name.endswith("encoder_attn.kv_proj"):
            _replace(model, name, WeightOnlyInt8Linear(q, scales, linear.bias))
        else:
            to_pack.append(RowScaledLinear(q, scales, linear.bias, pack=False))
            _replace(model, name, to_pack[-1])
    head = RowScaledLinear(*per_channel_int8(weight, checkpoint.get(head_name)), bias, pack=False)
    model.quantized_head = head
    pack_in_background([*to_pack, head])
    model.int8_weights = {}  # the int8 copies now live in the quantized modules
    return model


def pack_in_background(layers: list[RowScaledLinear]) -> None:
    """Pack the layers' int8 weights for fbgemm, in order, on a thread of their own: packing
    tiny.en's output projection alone takes 0.2 s, in C++ that releases the GIL, so it runs
    while the engine finishes starting and the first request's audio is read and encoded. A
    layer's first use waits for its own packing."""
    futures = [Future() for _ in layers]
    for layer, future in zip(layers, futures):
        layer.packing = future

    def pack() -> None:
        for layer, future in zip(layers, futures):
            try:
                future.set_result(layer.pack())
            except Exception as e:  # raised where the layer is first used
                future.set_exception(e)

    # Not a daemon: a process that exits while fbgemm packs would abort ("terminate called
    # without an active exception"); exit waits for the packing instead (under a second).
    threading.Thread(target=pack, name="scriba-int8-packing").start()


def per_channel_int8(weight: torch.Tensor, int8: tuple | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 [out, in], float64 scales [out]) with weight ~= int8 * scale row by row: a
    checkpoint's own int8 weight and CTranslate2 scale (rows are int8 / its scale) where given,
    else the float weight quantized per output channel, symmetrically, as `quantize_dynamic`'s
    per-channel observer does."""
    if int8 is not None:
        q, ct2_scale = int8
        return q.contiguous(), 1.0 / ct2_scale.double()
    # quantize_dynamic's observer, symmetric int8: scale = max |w| / 127.5 (at least float32's eps)
    w = weight.detach().float()
    scales = torch.clamp_min(w.abs().amax(1) / 127.5, torch.finfo(torch.float32).eps)
    # torch.quantize_per_channel's rounding (x * float32(1 / scale), half to even), without its
    # deprecation warning
    q = torch.round(w * (1.0 / scales)[:, None]).clamp_(-128, 127).to(torch.int8)
    return q, scales.double()


def _per_channel_tensor(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """PyTorch's per-channel quantized tensor [out, in] over int8 `q`, zero points 0."""
    zero = torch.zeros(q.shape[0], dtype=torch.long)
    with warnings.catch_warnings():  # the deprecation notice of quantized tensors: fbgemm needs one
        warnings.simplefilter("ignore")
        return torch._make_per_channel_quantized_tensor(q, scales, zero, 0)


class RowScaledLinear(nn.Module):
    """An int8 Linear whose activations are quantized row by row, as CTranslate2 does.

    PyTorch's dynamic Linear quantizes its whole input [rows, in] with one scale, so each row's
    rounding depends on the other rows (in the engine: on the other requests of the step), and
    one loud row coarsens them all: on the dev set that cost 0.025 WER. Here each row is divided
    by its max |x| and quantized at a fixed scale: 7 bits, [-1, 1] -> [1, 127] (fbgemm's
    reduce_range: 8-bit activations overflow its int16 pair sums on CPUs without VNNI); the
    int8 product is scaled back by the row's max.
    """

    SCALE, ZERO_POINT = 1.0 / 63, 64  # q = round(x * 63) + 64: -1 -> 1, +1 -> 127

    def __init__(self, q: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None = None, pack=True):
        """`q` int8 [out, in] and float64 `scales` [out] (see per_channel_int8), packed once for
        fbgemm: here, or (`pack=False`) by the first use or a packing under way (`packing`, a
        Future: pack_in_background); `bias` [out] float32 or None."""
        super().__init__()
        self.int8 = (q, scales)
        self.packing: Future | None = None
        self._packed = self.pack() if pack else None
        self.register_buffer("bias", None if bias is None else bias.detach())
        self.out_features, self.in_features = q.shape

    def pack(self):
        return torch.ops.quantized.linear_prepack(_per_channel_tensor(*self.int8), None)

    @property
    def packed(self):
        """fbgemm's packed int8 weight."""
        if self._packed is None:
            self._packed = self.pack() if self.packing is None else self.packing.result()
            self.int8 = self.packing = None  # the packed form holds the weights now
        return self._packed

    def weight(self) -> torch.Tensor:  # the quantized weight [out, in]
        return torch.ops.quantized.linear_unpack(self.packed)[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] -> [..., out]
        flat = x if x.dim() == 2 else x.reshape(-1, self.in_features)
        peak = flat.abs().amax(1, keepdim=True).clamp_min_(1e-30)  # [rows, 1]
        out = _int8_linear(flat / peak, self.SCALE, self.ZERO_POINT, self.packed)
        out = out.mul_(peak) if self.bias is None else torch.addcmul(self.bias, out, peak, out=out)
        return out if x.dim() == 2 else out.view(*x.shape[:-1], self.out_features)


class WeightOnlyInt8Linear(nn.Module):
    """An int8 Linear whose activations stay in bfloat16: the same int8 weights and per-channel
    scales as a RowScaledLinear, one PyTorch op (`_weight_int8pack_mm`, the int8
    weight-only kernel gpt-fast decodes with), float32 out.

    Why, for the decoder on CPUs with bfloat16 dot products: a decode step has a few rows and
    its weights are cold (the step's cross-attention K/V and the output projection pass through
    the cache between two uses of a layer). Measured on a 2-core AVX-512 BF16 Zen 4, one row,
    cache flushed: 46-53 us for tiny.en's decoder products against RowScaledLinear's 178-235
    (fbgemm quantizes, packs and dequantizes around its product). It costs ~9 us a row, so the
    encoder-side K/V projection (1,500 rows) keeps fbgemm. Each row's result is the same whatever
    rows share the call (checked bit for bit): a request's text does not depend on its batch.
    """

    def __init__(self, q: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None = None):
        """`q` int8 [out, in] and float64 `scales` [out] (see per_channel_int8)."""
        super().__init__()
        self.register_buffer("int8_weight", q.contiguous())
        # The kernel's scales must be bfloat16 like its input: it gets ones, and the checkpoint's
        # float32 scales are applied to its output, so they stay exact.
        self.register_buffer("scales", scales.float())
        self.register_buffer("ones", torch.ones(q.shape[0], dtype=torch.bfloat16))
        self.register_buffer("bias", None if bias is None else bias.detach())
        self.out_features, self.in_features = q.shape

    def weight(self) -> torch.Tensor:  # the quantized weight [out, in], as RowScaledLinear's
        return _per_channel_tensor(self.int8_weight, self.scales.double())

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., in] float32 -> [..., out] float32
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16)
        out = torch._weight_int8pack_mm(flat, self.int8_weight, self.ones).float()
        out = out.mul_(self.scales) if self.bias is None else torch.addcmul(self.bias, out, self.scales)
        return out.view(*x.shape[:-1], self.out_features)


# int8 activations at a given scale and zero point, int8 weights, float32 out (fbgemm)
_int8_linear = torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32


def _replace(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, attr = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, attr, module)
