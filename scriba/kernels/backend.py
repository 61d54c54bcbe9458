"""Attention backends: the set of ops the Attention layer calls.

- "torch": plain torch ops; runs anywhere; the oracle of the others.
- "numba": the torch path with decode attention in the numba kernel of cpu_paged_attention.py
  (float32 compute on the CPU, over a float32, float16 or bfloat16 cache), and writes into a
  half-precision cache in one pass (cpu_kv_write.py); what "auto" picks there.
- "triton": the Triton KV-cache write and paged decode kernels, torch prefill. Runs on CUDA,
  or on the CPU under TRITON_INTERPRET=1 (how CI tests the kernels inside the engine).
- "cuda": flash varlen prefill (flash-attn, else PyTorch's built-in flash kernel) plus the
  Triton kernels; what "auto" picks on a GPU. Elsewhere (the CPU in another dtype): "torch".
"""

from __future__ import annotations

import torch

from scriba.kernels.kv8 import is_quantized, write_kv_cache_8bit_ref
from scriba.kernels.kv_cache import write_kv_cache_ref, write_kv_cache_triton
from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton
from scriba.kernels.triton_support import HAS_TRITON, require_triton
from scriba.kernels.varlen_attention import (
    equal_length_attention,
    flash_runs,
    varlen_attention_flash,
    varlen_attention_ref,
)


class TorchBackend:
    name = "torch"
    is_graph_safe = False  # the reference reads lengths on the host
    # The cache is stored head by head (kv_cache.new_kv_cache): SDPA then reads each head's
    # context as one contiguous [positions, head_dim] matrix.
    head_major_cache = True
    plans_context_reads = True  # the runner plans `reads` (group_context_reads) once a step
    varlen_attention = staticmethod(varlen_attention_ref)
    paged_decode_attention = staticmethod(paged_decode_attention_ref)

    @staticmethod
    def varlen_is_graph_safe(dtype: torch.dtype, head_dim: int) -> bool:
        """Whether `varlen_attention` can run in a CUDA graph: the reference cannot."""
        return False

    @classmethod
    def encoder_attention(cls, q, k, v, meta, scale: float) -> torch.Tensor:
        """The encoder's non-causal attention over the step's packed sequences: [tokens, heads, dim]."""
        cu, n = meta.encoder_cu_seqlens, meta.encoder_max_seqlen
        return cls.varlen_attention(q, k, v, cu, cu, n, n, scale, causal=False)

    @staticmethod
    def load_kernels(kv_cache, kv_scales=None) -> None:
        """Load the compiled kernels that read this cache ahead of the first step (none here)."""

    @staticmethod
    def write_kv_cache(k, v, kv_cache, slot_mapping, scales=None):
        """K/V to their slots; a quantized cache (with its `scales`) through kv8.py."""
        if scales is None:
            return write_kv_cache_ref(k, v, kv_cache, slot_mapping)
        return write_kv_cache_8bit_ref(k, v, kv_cache, scales, slot_mapping)


class NumbaBackend(TorchBackend):
    """The torch path, with decode attention in the numba kernel: it reads the block tables in
    place, so there are no reads to plan."""

    name = "numba"
    plans_context_reads = False

    @staticmethod
    def paged_decode_attention(q, kv_cache, block_tables, seq_lens, scale, reads=None, kv_scales=None):
        # numba is imported by the first decode step that needs it (0.17 s), not by every start
        from scriba.kernels.cpu_paged_attention import paged_decode_attention_cpu

        return paged_decode_attention_cpu(q, kv_cache, block_tables, seq_lens, scale, kv_scales)

    @staticmethod
    def write_kv_cache(k, v, kv_cache, slot_mapping, scales=None):
        """A float16 or bfloat16 cache in one numba pass; any other as the torch path writes."""
        from scriba.kernels.cpu_kv_write import write_rounded

        if scales is None and write_rounded(k, v, kv_cache, slot_mapping):
            return None
        return TorchBackend.write_kv_cache(k, v, kv_cache, slot_mapping, scales)

    @staticmethod
    def load_kernels(kv_cache, kv_scales=None) -> None:
        from scriba.kernels import cpu_kv_write
        from scriba.kernels.cpu_paged_attention import load_kernel

        load_kernel(kv_cache, kv_scales)
        cpu_kv_write.load_kernel(kv_cache)


