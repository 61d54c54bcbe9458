"""The KV cache's tensors, allocated for the model runner: one cache per decoder layer ([2, blocks,
block_size, heads, head_dim]: K and V), an 8-bit cache's scales beside each ([2, blocks,
block_size, heads]).

Zeros (new_kv_cache), not empty: a never-written slot may be read under a zero attention weight.
A host pool beside a GPU is pinned, so swaps move without blocking.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from scriba.kernels.kv8 import is_quantized, new_kv_scales
from scriba.kernels.kv_cache import new_kv_cache


@dataclass
class CacheShape:
    """What every pool of one engine is made of."""

    block_size: int
    heads: int
    head_dim: int
    num_layers: int
    dtype: torch.dtype  # the cache's (kv8.py's 8-bit dtypes included)
    compute_device: torch.device  # where the model runs
    head_major: bool  # the backend's layout on the compute device (kv_cache.new_kv_cache)

    @classmethod
    def of(cls, model, block_size: int, dtype: torch.dtype, device=None, head_major=False) -> CacheShape:
        layers = model.decoder_attention_layers()
        attn = layers[0][0]
        device = torch.device(device or "cpu")
        return cls(block_size, attn.num_heads, attn.head_dim, len(layers), dtype, device, head_major)

    def _placement(self, num_blocks: int, device) -> dict:
        device = torch.device(device)
        pin = device.type == "cpu" and self.compute_device.type == "cuda" and num_blocks > 0
        return dict(device=device, pin=pin, head_major=self.head_major and device == self.compute_device)

    def layer_caches(self, num_blocks: int, device) -> list[torch.Tensor]:
        """One cache a layer [2, blocks, block_size, heads, head_dim]."""
        where = self._placement(num_blocks, device)
        block = (num_blocks, self.block_size, self.heads, self.head_dim)
        tensor = dict(dtype=self.dtype, device=where["device"], pin_memory=where["pin"])
        head_major = where["head_major"]
        return [new_kv_cache(*block, head_major=head_major, **tensor) for _ in range(self.num_layers)]

    def layer_scales(self, num_blocks: int, device) -> list[torch.Tensor]:
        """An 8-bit cache's scales, beside each of layer_caches' (none for a float cache)."""
        if not is_quantized(self.dtype):
            return []
        where = self._placement(num_blocks, device)
        shape = (num_blocks, self.block_size, self.heads, where["device"], where["pin"])
        return [new_kv_scales(*shape) for _ in range(self.num_layers)]

    def bytes_per_block(self) -> int:
        """A block's bytes over every layer's cache and scales."""
        itemsize = torch.empty((), dtype=self.dtype).itemsize
        vectors = 2 * self.block_size * self.heads
        scales = vectors * 4 if is_quantized(self.dtype) else 0  # a float32 per vector
        return self.num_layers * (vectors * self.head_dim * itemsize + scales)
