"""K/V written into a head-major float16 or bfloat16 host cache in one pass (numba), on the CPU.

Why: torch's write (kv_cache.write_kv_cache_ref) rounds the float32 K/V into a half-precision copy,
then scatters the copy by slot: two passes over a window's 1,500 rows a layer (tiny.en's cross K/V:
~7 ms of a short clip's ~117 ms). Here each (K or V, head) task reads its columns of the rows once
and writes its run of the cache, rounded as torch rounds (cpu_paged_attention.narrow): ~5 ms.
"""

from __future__ import annotations

import numba
import numpy as np
import torch

from scriba.kernels.cpu_paged_attention import CACHE_DTYPES, launch, narrow
from scriba.kernels.kv_cache import check_write_args

HALF = (torch.float16, torch.bfloat16)


@numba.njit(parallel=True, fastmath=True, cache=True)
def write_kernel(k, v, cache, slots):
    """k, v [tokens, H, D] float32 (any strides) -> cache [2, H, slots, D] (float16 or bfloat16 as
    their bits) at each token's slot."""
    heads, dim = k.shape[1], k.shape[2]
    like = cache[0, 0, 0, 0]
    for task in numba.prange(2 * heads):
        which, h = task // heads, task % heads
        source = k if which == 0 else v
        for t in range(source.shape[0]):
            row = cache[which, h, slots[t]]
            for d in range(dim):
                row[d] = narrow(source[t, h, d], like)


def _views(k, v, kv_cache, slot_mapping) -> tuple | None:
    """The kernel's arguments, or None where it does not apply: float32 K/V into a float16 or
    bfloat16 head-major host cache."""
    if kv_cache.dtype not in HALF or k.dtype != torch.float32 or v.dtype != torch.float32:
        return None
    if kv_cache.device.type != "cpu" or k.device.type != "cpu":
        return None
    head_major = kv_cache.permute(0, 3, 1, 2, 4)  # [2, H, blocks, block_size, D]
    if not head_major.is_contiguous():
        return None
    cache = head_major.flatten(2, 3).view(CACHE_DTYPES[kv_cache.dtype]).numpy()
    return k.numpy(), v.numpy(), cache, slot_mapping.to(torch.int64).numpy()


def write_rounded(k, v, kv_cache, slot_mapping) -> bool:
    """k, v [tokens, H, D] into their slots, as write_kv_cache_ref writes them: True; False (and
    nothing written) for a cache this does not take."""
    args = _views(k, v, kv_cache, slot_mapping)
    if args is None:
        return False
    check_write_args(k, v, kv_cache, slot_mapping)
    launch(write_kernel, args)
    return True


def load_kernel(kv_cache: torch.Tensor) -> None:
    """Load (from numba's cache, else compile) the write for this cache and the strided K/V
    views the layers pass (a fused projection's columns), without running it."""
    heads, dim = kv_cache.shape[3:]
    rows = torch.zeros(2, 2, heads, dim)  # two tokens: views with gaps, as the layers' are
    args = _views(rows[:, 0], rows[:, 1], kv_cache, torch.zeros(2, dtype=torch.int64))
    if args is not None:
        write_kernel.compile(tuple(numba.typeof(a) for a in args))
        write_kernel.compile(tuple(numba.typeof(np.ascontiguousarray(a)) for a in args))