class TritonBackend(TorchBackend):
    name = "triton"
    is_graph_safe = True  # decode steps make no host synchronisation
    head_major_cache = False  # the kernels take a contiguous cache
    plans_context_reads = False
    write_kv_cache = staticmethod(write_kv_cache_triton)

    @staticmethod
    def paged_decode_attention(q, kv_cache, block_tables, seq_lens, scale, reads=None, kv_scales=None):
        """The kernel reads any table layout itself: the torch path's `reads` are not needed."""
        return paged_decode_attention_triton(q, kv_cache, block_tables, seq_lens, scale, kv_scales=kv_scales)


class CudaBackend(TritonBackend):
    name = "cuda"
    varlen_attention = staticmethod(varlen_attention_flash)

    @staticmethod
    def varlen_is_graph_safe(dtype: torch.dtype, head_dim: int) -> bool:
        """Whether `varlen_attention` runs a flash kernel here, which a CUDA graph can capture."""
        return flash_runs(dtype, head_dim, "cuda")

    @classmethod
    def encoder_attention(cls, q, k, v, meta, scale: float) -> torch.Tensor:
        """Windows of one length (an audio encoder's) as dense attention, where cuDNN's kernel
        runs (equal_length_attention); otherwise packed, as TorchBackend's."""
        if meta.encoder_equal_len and flash_runs(q.dtype, q.shape[-1], q.device):
            return equal_length_attention(q, k, v, meta.encoder_equal_len, scale)
        return super().encoder_attention(q, k, v, meta, scale)


BACKENDS = {b.name: b for b in (TorchBackend, NumbaBackend, TritonBackend, CudaBackend)}


def get_backend(
    name: str,
    device: torch.device | str,
    dtype: torch.dtype = torch.float32,
    kv_cache_dtype: torch.dtype | None = None,
) -> TorchBackend:
    """ "auto": "cuda" on a GPU with Triton installed, "numba" on the CPU in float32, else
    "torch". A KV cache in another dtype than the compute `dtype` is float16 or bfloat16 under
    float32 on the CPU only, read by "numba", or 8-bit (kv8.py: fp8 or int8), which every backend
    reads."""
    device = torch.device(device)
    kv_cache_dtype = kv_cache_dtype or dtype
    if kv_cache_dtype != dtype and not is_quantized(kv_cache_dtype):
        half = kv_cache_dtype in (torch.float16, torch.bfloat16)
        if not half or (dtype, device.type) != (torch.float32, "cpu"):
            raise ValueError(
                f"a {kv_cache_dtype} KV cache under {dtype} compute runs only on the CPU "
                "(float16 or bfloat16 under float32)"
            )
        if name not in ("auto", "numba"):
            raise ValueError(f"the {name!r} attention backend reads the cache in the compute dtype")
        return NumbaBackend()
    if name == "auto":
        name = auto_backend(device, dtype)
    if name not in BACKENDS:
        raise ValueError(f"unknown attention backend {name!r}; available: {sorted(BACKENDS)}")
    if name == "cuda" and device.type != "cuda":
        raise ValueError(f"the 'cuda' attention backend needs a CUDA device, not {device.type!r}")
    if name == "numba" and (device.type, dtype) != ("cpu", torch.float32):
        raise ValueError(
            f"the 'numba' attention backend runs on the CPU in float32, not {device.type} {dtype}"
        )
    if name in ("triton", "cuda"):
        require_triton(device)
    return BACKENDS[name]()


def auto_backend(device: torch.device, dtype: torch.dtype) -> str:
    if device.type == "cuda":
        return "cuda" if HAS_TRITON else "torch"
    return "numba" if device.type == "cpu" and dtype == torch.float32 else "torch"
