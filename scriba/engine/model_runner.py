"""Runs one scheduled step: pack inputs without padding, run the model, sample.

Owns the KV caches (one [2, blocks, block_size, heads, head_dim] tensor per decoder layer on
the device, and a mirror pool on the CPU for swapping) and binds them to the attention layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

from scriba.engine.beam_candidates import BeamRow
from scriba.engine.beam_search import beam_rows
from scriba.engine.cross_attention_weights import cross_attention_weights
from scriba.engine.cuda_graphs import DecodeGraphs
from scriba.engine.encoder_graphs import EncoderGraphs
from scriba.engine.encoder_stream import EncoderStream
from scriba.engine.executors import GraphExecutor, NumbaExecutor, TorchExecutor
from scriba.engine.kv_pools import CacheShape, copy_blocks, swap_blocks
from scriba.engine.sampler import DeviceSamples, Sample, SampleRow, log_softmax_at, sample_on_device
from scriba.engine.sequence import PENDING, Sequence, SequenceGroup
from scriba.engine.staging import HostStaging
from scriba.engine.step_packing import (
    STAGED_METADATA,
    Decodes,
    Prefills,
    Running,
    max_diff,
    pack_decodes,
    pack_prefills,
    running_groups,
    step_arrays,
    upload,
)
from scriba.engine.table_rows import TableRows
from scriba.engine.to_device import stack_to_device, to_device
from scriba.engine.token_history import TokenHistory
from scriba.kernels import AttentionMetadata, get_backend
from scriba.kernels.context_reads import group_context_reads
from scriba.models.decoder_step import NumbaDecoderStep, unsupported

if TYPE_CHECKING:
    from scriba.engine.block_manager import BlockManager
    from scriba.engine.scheduler import SchedulerOutputs


@dataclass
class StepInputs:
    """The packed tensors of one step (see kernels/metadata.py for the layout)."""

    input_ids: torch.Tensor
    positions: torch.Tensor
    # token ids [num_encoder_tokens], or features [num_requests, mel_bins, frames]
    encoder_inputs: torch.Tensor | None
    encoder_positions: torch.Tensor | None
    meta: AttentionMetadata
    sample_indices: torch.Tensor  # [num_rows] decoder token index whose logits are sampled
    rows: list[tuple[SequenceGroup, Sequence]]  # per sampled row
    # (request id, decoder token index in the step, token id) per prompt_logprob_query
    prompt_logprob_queries: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass
class StepResult:
    samples: dict[int, list[Sample]]  # per sampled sequence id (n samples on a request's first step)
    prompt_logprobs: dict[str, float]  # per request id: the log-prob its prompt_logprob_query asked for


@dataclass
class LaunchedStep:
    """A step whose forward pass and sampling are issued, its results still on the device."""

    rows: list[tuple[SequenceGroup, Sequence]]  # per sampled row
    samples: DeviceSamples | None = None
    prompt_logprob_queries: list[tuple[str, int, int]] = field(default_factory=list)

    def token_index(self) -> dict[int, int]:
        """Sequence id -> the index of its (first) sampled token in samples.tokens."""
        index: dict[int, int] = {}
        for k, row in enumerate(self.samples.owners):
            index.setdefault(self.rows[row][1].seq_id, k)
        return index

    def result(self) -> StepResult:
        """Wait for the step's one transfer and read it."""
        if self.samples is None:
            return StepResult({}, {})
        results, values = self.samples.result()
        read = {rid: v for (rid, _, _), v in zip(self.prompt_logprob_queries, values)}
        return StepResult({seq.seq_id: samples for (_, seq), samples in zip(self.rows, results)}, read)


