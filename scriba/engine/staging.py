"""A step's integer inputs, moved to the device in one copy.

The model runner packs each step's token ids, positions, slots, lengths and block tables as
numpy arrays; `HostStaging.upload` lays them out in one host buffer (pinned on a GPU, so the
copy is asynchronous) and moves the buffer with one non-blocking host-to-device copy. The
returned tensors are views of one device buffer. On the CPU nothing moves: the arrays are
wrapped as they are.

Two host buffers take turns: under asynchronous scheduling the host packs step k + 1 while
step k runs, and reuses step k - 1's buffer only after waiting for that step's results (a
device-to-host transfer on the same stream, after the copy).
"""

from __future__ import annotations

import numpy as np
import torch

_ALIGN = 8  # bytes: every region starts where an int64 may


class HostStaging:
    def __init__(self, device: torch.device | str, capacity: int = 1 << 16, buffered: bool | None = None):
        """buffered: stage through the host buffer (default: off the CPU only; the tests
        turn it on to check the layout on the CPU)."""
        self.device = torch.device(device)
        self.copies = 0  # host-to-device copies made, over the runner's life
        self.hosts: list[torch.Tensor] = []
        self.dev = None
        if buffered if buffered is not None else self.device.type != "cpu":
            self._grow(capacity)

    def _grow(self, nbytes: int) -> None:
        size = 1 << max(nbytes - 1, 1).bit_length()
        pin = self.device.type == "cuda"
        self.hosts = [torch.empty(size, dtype=torch.uint8, pin_memory=pin) for _ in range(2)]
        self.dev = torch.empty(size, dtype=torch.uint8, device=self.device)

    def upload(self, arrays: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        """{name: 1-D or 2-D int32/int64 array} -> {name: the same values on the device}."""
        if not self.hosts:
            return {name: torch.from_numpy(np.ascontiguousarray(a)) for name, a in arrays.items()}
        offsets, end = {}, 0
        for name, a in arrays.items():
            offsets[name] = end
            end += -(-a.nbytes // _ALIGN) * _ALIGN
        if end > self.dev.numel():
            self._grow(end)
        buffer = self.hosts[self.copies % 2]
        host = buffer.numpy()
        for name, a in arrays.items():
            start = offsets[name]
            host[start : start + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
        self.dev[:end].copy_(buffer[:end], non_blocking=True)
        self.copies += 1
        return {name: self._view(offsets[name], a) for name, a in arrays.items()}

    def _view(self, start: int, a: np.ndarray) -> torch.Tensor:
        dtype = torch.from_numpy(a[:0]).dtype
        return self.dev[start : start + a.nbytes].view(dtype).view(a.shape)
