"""Decode steps replayed from CUDA graphs, one graph per batch-size bucket.

A decode-only step (no encoder, no prefill: one token per sequence) launches hundreds of
small kernels; a CUDA graph replays them with one launch. Graphs read persistent buffers,
so a step's inputs are copied into them, padded up to the bucket: padding rows write no KV
(slot -1) and attend over one position of block 0; their logits are dropped. Steps that do
not fit (prefills, more sequences or longer tables than the buffers) run eagerly.

With `capture=False` the same padded buffers run eagerly: that is how the CPU tests check
the padding (the kernels under TRITON_INTERPRET=1), since graphs need a GPU.
"""

from __future__ import annotations

import torch

from scriba.kernels import AttentionMetadata


def batch_buckets(max_batch: int) -> list[int]:
    """1, 2, 4, 8, then every 16 up to max_batch (and max_batch itself)."""
    sizes = [b for b in (1, 2, 4, 8) if b < max_batch] + list(range(16, max_batch, 16))
    return sizes + [max_batch]


class DecodeGraphs:
    def __init__(
        self,
        model,
        backend,
        device: torch.device,
        max_batch: int,
        max_self_blocks: int,
        max_cross_blocks: int,
        capture: bool = True,
    ):
        if not backend.is_graph_safe:
            raise ValueError(f"the {backend.name!r} attention backend cannot run in a CUDA graph")
        self.model, self.backend, self.capture = model, backend, capture
        self.buckets = batch_buckets(max_batch)
        ints = dict(device=device, dtype=torch.int32)
        self.input_ids = torch.zeros(max_batch, dtype=torch.long, device=device)
        self.positions = torch.zeros(max_batch, dtype=torch.long, device=device)
        self.slot_mapping = torch.full((max_batch,), -1, dtype=torch.long, device=device)
        self.self_tables = torch.zeros(max_batch, max_self_blocks, **ints)
        self.self_lens = torch.ones(max_batch, **ints)
        self.cross_tables = torch.zeros(max_batch, max_cross_blocks, **ints)
        self.cross_lens = torch.ones(max_batch, **ints)
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}

    def fits(self, meta: AttentionMetadata) -> bool:
        return (
            meta.num_encoder_tokens == 0
            and meta.num_prefill_tokens == 0
            and 0 < meta.num_decode_tokens <= self.buckets[-1]
            and meta.decode_block_tables.shape[1] <= self.self_tables.shape[1]
            and meta.cross_block_tables.shape[1] <= self.cross_tables.shape[1]
        )

    def _meta(self, batch: int) -> AttentionMetadata:
        return AttentionMetadata(
            backend=self.backend,
            num_decode_tokens=batch,
            slot_mapping=self.slot_mapping[:batch],
            decode_block_tables=self.self_tables[:batch],
            decode_seq_lens=self.self_lens[:batch],
            cross_block_tables=self.cross_tables[:batch],
            cross_seq_lens=self.cross_lens[:batch],
        )

    def _forward(self, batch: int) -> torch.Tensor:  # [batch, vocab], the model's dtype
        hidden = self.model(self.input_ids[:batch], self.positions[:batch], self._meta(batch))
        return self.model.compute_logits(hidden)

    @torch.inference_mode()
    def capture_all(self) -> None:
        """Capture every bucket, largest first, sharing one memory pool. The KV caches must be
        bound; padding rows make the captured runs harmless to them."""
        pool = torch.cuda.graph_pool_handle()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())  # the caches' zero-fill and weights are ready
        for batch in reversed(self.buckets):
            with torch.cuda.stream(stream):
                self._forward(batch)  # warm-up: compiles the Triton kernels outside the capture
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                logits = self._forward(batch)
            self.graphs[batch] = (graph, logits)
        torch.cuda.synchronize()

    def run(self, input_ids: torch.Tensor, positions: torch.Tensor, meta: AttentionMetadata) -> torch.Tensor:
        """Logits [num_decode_tokens, vocab] of a step that `fits`."""
        n = meta.num_decode_tokens
        batch = next(b for b in self.buckets if b >= n)
        self.input_ids[:n].copy_(input_ids)
        self.positions[:n].copy_(positions)
        self.slot_mapping[:n].copy_(meta.slot_mapping)
        self.slot_mapping[n:batch].fill_(-1)
        for tables, lens, step_tables, step_lens in (
            (self.self_tables, self.self_lens, meta.decode_block_tables, meta.decode_seq_lens),
            (self.cross_tables, self.cross_lens, meta.cross_block_tables, meta.cross_seq_lens),
        ):
            tables[:n, : step_tables.shape[1]].copy_(step_tables)  # columns past a length are never read
            lens[:n].copy_(step_lens)
            tables[n:batch, 0] = 0
            lens[n:batch] = 1
        if self.capture:
            graph, logits = self.graphs[batch]
            graph.replay()
        else:
            logits = self._forward(batch)
        return logits[:n]
