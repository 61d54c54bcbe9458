"""Host memory for a CPU KV cache: zeroed by the OS page by page as it is first written, in
2 MB pages but at the ends of each region.

Why not torch.zeros: it writes every byte (0.34 s for tiny.en's default cache) where a request
uses a few percent. Why 2 MB pages: decode attention streams each sequence's 1,500 cross-attention
positions per head, and with 4 KB pages every 4 KB read is a TLB miss and a restart of the
hardware prefetcher: on a 2-core AVX-512 VM, the numba kernel read a layer's 17 contexts in 3.7 ms
from 2 MB pages and 4.5 ms from 4 KB pages; the dev long-form recording ran at 84-89x real time
against 79x. Why the ends of each region in 4 KB pages: a head-major cache is one region per
(K or V, head), a request's cross-attention blocks come from the start of the pool and its
self-attention blocks from the end, so a first request writes a few rows at both ends of every
region, and on that VM each 2 MB page cost ~5 ms to fault in (96 of them for tiny.en: 0.45 s of a
first transcription); 4 KB pages cost microseconds.
"""

from __future__ import annotations

import ctypes
import mmap

HUGE_PAGE = 2 << 20


def zeroed_host_memory(nbytes: int, regions: int = 1) -> mmap.mmap:
    """An anonymous private mapping of `nbytes` zeros, in `regions` equal consecutive regions: 2 MB
    pages where the OS offers them (Linux's transparent huge pages, on request), but the first
    and last 2 MB of each region, which stay in 4 KB pages."""
    pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if not (hasattr(mmap, "MADV_HUGEPAGE") and hasattr(mmap, "MADV_NOHUGEPAGE")):
        return pages  # not Linux: the OS's own pages
    pages.madvise(mmap.MADV_HUGEPAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(pages))  # page-aligned, not always 2 MB-aligned
    size = nbytes // regions
    for start in range(0, regions * size, size):
        for edge in (start, start + size - HUGE_PAGE):
            # the huge pages (aligned in memory) the edge's 2 MB overlap
            low = max(0, _down(base + max(edge, start)) - base)
            high = min(nbytes, _down(base + min(edge + HUGE_PAGE, start + size) - 1) + HUGE_PAGE - base)
            if high > low:
                pages.madvise(mmap.MADV_NOHUGEPAGE, low, high - low)
    return pages


def _down(address: int) -> int:
    return address - address % HUGE_PAGE