class ModelRunner:
    """Create it, size and `allocate_kv_caches`, optionally `capture_decode_graphs`, then `execute`."""

    def __init__(
        self,
        model,
        device: str,
        dtype: torch.dtype,
        block_size: int,
        backend: str = "auto",
        kv_cache_dtype: torch.dtype | None = None,  # None: dtype
        decoder_runtime: str = "torch",  # EngineConfig.decoder_runtime
        encoder_stream: bool = False,  # EngineConfig.encoder_stream
    ):
        self.model = model
        self.device = torch.device(device)
        self.block_size = block_size
        self.dtype = dtype
        self.kv_cache_dtype = kv_cache_dtype or dtype
        self.backend = get_backend(backend, self.device, dtype, self.kv_cache_dtype)
        self.kv_caches: list[torch.Tensor] = []
        self.cpu_caches: list[torch.Tensor] = []
        self.kv_scales: list[torch.Tensor] = []  # an 8-bit cache's, beside each layer's (kv8.py)
        self.cpu_scales: list[torch.Tensor] = []
        head_major = self.backend.head_major_cache
        self.cache_shape = CacheShape.of(model, block_size, self.kv_cache_dtype, self.device, head_major)
        self.graphs: DecodeGraphs | None = None
        self.history = TokenHistory(model.max_decoder_len, self.device)
        self.staging = HostStaging(self.device)
        self.self_rows, self.cross_rows = TableRows(), TableRows()  # decode block tables, kept between steps
        self.decode_step = self._numba_decode_step(decoder_runtime)
        self.executor: TorchExecutor = (
            TorchExecutor(model)
            if self.decode_step is None
            else NumbaExecutor(model, self.decode_step, self.self_rows, self.cross_rows)
        )
        self.encoder_stream = (
            EncoderStream(model, self.device, dtype, block_size, self.backend) if encoder_stream else None
        )

    def _numba_decode_step(self, runtime: str) -> NumbaDecoderStep | None:
        """The numba decode step where `runtime` asks for it ("numba") or allows it ("auto")."""
        if runtime == "torch":
            return None
        why = unsupported(self.model, self.kv_cache_dtype)
        if self.device.type != "cpu" or self.backend.name != "numba":
            why = "it runs on the CPU with the numba attention backend"
        if why is None:
            return NumbaDecoderStep(self.model)
        if runtime == "numba":
            raise ValueError(f"decoder_runtime='numba' cannot run this model: {why}")
        return None

    def new_kv_caches(self, num_blocks: int, device: torch.device | str) -> list[torch.Tensor]:
        return self.cache_shape.layer_caches(num_blocks, device)

    def new_kv_scales(self, num_blocks: int, device: torch.device | str) -> list[torch.Tensor]:
        """A quantized cache's scales, [2, blocks, block_size, heads] per layer (kernels/kv8.py)."""
        return self.cache_shape.layer_scales(num_blocks, device)

    def bind_kv_caches(self, caches: list[torch.Tensor], scales: list[torch.Tensor] = ()) -> None:
        scales = list(scales) or [None] * len(caches)
        for cache, layer_scales, ops in zip(caches, scales, self.model.decoder_attention_layers()):
            for op in ops:  # self- and cross-attention of a layer share its cache
                op.kv_cache, op.kv_scales = cache, layer_scales

    def allocate_kv_caches(self, num_device_blocks: int, num_cpu_blocks: int) -> None:
        self.kv_caches = self.new_kv_caches(num_device_blocks, self.device)
        self.cpu_caches = self.new_kv_caches(num_cpu_blocks, "cpu")
        self.kv_scales = self.new_kv_scales(num_device_blocks, self.device)
        self.cpu_scales = self.new_kv_scales(num_cpu_blocks, "cpu")
        self.bind_kv_caches(self.kv_caches, self.kv_scales)

    def load_kernels(self) -> None:
        """The backend's compiled kernels for this cache, loaded ahead of the first step."""
        self.backend.load_kernels(self.kv_caches[0], self.kv_scales[0] if self.kv_scales else None)
        if self.decode_step is not None:
            self.decode_step.load_kernels()
        if self.device.type == "cpu":  # the sampler's greedy log-probs
            from scriba.kernels.cpu_exp import load_kernel

            load_kernel()

    def capture_decode_graphs(
        self, max_batch: int, max_self_blocks: int, max_cross_blocks: int, capture: bool = True
    ) -> None:
        """Decode-only steps of up to max_batch sequences then replay CUDA graphs (with
        capture=False: run eagerly on the same padded buffers)."""
        sizes = (max_batch, max_self_blocks, max_cross_blocks)
        self.graphs = DecodeGraphs(self.model, self.backend, self.device, *sizes, capture)
        self.executor = GraphExecutor(self.graphs, self.executor)
        if capture:
            self.graphs.capture_all()

    def capture_encoder_graphs(self, max_windows: int, capture: bool = True) -> bool:
        """Admitting steps of up to max_windows encoder inputs then replay the torch encoder from
        CUDA graphs (capture=False: run it eagerly on the same buffers), where the model's inputs
        have one shape and the backend's encoder attention makes no host sync. Returns whether."""
        shape = self.model.encoder_input_shape()
        layers = self.model.model.encoder.layers
        if shape is None or max_windows < 1 or not layers or getattr(self.model, "encoder_runtime", None):
            return False
        if not self.backend.varlen_is_graph_safe(self.dtype, layers[0].self_attn.attn.head_dim) and capture:
            return False
        positions = self.model.max_encoder_len
        graphs = EncoderGraphs(
            self.model.model.encoder,
            self.backend,
            shape,
            positions,
            max_windows,
            self.dtype,
            self.device,
            capture,
        )
        if capture:
            graphs.capture_all()
        self.model.encoder_graphs = graphs
        return True

    def cross_attentions(self, requests: list[tuple[list[int], list[int]]], num_positions: int, heads):
        """See cross_attention_weights.py."""
        return cross_attention_weights(self.model, requests, num_positions, heads, self.dtype)

    @torch.inference_mode()
    def launch(self, sched: SchedulerOutputs, blocks: BlockManager, feed: LaunchedStep | None = None):
        """Issue the step the scheduler planned: its block moves, then its groups (their running
        sequences, with the block tables `blocks` holds for them); the results stay on the
        device until LaunchedStep.result(). `feed`: the step still in flight, whose sampled
        tokens are the PENDING last tokens of this step's sequences (asynchronous scheduling)."""
        device, host = self.kv_caches + self.kv_scales, self.cpu_caches + self.cpu_scales  # scales move too
        swap_blocks(device, host, sched.blocks_to_swap_out)
        swap_blocks(host, device, sched.blocks_to_swap_in)
        copy_blocks(device, sched.blocks_to_copy)
        if sched.wait_for_encoder:
            self.encoder_stream.fence()
        if sched.encodes:
            self.encoder_stream.launch(running_groups(sched.encodes, blocks))
        prefills, decodes = running_groups(sched.prefills, blocks), running_groups(sched.decodes, blocks)
        prompts = running_groups(sched.prompts, blocks)
        if not prefills and not decodes and not prompts:
            self.self_rows.gather([], [])  # sequences away from this step may come back changed
            self.cross_rows.gather([], [])
            return LaunchedStep([])
        step = self.prepare_inputs(prefills, decodes, feed, prompts)
        queries = step.prompt_logprob_queries
        query_rows = to_device([i for _, i, _ in queries], self.device) if queries else None
        picked = step.sample_indices if query_rows is None else torch.cat([step.sample_indices, query_rows])
        # a decode-only step samples every row, in order; prompt rows (encoder stream) only their last
        every_row = query_rows is None and len(step.rows) == step.meta.num_decoder_tokens
        logits = self.executor.logits(step, prefills, picked, every_row)
        asked = None
        if queries:  # raw log-probs at prompt positions, before any rule
            logits, raw = logits[: len(step.sample_indices)], logits[len(step.sample_indices) :]
            asked = log_softmax_at(raw, to_device([t for _, _, t in queries], self.device))
        beams = beam_rows(dict.fromkeys(g for g, _ in step.rows if g.beam is not None))
        rows = [self._sample_row(group, seq, beams.get(seq.seq_id)) for group, seq in step.rows]
        seqs = [(seq.seq_id, seq.token_ids) for _, seq in step.rows]
        late = None if feed is None or feed.samples is None else (feed.samples.tokens, feed.token_index())
        history = _memo(lambda: self.history.rows(seqs, late)[0])
        samples = sample_on_device(logits, rows, history, prompt_logprobs=asked)
        return LaunchedStep(step.rows, samples, step.prompt_logprob_queries)

    @staticmethod
    def _sample_row(group: SequenceGroup, seq: Sequence, beam: BeamRow | None) -> SampleRow:
        return SampleRow(
            token_ids=seq.token_ids,
            num_generated=seq.num_output_tokens,
            params=group.params,
            processors=group.processors,
            generator=group.generator if seq.generator is None else seq.generator,
            num_samples=group.params.n if group.needs_fork else 1,  # n > 1: the first token's draws
            beam=beam,
        )

    def prepare_inputs(
        self,
        prefills: list[Running],
        decodes: list[Running],
        feed: LaunchedStep | None = None,
        prompts: list[Running] = (),
    ) -> StepInputs:
        """Pack [prefill tokens | decode tokens | prompt rows], build the step's attention metadata,
        and move its integer inputs to the device in one copy; PENDING input tokens are taken from
        `feed`'s samples there."""
        pre = pack_prefills(prefills, self.block_size)
        dec = pack_decodes(
            decodes, len(pre.input_ids), self.self_rows, self.cross_rows, self.block_size, prompts
        )
        arrays = step_arrays(pre, dec)
        late = np.flatnonzero(dec.input_ids == PENDING)
        if len(late):  # where each pending token is among the previous step's samples
            index = feed.token_index()
            arrays["late_at"] = late + len(pre.input_ids)
            arrays["late_from"] = np.asarray([index[dec.rows[i][1].seq_id] for i in late], dtype=np.int64)
        t = upload(self.staging, arrays)
        if len(late):
            t["input_ids"].index_copy_(0, t["late_at"], feed.samples.tokens[t["late_from"]])
        meta = self._metadata(pre, dec, t)
        features = stack_to_device(pre.features, self.device).to(self.dtype) if pre.features else None
        return StepInputs(
            input_ids=t["input_ids"],
            positions=t["positions"],
            encoder_inputs=features if features is not None else t["encoder_input_ids"],
            encoder_positions=t["encoder_positions"],
            meta=meta,
            sample_indices=t["sample_indices"],
            rows=pre.rows + dec.rows,
            prompt_logprob_queries=pre.prompt_logprob_queries + dec.prompt_logprob_queries,
        )

    def _metadata(self, pre: Prefills, dec: Decodes, t: dict[str, torch.Tensor]) -> AttentionMetadata:
        """The step's attention metadata over its uploaded arrays `t` (see step_arrays)."""
        meta = AttentionMetadata(
            backend=self.backend,
            num_encoder_tokens=pre.encoder_cu_seqlens[-1],
            encoder_max_seqlen=max_diff(pre.encoder_cu_seqlens),
            num_prefill_tokens=len(pre.input_ids),
            num_decode_tokens=len(dec.input_ids),
            prefill_max_seqlen=max_diff(pre.prefill_cu_seqlens),
            cross_max_seqlen_k=max_diff(pre.cross_cu_seqlens_k),
            **{name: t[name] for name in STAGED_METADATA},
        )
        if len(dec.input_ids) and self.backend.plans_context_reads:  # runs read in place: plan once a step
            bs = self.block_size
            meta.decode_reads = group_context_reads(dec.table_lists, dec.decode_seq_lens.tolist(), bs)
            meta.cross_reads = group_context_reads(dec.cross_table_lists, dec.cross_seq_lens.tolist(), bs)
        return meta


def _memo(fn):
    """fn, computed on the first call only."""
    cache = []

    def once():
        if not cache:
            cache.append(fn())
        return cache[0]

    return once
