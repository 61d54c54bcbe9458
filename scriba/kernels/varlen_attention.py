"""Variable-length (packed) attention for prefill: the torch reference.

Sequence i owns query rows cu_seqlens_q[i]:cu_seqlens_q[i+1] and key rows
cu_seqlens_k[i]:cu_seqlens_k[i+1]; it never sees another sequence's rows, so the
block-diagonal mask is implicit. `causal` aligns the diagonal bottom-right (as flash-attn
does) so a query attends to keys up to its own position when q and k lengths differ.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def check_varlen_args(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor
) -> None:
    if q.dim() != 3 or k.dim() != 3 or v.dim() != 3:
        raise ValueError(
            "q, k, v must be [tokens, heads, head_dim], got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    if k.shape != v.shape or q.shape[1:] != k.shape[1:]:
        raise ValueError(f"shape mismatch: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    if cu_seqlens_q.shape != cu_seqlens_k.shape or cu_seqlens_q.dim() != 1:
        raise ValueError("cu_seqlens_q and cu_seqlens_k must be 1-D of the same length (num_seqs + 1)")


def varlen_attention_ref(
    q: torch.Tensor,  # [total_q, heads, head_dim]
    k: torch.Tensor,  # [total_k, heads, head_dim]
    v: torch.Tensor,  # [total_k, heads, head_dim]
    cu_seqlens_q: torch.Tensor,  # [num_seqs + 1] int32
    cu_seqlens_k: torch.Tensor,  # [num_seqs + 1] int32
    max_seqlen_q: int,  # unused here; the flash kernels size their grid by it
    max_seqlen_k: int,
    scale: float,
    causal: bool,
) -> torch.Tensor:  # [total_q, heads, head_dim]
    check_varlen_args(q, k, v, cu_seqlens_q, cu_seqlens_k)
    out = torch.empty_like(q)
    bounds_q, bounds_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for i in range(len(bounds_q) - 1):
        q0, q1, k0, k1 = bounds_q[i], bounds_q[i + 1], bounds_k[i], bounds_k[i + 1]
        if q1 == q0:
            continue
        # [1, heads, len, dim]: 4-D inputs let torch pick its fused CPU kernel, not the math path.
        qi, ki, vi = (t.transpose(0, 1)[None] for t in (q[q0:q1], k[k0:k1], v[k0:k1]))
        mask = None
        if causal and q1 - q0 != k1 - k0:
            offset = (k1 - k0) - (q1 - q0)
            rows = torch.arange(q1 - q0, device=q.device)[:, None]
            mask = torch.arange(k1 - k0, device=q.device)[None, :] <= rows + offset
        is_causal = causal and mask is None
        o = F.scaled_dot_product_attention(qi, ki, vi, attn_mask=mask, is_causal=is_causal, scale=scale)
        out[q0:q1] = o[0].transpose(0, 1)
    return out


# -- CUDA: flash attention over packed sequences ------------------------------------------------
try:
    from flash_attn import flash_attn_varlen_func  # the flash-attn package, when installed
except ImportError:
    flash_attn_varlen_func = None

FLASH_DTYPES = (torch.float16, torch.bfloat16)


def flash_runs(dtype: torch.dtype, head_dim: int, device: torch.device | str) -> bool:
    """Whether varlen_attention_flash runs a flash kernel for these inputs (no host sync: it can
    be captured in a CUDA graph), not the reference."""
    return (
        dtype in FLASH_DTYPES
        and torch.device(device).type == "cuda"
        and head_dim % 8 == 0
        and head_dim <= 256
    )


def equal_length_attention(
    q: torch.Tensor,  # [sequences * length, heads, head_dim]: packed, every sequence `length` rows
    k: torch.Tensor,
    v: torch.Tensor,
    length: int,
    scale: float,
) -> torch.Tensor:  # [sequences * length, heads, head_dim]
    """Non-causal attention over packed sequences of one length (an audio encoder's windows) as
    dense SDPA over [sequences, heads, length, head_dim] views, no copy in. With one length the
    dense kernels apply, and on CUDA cuDNN's fused attention comes first: on an H100 it measured
    1.17x and 1.33x PyTorch's flash kernel at Whisper large's shape (20 heads x 1,500 x 64, 1 and
    10 windows), captured in CUDA graphs alike."""
    if q.dim() != 3 or k.shape != q.shape or v.shape != q.shape or q.shape[0] % length:
        raise ValueError(
            f"q, k, v must be [sequences * {length}, heads, head_dim] alike, got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    heads, head_dim = q.shape[1:]
    dense = [t.view(-1, length, heads, head_dim).transpose(1, 2) for t in (q, k, v)]
    # cuDNN, else flash (which runs wherever flash_runs says); never the memory-efficient kernel
    backends = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]
    with sdpa_kernel(backends, set_priority=True):
        out = F.scaled_dot_product_attention(*dense, scale=scale)
    return out.transpose(1, 2).reshape(q.shape)


def varlen_attention_flash(
    q: torch.Tensor,  # [total_q, heads, head_dim], float16/bfloat16 on CUDA
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,  # [num_seqs + 1] int32
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    scale: float,
    causal: bool,
) -> torch.Tensor:
    """flash-attn's varlen kernel when the package is installed, else the same FlashAttention-2
    kernel built into PyTorch (the aten op under torch.nn.attention.varlen). Both align the
    causal diagonal bottom-right, as the reference does. float32 goes to the reference."""
    check_varlen_args(q, k, v, cu_seqlens_q, cu_seqlens_k)
    if not flash_runs(q.dtype, q.shape[-1], q.device):
        return varlen_attention_ref(
            q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, causal
        )
    if cu_seqlens_q.dtype != torch.int32 or cu_seqlens_k.dtype != torch.int32:
        raise ValueError("cu_seqlens must be int32 for the flash kernels")
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    if flash_attn_varlen_func is not None:
        return flash_attn_varlen_func(
            q,
            k,
            v,
            cu_seqlens_q,
            cu_seqlens_k,
            max_seqlen_q,
            max_seqlen_k,
            softmax_scale=scale,
            causal=causal,
        )
    return torch.ops.aten._flash_attention_forward(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, 0.0, causal, False, scale=scale
    )[0]
