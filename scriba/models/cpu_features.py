"""What this CPU computes natively, where a kernel's choice depends on it."""

from __future__ import annotations

import functools


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where they cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "flags:")
    except OSError:
        return frozenset()
    return frozenset(flags.split(":", 1)[1].split())


def native_bfloat16() -> bool:
    """bfloat16 dot products in hardware (AVX-512 BF16 or AMX): bfloat16 kernels run at full
    speed; elsewhere (AVX2-only CPUs) PyTorch emulates them, slower than float32."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
