"""Host lists (indices, per-row settings) onto the device without making the host wait.

`torch.tensor(values, device="cuda")` copies from pageable memory, and PyTorch synchronizes
the stream after such a copy: the host waits for every step already queued, which undoes
asynchronous scheduling (PyTorch's sync debug mode found six such waits in each step that
admits audio windows on an H200). Through pinned memory the copy is queued like a
kernel; PyTorch's pinned-memory cache keeps the host block until the copy has run.
"""

from __future__ import annotations

import torch


def to_device(values, device: torch.device | str, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A list (or CPU tensor) as a tensor on `device`, the copy queued, never waited for."""
    host = values if isinstance(values, torch.Tensor) else torch.tensor(values, dtype=dtype)
    if torch.device(device).type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def stack_to_device(tensors: list[torch.Tensor], device: torch.device | str) -> torch.Tensor:
    """torch.stack(tensors) on `device`: stacked straight into pinned memory on a GPU (one host
    copy, not two), then queued like `to_device`. tensors: equal shapes, on the CPU."""
    if torch.device(device).type != "cuda":
        return torch.stack(tensors).to(device)
    host = torch.empty((len(tensors), *tensors[0].shape), dtype=tensors[0].dtype, pin_memory=True)
    return torch.stack(tensors, out=host).to(device, non_blocking=True)
