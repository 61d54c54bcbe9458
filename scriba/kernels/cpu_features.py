"""What this CPU computes natively, where a kernel's choice depends on it.

`SCRIBA_MAX_CPU_ISA=avx2` hides AVX-512, AVX-VNNI and AMX from Scriba's own choices (the VNNI
products, the OpenVINO encoder's bfloat16), to run an AVX2-only host's paths on a newer CPU (with
`NUMBA_CPU_NAME=haswell` for numba's code and `ATEN_CPU_CAPABILITY=avx2` for PyTorch's). Not a
stand-in for such a host's speed: OpenVINO's release build cannot be held to AVX2 (under
`ONEDNN_MAX_CPU_ISA=AVX2` its own kernels still pick AVX-512 ones and compiling fails)."""

from __future__ import annotations

import functools
import os

NEWER_THAN_AVX2 = ("avx512", "avx_vnni", "amx")


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo); empty where they cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "flags:")
    except OSError:
        return frozenset()
    found = flags.split(":", 1)[1].split()
    if os.environ.get("SCRIBA_MAX_CPU_ISA", "").lower() == "avx2":
        found = [f for f in found if not f.startswith(NEWER_THAN_AVX2)]
    return frozenset(found)


def native_bfloat16() -> bool:
    """bfloat16 dot products in hardware (AVX-512 BF16 or AMX): bfloat16 kernels run at full
    speed; elsewhere (AVX2-only CPUs) PyTorch emulates them, slower than float32."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
