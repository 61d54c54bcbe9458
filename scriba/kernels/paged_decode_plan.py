"""How the Triton paged decode (kernels/paged_attention.py) is launched: how far each sequence's
context is split across programs (flash-decoding), the tile and warps, and the buffers the
splits' partial softmaxes go to. Shapes only, never the lengths' values: CUDA graphs capture it.
"""

from __future__ import annotations

import math

import torch

from scriba.kernels.triton_support import IS_INTERPRETED

# Programs wanted per launch: enough to fill an H100's 132 SMs a few times over. The
# interpreter runs programs one by one, so there contexts are split only as far as a test asks.
TARGET_PROGRAMS = 16 if IS_INTERPRETED else 1024
# Measured on an H100 (benchmarks/tune_paged_decode.py, benchmarks/results/gpu_h100_2026-11-26.txt):
# Whisper large's 1500-position contexts at batch 256 in tiles of 32 positions, heads first, read
# at 2.8 TB/s from a float16 cache (8 warps) and 2.3 TB/s from an fp8 one (4 warps); sequences
# first, 2.6 and 1.5 TB/s. num_warps None: 8, or 4 over an 8-bit cache.
# int_scores: a 4-bit cache's scores in integers (paged_attention_4bit.py); two_pass: the softmax
# in two passes, no rescale (paged_attention_two_pass.py and the 4-bit's). Neither timed on a GPU yet.
LAUNCH = dict(tile=32, num_warps=None, num_stages=3, heads_first=True, int_scores=False, two_pass=False)


def plan_splits(num_seqs: int, num_heads: int, max_context: int, tile: int) -> tuple[int, int]:
    """(partition, num_splits): split contexts only as far as needed to fill the GPU. It
    depends on shapes only, never on the lengths' values, so CUDA graphs can capture it."""
    wanted = max(1, math.ceil(TARGET_PROGRAMS / max(1, num_seqs * num_heads)))
    partition = max(tile, math.ceil(math.ceil(max_context / wanted) / tile) * tile)
    return partition, math.ceil(max_context / partition)


def resolve_launch(overrides: dict | None, eight_bit: bool) -> tuple[int, bool, dict]:
    """(tile, heads_first, Triton's own launch options) from LAUNCH and the overrides."""
    launch = {**LAUNCH, **(overrides or {})}
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
