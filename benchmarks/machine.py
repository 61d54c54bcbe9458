"""The machine a benchmark ran on, for its results' header."""

from __future__ import annotations

import platform


def cpu_name() -> str:
    """The CPU's model name and the vector extensions that decide its matrix speed (the same
    "AMD EPYC" may be an AVX2-only Zen 2 or a Zen 4/5 with AVX-512, VNNI and bfloat16)."""
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
    except OSError:
        return platform.processor() or platform.machine()
    fields = (line.split(":", 1) for line in info.splitlines() if ":" in line)
    lines = {key.strip(): value.strip() for key, value in fields}
    name = lines.get("model name", platform.machine())
    flags = set(lines.get("flags", "").split())
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile")
    return f"{name} ({', '.join(f for f in wanted if f in flags) or 'no AVX2'})"
