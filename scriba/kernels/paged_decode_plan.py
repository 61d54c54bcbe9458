"""How the Triton paged decode (kernels/paged_attention.py) is launched: how far each sequence's
context is split across programs (flash-decoding), the tile and warps, and the buffers the
splits' partial softmaxes go to. Shapes only, never the lengths' values: CUDA graphs capture it.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import torch

from scriba.kernels.triton_support import IS_INTERPRETED

# Programs wanted per launch: enough to fill an H100's 132 SMs a few times over. The
# interpreter runs programs one by one, so there contexts are split only as far as a test asks.
TARGET_PROGRAMS = 16 if IS_INTERPRETED else 1024
# The launch the GPU tuner chose (benchmarks' gpu suite; figures in docs/performance.md): tiles of
# 32 positions, the grid heads first, num_warps None: 8, or 4 over an 8-bit cache. Read-only: a
# tuner passes its candidates to the kernel as `launch`.
DEFAULT_LAUNCH = MappingProxyType(dict(tile=32, num_warps=None, num_stages=3, heads_first=True))


def plan_splits(num_seqs: int, num_heads: int, max_context: int, tile: int) -> tuple[int, int]:
    """(partition, num_splits): split contexts only as far as needed to fill the GPU. It
    depends on shapes only, never on the lengths' values, so CUDA graphs can capture it."""
    wanted = max(1, math.ceil(TARGET_PROGRAMS / max(1, num_seqs * num_heads)))
    partition = max(tile, math.ceil(math.ceil(max_context / wanted) / tile) * tile)
    return partition, math.ceil(max_context / partition)


def resolve_launch(overrides: dict | None, eight_bit: bool) -> tuple[int, bool, dict]:
    """(tile, heads_first, Triton's own launch options) from DEFAULT_LAUNCH and the overrides."""
    unknown = set(overrides or {}) - set(DEFAULT_LAUNCH)
    if unknown:
        raise ValueError(f"unknown launch settings {sorted(unknown)}; known: {sorted(DEFAULT_LAUNCH)}")
    launch = {**DEFAULT_LAUNCH, **(overrides or {})}
    tile = launch.pop("tile") or 32
    launch["num_warps"] = launch["num_warps"] or (4 if eight_bit else 8)
    return tile, bool(launch.pop("heads_first")), launch


def partial_buffers(q: torch.Tensor, num_splits: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each (sequence, head, split)'s partial max, sum [seqs, heads, splits] and acc [..., head_dim],
    float32; placeholders of one element when there is one split (the kernel writes `out`)."""
    num_seqs, heads, dim = q.shape
    shape = (num_seqs, heads, num_splits) if num_splits > 1 else (1,)
    empty = lambda *size: torch.empty(size, dtype=torch.float32, device=q.device)  # noqa: E731
    return empty(*shape), empty(*shape), empty(*shape, dim if num_splits > 1 else 1)


def partitions(num_seqs: int, heads: int, max_context: int, tile: int, num_splits: int | None):
    """(positions per split, splits): planned (plan_splits), or as many splits as asked, each a
    whole number of tiles."""
    if num_splits is None:
        return plan_splits(num_seqs, heads, max_context, tile)
    partition = max(tile, math.ceil(math.ceil(max_context / num_splits) / tile) * tile)
    return partition, math.ceil(max_context / partition)
