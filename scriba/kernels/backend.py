"""Attention backends: the set of ops the Attention layer calls. The torch one runs anywhere."""

from __future__ import annotations

import torch

from scriba.kernels.kv_cache import write_kv_cache_ref
from scriba.kernels.paged_attention import paged_decode_attention_ref
from scriba.kernels.varlen_attention import varlen_attention_ref


class TorchBackend:
    """Plain torch ops: the CPU path, and the oracle the GPU kernels are tested against."""

    name = "torch"

    varlen_attention = staticmethod(varlen_attention_ref)
    write_kv_cache = staticmethod(write_kv_cache_ref)
    paged_decode_attention = staticmethod(paged_decode_attention_ref)


_BACKENDS = {"torch": TorchBackend}


def get_backend(name: str, device: torch.device | str) -> TorchBackend:
    """"auto" picks the best backend available for `device`."""
    if name == "auto":
        name = "torch"
    if name not in _BACKENDS:
        raise ValueError(f"unknown attention backend {name!r}; available: {sorted(_BACKENDS)}")
    return _BACKENDS[name]()
