"""The KV cache's tensors, allocated for the model runner: one cache per decoder layer ([2, blocks,
block_size, heads, head_dim]: K and V), an 8-bit cache's scales beside each ([2, blocks,
block_size, heads]); and the blocks' copies (copy-on-write) and swaps between the device's pool and
the host's. The writes and reads are the kernels' (kernels/kv_cache.py, paged_attention.py).

Zeros (new_kv_cache), not empty: a never-written slot may be read under a zero attention weight.
A host pool beside a GPU is pinned, so swaps move without blocking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from scriba.engine.host_pages import zeroed_host_memory
from scriba.engine.to_device import to_device
from scriba.kernels.kv8 import is_quantized, new_kv_scales


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


def new_kv_cache(
    num_blocks: int,
    block_size: int,
    heads: int,
    head_dim: int,
    head_major: bool = False,
    **tensor_args,
) -> torch.Tensor:  # [2, num_blocks, block_size, heads, head_dim] zeros
    if head_major:  # one region per K or V and head
        shape = (2, heads, num_blocks, block_size, head_dim)
        return _zeros(shape, regions=2 * heads, **tensor_args).permute(0, 2, 3, 1, 4)
    return _zeros((2, num_blocks, block_size, heads, head_dim), **tensor_args)


def _zeros(
    shape: tuple, regions: int = 1, dtype=torch.float32, device="cpu", pin_memory=False
) -> torch.Tensor:
    """torch.zeros; in plain host memory, zeroed by the OS as it is first written
    (host_pages.zeroed_host_memory, whose docstring says why)."""
    numel = math.prod(shape)
    if torch.device(device).type != "cpu" or pin_memory or numel == 0:
        return torch.zeros(shape, dtype=dtype, device=device, pin_memory=pin_memory)
    itemsize = torch.empty(0, dtype=dtype).element_size()
    pages = zeroed_host_memory(numel * itemsize, regions)
    return torch.frombuffer(pages, dtype=dtype).view(shape)  # the tensor keeps the mapping alive


def copy_blocks(kv_caches: list[torch.Tensor], pairs: list[tuple[int, int]]) -> None:
    """Copy whole blocks src -> dst within each layer's cache (copy-on-write)."""
    if not pairs:
        return
    src = to_device([s for s, _ in pairs], kv_caches[0].device)
    dst = to_device([d for _, d in pairs], kv_caches[0].device)
    for cache in kv_caches:
        cache[:, dst] = cache[:, src]


def swap_blocks(
    src_caches: list[torch.Tensor], dst_caches: list[torch.Tensor], pairs: list[tuple[int, int]]
) -> None:
    """Copy blocks between two pools (device <-> cpu), layer by layer: gathered on the source
    side, moved without blocking (through pinned memory), scattered on the destination side;
    a move to the host waits once for all layers, not once per layer."""
    if not pairs:
        return
    src = to_device([s for s, _ in pairs], src_caches[0].device)
    dst = to_device([d for _, d in pairs], dst_caches[0].device)
    moved = [_move(s[:, src], d.device) for s, d in zip(src_caches, dst_caches)]
    if src_caches[0].device.type == "cuda" and dst_caches[0].device.type == "cpu":
        torch.cuda.current_stream(src_caches[0].device).synchronize()
    for d, m in zip(dst_caches, moved):
        d[:, dst] = m


def _move(blocks: torch.Tensor, device: torch.device) -> torch.Tensor:
    """blocks on `device`, by a non-blocking copy; the caller waits before reading host results."""
    if blocks.device == device:
        return blocks
    if device.type == "cpu":
        out = torch.empty(blocks.shape, dtype=blocks.dtype, pin_memory=blocks.device.type == "cuda")
        return out.copy_(blocks, non_blocking=True)
    return to_device(blocks, device)  # host to device: queued through pinned memory
