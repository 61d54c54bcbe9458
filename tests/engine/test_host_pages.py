"""The CPU KV cache's host memory (kernels/host_pages.py): zeros, written page by page, 2 MB
pages asked for but at the ends of each region. Oracle: the kernel's own record of each mapping's
advice, /proc/self/smaps ("hg": huge pages asked, "nh": not; Linux, as every machine here)."""

import ctypes

import torch

from scriba.engine.host_pages import HUGE_PAGE, zeroed_host_memory
from scriba.engine.kv_pools import new_kv_cache

MB = 1 << 20


def advice_by_range(pages) -> list[tuple[int, int, str]]:
    """(start, end, "hg" | "nh" | "") of the mappings covering `pages`, offsets into it."""
    base = ctypes.addressof(ctypes.c_char.from_buffer(pages))
    found, current = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(x, 16) for x in head.split("-"))
                current = (low - base, high - base) if low < base + len(pages) and high > base else None
            elif head == "VmFlags:" and current:
                flags = line.split()[1:]
                found.append((*current, "hg" if "hg" in flags else "nh" if "nh" in flags else ""))
    return sorted(found)


def test_zeros_that_can_be_written():
    cache = new_kv_cache(64, 16, 4, 8, head_major=True)
    assert cache.shape == (2, 64, 16, 4, 8) and torch.count_nonzero(cache) == 0
    cache[1, 63, 15, 3] = 2.0
    assert cache.sum() == 16 and new_kv_cache(0, 16, 4, 8, head_major=True).numel() == 0


def test_each_regions_ends_stay_in_small_pages_and_the_middle_asks_for_huge_ones():
    regions, size = 3, 16 * MB
    pages = zeroed_host_memory(regions * size, regions)
    advice = advice_by_range(pages)
    assert advice[0][0] <= 0 and advice[-1][1] >= regions * size  # the whole mapping is seen
    for start in range(0, regions * size, size):
        for edge in (start, start + size - 1):  # a region's first and last bytes
            assert [a for lo, hi, a in advice if lo <= edge < hi] == ["nh"]
        middle = start + size // 2
        assert [a for lo, hi, a in advice if lo <= middle < hi] == ["hg"]
    small = sum(min(hi, regions * size) - max(lo, 0) for lo, hi, a in advice if a == "nh")
    assert small <= regions * 2 * (HUGE_PAGE + HUGE_PAGE)  # at most two huge pages an edge
