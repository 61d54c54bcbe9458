"""An encoder of fixed-size inputs (an audio model's 30 s feature windows) replayed from CUDA graphs,
one graph per window count.

An admitting step runs the whole encoder over its windows: hundreds of kernel launches per
layer stack (a 32-layer speech encoder: ~15,000 in the 26 steps that admit 256 windows), which a slow
host issues more slowly than the GPU runs them (an H100's admission took 2.8 s with its device
busy 1.6 s). Every window has the same shape, so each count of windows up to what one step
admits gets one graph; a step's features are copied into the graphs' input buffer. Steps with
more windows, or inputs of another shape, run the encoder eagerly.

With `capture=False` the same buffers run eagerly: that is how the CPU tests check them.
"""

from __future__ import annotations

import torch
from torch import nn

from scriba.kernels import AttentionMetadata


class EncoderGraphs:
    def __init__(
        self,
        encoder: nn.Module,  # (features [n, *input_shape], meta) -> states [n * positions, d_model]
        backend,
        input_shape: tuple[int, int],  # (mel bins, frames) of one window
        positions: int,  # encoder positions per window
        max_windows: int,
        dtype: torch.dtype,
        device: torch.device,
        capture: bool = True,
    ):
        self.encoder, self.backend, self.capture = encoder, backend, capture
        self.input_shape, self.positions = tuple(input_shape), positions
        self.features = torch.zeros(max_windows, *input_shape, dtype=dtype, device=device)
        bounds = torch.arange(max_windows + 1, dtype=torch.int32, device=device) * positions
        self.cu_seqlens = bounds  # [max_windows + 1]: window i holds positions i*P .. (i+1)*P
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}

    @property
    def max_windows(self) -> int:
        return self.features.shape[0]

    def fits(self, features: torch.Tensor | None) -> bool:
        return (
            features is not None
            and features.dtype == self.features.dtype
            and tuple(features.shape[1:]) == self.input_shape
            and 0 < features.shape[0] <= self.max_windows
        )

    def _meta(self, windows: int) -> AttentionMetadata:
        return AttentionMetadata(
            backend=self.backend,
            num_encoder_tokens=windows * self.positions,
            encoder_cu_seqlens=self.cu_seqlens[: windows + 1],
            encoder_max_seqlen=self.positions,
        )

    def _forward(self, windows: int) -> torch.Tensor:  # [windows * positions, d_model]
        return self.encoder(self.features[:windows], self._meta(windows))

    @torch.inference_mode()
    def capture_all(self) -> None:
        """Capture every window count, largest first, sharing one memory pool."""
        pool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())  # the weights are ready
        for windows in range(self.max_windows, 0, -1):
            with torch.cuda.stream(stream):
                self._forward(windows)  # warm-up: the libraries pick their kernels outside the capture
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                states = self._forward(windows)
            graph.replay()  # once here: a graph's first launch uploads it, which a step should not wait on
            self.graphs[windows] = (graph, states)
        torch.cuda.synchronize()

    def run(self, features: torch.Tensor) -> torch.Tensor:
        """The encoder's states [n * positions, d_model] of features [n, *input_shape] that
        `fit`. A replayed graph returns its own output buffer: read it before the next replay
        (the same stream orders the step's reads before it)."""
        windows = features.shape[0]
        self.features[:windows].copy_(features)
        if not self.capture:
            return self._forward(windows)
        graph, states = self.graphs[windows]
        graph.replay()
        return states
