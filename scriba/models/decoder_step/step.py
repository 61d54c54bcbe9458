"""A pre-norm decoder stack's decode steps, and their logits, as numba calls
(kernel.py beside this file): EngineConfig.create(decoder_runtime="numba").

`NumbaDecoderStep(model)` gathers the int8 weights of the decoder's layers and of the logits
(quantize.py's modules' own codes and scales), the layers' stacked by kind; the model runner
hands it the decode-only steps it `fits` (up to MAX_ROWS rows over a float32, float16, bfloat16
or int8 cache bound to the layers), every other step stays with the modules. Products: where the
host has AVX-512 VNNI, int8 x int8 with each row quantized on the fly (kernels/cpu_vnni.py, as
fbgemm's and CTranslate2's int8 layers do; 2-3x faster products); elsewhere in float32 over the
int8 codes (no activation rounding: the int8 model's weights, computed as a float32 model would).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from scriba.kernels.metadata import AttentionMetadata
from scriba.models.layers import ACTIVATIONS
from scriba.models.quantize import RowScaledLinear, WeightOnlyInt8Linear

# Decode rows a step may have. Each row multiplies every weight row while it is in the core's
# cache, so the weights are read once a step, but the products are matrix-vector loops: beyond
# a few rows the modules' int8 GEMMs (fbgemm) compute faster than the memory reads they save.
MAX_ROWS = 4
CACHE_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int8)
PRODUCTS = ("vnni", "float32")
_KINDS = (  # kernel.py's QKV .. FC2
    ("self_attn", "qkv_proj"),
    ("self_attn", "out_proj"),
    ("encoder_attn", "q_proj"),
    ("encoder_attn", "out_proj"),
    ("fc1",),
    ("fc2",),
)


def unsupported(model: nn.Module, kv_cache_dtype: torch.dtype) -> str | None:
    """Why the numba step cannot run `model`'s decoder over such a cache; None if it can."""
    decoder = model.model.decoder
    layers = decoder.layers
    if not hasattr(decoder, "embed") or getattr(decoder, "layer_norm", None) is None:
        return f"{type(model).__name__}'s decoder is not a pre-norm stack with a final layer norm"
    if not all(layer.pre_norm for layer in layers):
        return f"{type(model).__name__}'s decoder layers are post-norm"
    if not all(isinstance(layer.fc1, (WeightOnlyInt8Linear, RowScaledLinear)) for layer in layers):
        return "its products are int8 ones (quantization='int8')"
    if model.quantized_head is None:
        return "its logits are int8 ones (quantization='int8')"
    if not any(layers[0].activation_fn is ACTIVATIONS[name] for name in ("gelu", "relu")):
        return "its activation is not gelu or relu"
    if kv_cache_dtype not in CACHE_DTYPES:
        return f"it reads a float32, float16, bfloat16 or int8 KV cache, not {kv_cache_dtype}"
    return None


