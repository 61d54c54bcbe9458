"""Whether Triton can run here: on a CUDA GPU, or anywhere under TRITON_INTERPRET=1.

Kernel files define their Triton kernels only when Triton imports, so the CPU install works
without it. TRITON_INTERPRET=1 must be set before the kernels are imported (tests do it in
conftest.py when there is no GPU).
"""

from __future__ import annotations

import os

import torch

try:
    import triton  # noqa: F401
    import triton.language as tl  # noqa: F401

    HAS_TRITON = True
except ImportError:  # the plain CPU install
    triton = tl = None
    HAS_TRITON = False

IS_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def triton_runs_on(device: torch.device | str) -> bool:
    """Triton kernels compile for CUDA tensors; CPU tensors need the interpreter."""
    device = torch.device(device)
    return HAS_TRITON and (device.type == "cuda" or IS_INTERPRETED)


def require_triton(device: torch.device | str) -> None:
    if not HAS_TRITON:
        raise RuntimeError("the Triton kernels need the `triton` package (pip install triton)")
    if not triton_runs_on(device):
        raise RuntimeError(
            "Triton kernels run on CUDA tensors, or on "
            f"{torch.device(device).type} tensors under TRITON_INTERPRET=1"
        )


def next_power_of_2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()
