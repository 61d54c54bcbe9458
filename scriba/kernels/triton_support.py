"""Whether Triton can run here: on a CUDA GPU, or anywhere under TRITON_INTERPRET=1.

Kernel files define their Triton kernels only when Triton is imported here (installed, and a GPU
or the interpreter to run it), so the CPU install works without it. TRITON_INTERPRET=1 must be
set before the kernels are imported (tests do it in conftest.py when there is no GPU).
"""

from __future__ import annotations

import os

import torch

IS_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"

# Imported only where its kernels can run (a CUDA GPU, or the interpreter): on a CPU it would cost
# every start 0.08 s for nothing.
triton = tl = None
if IS_INTERPRETED or torch.cuda.is_available():
    try:
        import triton  # noqa: F401
        import triton.language as tl  # noqa: F401 (the kernel files take it from here)
    except ImportError:  # the plain install
        pass
HAS_TRITON = triton is not None


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