def int8_linear(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(int8 weight [out, in], float32 scales [out], float32 bias [out]) of a quantized Linear:
    a RowScaledLinear's codes before fbgemm packs them (no wait for the packing), else unpacked."""
    if isinstance(module, WeightOnlyInt8Linear):
        q, scales = module.int8_weight, module.scales
    elif module.int8 is not None:
        q, scales = module.int8
    else:
        w = module.weight()
        q, scales = w.int_repr(), w.q_per_channel_scales()
    bias = torch.zeros(q.shape[0]) if module.bias is None else module.bias
    return q, scales.float(), bias.detach().float()


class NumbaDecoderStep:
    """Decode-only steps of up to MAX_ROWS rows of `model`'s decoder, and their logits.
    products: "vnni" or "float32" (see above); None: "vnni" where the host and the widths allow."""

    def __init__(self, model: nn.Module, products: str | None = None):
        from scriba.kernels import cpu_vnni
        from scriba.models.decoder_step import kernel

        self.kernel = kernel
        self.decoder = decoder = model.model.decoder
        layers = decoder.layers
        self.act = kernel.GELU if layers[0].activation_fn is ACTIVATIONS["gelu"] else kernel.RELU
        self.eps = np.float32(layers[0].final_layer_norm.eps)
        per_kind = [[int8_linear(_module(layer, path)) for layer in layers] for path in _KINDS]
        self.weights, self.scales, self.biases = (
            tuple(torch.stack([parts[i] for parts in kind]).contiguous().numpy() for kind in per_kind)
            for i in range(3)
        )
        self._share_weights(layers)
        norms = [
            [layer.self_attn_layer_norm, layer.encoder_attn_layer_norm, layer.final_layer_norm]
            for layer in layers
        ]
        self.norms = _numpy(
            torch.stack([torch.stack([torch.stack([n.weight, n.bias]) for n in three]) for three in norms])
        )  # [L, 3, 2, D]
        self.final_norm = _numpy(torch.stack([decoder.layer_norm.weight, decoder.layer_norm.bias]))
        self.head = tuple(t.contiguous().numpy() for t in int8_linear(model.quantized_head))
        vnni_fits = all(cpu_vnni.fits(w.shape[-1]) for w in (*self.weights, self.head[0]))
        self.products = products or ("vnni" if vnni_fits else "float32")
        if self.products not in PRODUCTS:
            raise ValueError(f"products must be one of {PRODUCTS}, got {products!r}")
        if self.products == "vnni" and not vnni_fits:
            raise ValueError("VNNI products need AVX-512 VNNI and input widths that are multiples of 64")
        if self.products == "vnni":
            self.sums = tuple(cpu_vnni.code_sums(w) for w in self.weights)
            self.head_sums = cpu_vnni.code_sums(self.head[0])
        else:  # the kernel's float32 products: no sums
            self.sums = tuple(np.zeros((w.shape[0], 0), np.float32) for w in self.weights)
        self._bound: tuple = ()
        self._scratch: dict[int, tuple] = {}  # rows -> the kernel's work buffers
        self._attns = [layer.self_attn.attn for layer in layers]  # what the runner binds caches to
        # The embedding as numpy lookups where the decoder's is a sum of two tables (Whisper's):
        # torch's three small ops cost ~0.1 ms a step after the kernels have run.
        tables = getattr(decoder, "embedding_tables", None)
        self.embedding = tuple(_numpy(t) for t in tables()) if tables is not None else None

    def _share_weights(self, layers) -> None:
        """The weight-only layers read their rows of the stacked codes (one copy in memory)."""
        stacked = [torch.from_numpy(w) for w in self.weights]
        for kind, path in enumerate(_KINDS):
            for index, layer in enumerate(layers):
                module = _module(layer, path)
                if isinstance(module, WeightOnlyInt8Linear):
                    module.int8_weight = stacked[kind][index]

    def fits(self, meta: AttentionMetadata) -> bool:
        """A decode-only step of a few rows (the cache's dtype was checked by `unsupported`)."""
        rows = meta.num_decode_tokens
        return 0 < rows <= MAX_ROWS and not meta.num_prefill_tokens and not meta.num_encoder_tokens

    def _caches(self) -> tuple[tuple, tuple]:
        """The layers' caches as numpy [2, H, slots, D] and their scales [2, slots, H] (or
        [2, 0, 0]): made again whenever the model runner has bound other tensors."""
        attns = self._attns
        key = tuple(a.kv_cache.data_ptr() for a in attns)
        if not self._bound or self._bound[0] != key:
            caches = tuple(_cache_view(a.kv_cache) for a in attns)
            empty = np.zeros((2, 0, 0), np.float32)
            scales = tuple(
                empty if a.kv_scales is None else a.kv_scales.view(2, -1, a.kv_scales.shape[3]).numpy()
                for a in attns
            )
            self._bound = (key, caches, scales)
        return self._bound[1], self._bound[2]

    def _args(self, hidden: np.ndarray, meta: AttentionMetadata) -> tuple:
        caches, scales = self._caches()
        attn = self._attns[0]
        ints = [
            np.ascontiguousarray(t.numpy(), dtype=np.int32)  # no copy of those that are int32 already
            for t in (
                meta.slot_mapping,
                meta.decode_block_tables,
                meta.decode_seq_lens,
                meta.cross_block_tables,
                meta.cross_seq_lens,
            )
        ]
        rows = hidden.shape[0]
        if rows not in self._scratch:
            ffn_dim = self.weights[4].shape[1]
            self._scratch[rows] = self.kernel.scratch(rows, hidden.shape[1], attn.num_heads, ffn_dim)
        weights = (self.norms, self.final_norm, self.weights, self.scales, self.biases, self.sums)
        weights += (self.eps, self.act)
        step = (caches, scales, *ints, attn.kv_cache.shape[2], np.float32(attn.scale))
        return (hidden, self._scratch[rows], *weights, *step)

    def __call__(self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata):
        """input_ids, positions [R] -> hidden [R, d_model], after the final layer norm."""
        from scriba.kernels.cpu_paged_attention import launch

        if self.embedding is not None:
            tokens, places = self.embedding
            hidden = torch.from_numpy(tokens[input_ids.numpy()] + places[positions.numpy()])
        else:
            hidden = self.decoder.embed(input_ids, positions).float().contiguous()
        launch(self.kernel.decoder_step, self._args(hidden.numpy(), meta))
        return hidden

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[R, d_model] -> [R, vocab] float32, from the int8 output projection's codes."""
        from scriba.kernels.cpu_paged_attention import launch

        out = np.empty((hidden.shape[0], self.head[0].shape[0]), np.float32)
        kernel, args = self._logits_kernel(np.ascontiguousarray(hidden.numpy()), out)
        launch(kernel, args)
        return torch.from_numpy(out)

    def _logits_kernel(self, hidden: np.ndarray, out: np.ndarray) -> tuple:
        """(the kernel, its arguments) of the logits of `hidden` into `out`."""
        codes, scales, bias = self.head
        if self.products == "vnni":
            from scriba.kernels.cpu_vnni import vnni_matvec

            return vnni_matvec, (codes, self.head_sums, scales, bias, hidden, out)
        return self.kernel.int8_matvec, (codes, scales, bias, hidden, out)

    def load_kernels(self) -> None:
        """Load (from numba's cache, else compile) both kernels for these arrays, without running
        them: what the first decode step would do (engine/kernel_preload.py)."""
        import numba

        hidden = np.zeros((1, self.norms.shape[-1]), np.float32)
        one, table = torch.ones(1, dtype=torch.int32), torch.ones(1, 1, dtype=torch.int32)
        meta = SimpleNamespace(slot_mapping=one, decode_block_tables=table, decode_seq_lens=one)
        meta.cross_block_tables, meta.cross_seq_lens = table, one
        args = self._args(hidden, meta)
        self.kernel.decoder_step.compile(tuple(numba.typeof(a) for a in args))
        kernel, logits = self._logits_kernel(hidden, np.zeros((1, self.head[0].shape[0]), np.float32))
        kernel.compile(tuple(numba.typeof(a) for a in logits))


def _module(layer: nn.Module, path: tuple[str, ...]) -> nn.Module:
    for name in path:
        layer = getattr(layer, name)
    return layer


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().contiguous().numpy()


def _cache_view(kv_cache: torch.Tensor) -> np.ndarray:
    """[2, blocks, block_size, H, D] (head-major storage) as [2, H, slots, D], no copy."""
    from scriba.kernels.cpu_paged_attention import CACHE_DTYPES as READS  # float16 as int16 bits, ...

    view = kv_cache.view(READS[kv_cache.dtype]).permute(0, 3, 1, 2, 4).flatten(2, 3)
    if not view.is_contiguous():
        raise ValueError("the numba decoder step reads a head-major cache (kv_cache.new_kv_cache)")
    return view.numpy()
