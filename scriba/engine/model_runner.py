"""Runs one scheduled step: pack inputs without padding, run the model, sample.

Owns the KV caches (one [2, blocks, block_size, heads, head_dim] tensor per decoder layer on
the device, and a mirror pool on the CPU for swapping) and binds them to the attention layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from scriba.engine.cuda_graphs import DecodeGraphs
from scriba.engine.sampler import Sample, SampleRow, sample
from scriba.engine.sequence import Sequence, SequenceGroup, SequenceStatus
from scriba.engine.staging import HostStaging
from scriba.engine.table_rows import TableRows
from scriba.engine.token_history import TokenHistory
from scriba.kernels import AttentionMetadata, get_backend
from scriba.kernels.kv8 import dequantized, is_8bit, new_kv_scales
from scriba.kernels.kv_cache import copy_blocks, new_kv_cache, swap_blocks
from scriba.kernels.paged_attention import group_context_reads

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
        self.graphs: DecodeGraphs | None = None
        self.history = TokenHistory(model.max_decoder_len, self.device)
        self.staging = HostStaging(self.device)
        self.self_rows, self.cross_rows = TableRows(), TableRows()  # decode block tables, kept between steps

    def new_kv_caches(self, num_blocks: int, device: torch.device | str) -> list[torch.Tensor]:
        layers = self.model.decoder_attention_layers()
        attn = layers[0][0]
        block = (num_blocks, self.block_size, attn.num_heads, attn.head_dim)
        # Zeros (new_kv_cache), not empty: a never-written slot may be read under a zero attention
        # weight. A host pool beside a GPU is pinned, so swaps move without blocking.
        pin = torch.device(device).type == "cpu" and self.device.type == "cuda" and num_blocks > 0
        head_major = self.backend.head_major_cache and torch.device(device) == self.device
        tensor = dict(dtype=self.kv_cache_dtype, device=device, pin_memory=pin)
        return [new_kv_cache(*block, head_major=head_major, **tensor) for _ in layers]

    def new_kv_scales(self, num_blocks: int, device: torch.device | str) -> list[torch.Tensor]:
        """An 8-bit cache's scales, [2, blocks, block_size, heads] per layer (kernels/kv8.py)."""
        if not is_8bit(self.kv_cache_dtype):
            return []
        heads = self.model.decoder_attention_layers()[0][0].num_heads
        pin = torch.device(device).type == "cpu" and self.device.type == "cuda" and num_blocks > 0
        layers = self.model.decoder_attention_layers()
        return [new_kv_scales(num_blocks, self.block_size, heads, device, pin) for _ in layers]

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

    def capture_decode_graphs(
        self, max_batch: int, max_self_blocks: int, max_cross_blocks: int, capture: bool = True
    ) -> None:
        """Decode-only steps of up to max_batch sequences then replay CUDA graphs (with
        capture=False: run eagerly on the same padded buffers)."""
        sizes = (max_batch, max_self_blocks, max_cross_blocks)
        self.graphs = DecodeGraphs(self.model, self.backend, self.device, *sizes, capture)
        if capture:
            self.graphs.capture_all()

    @staticmethod
    def bytes_per_block(model, block_size: int, dtype: torch.dtype) -> int:
        layers = model.decoder_attention_layers()
        attn = layers[0][0]
        itemsize = torch.empty((), dtype=dtype).element_size()
        scales = 2 * block_size * attn.num_heads * 4 if is_8bit(dtype) else 0  # a float32 per vector
        return len(layers) * (2 * block_size * attn.num_heads * attn.head_dim * itemsize + scales)

    @torch.inference_mode()
    def cross_attentions(self, requests: list[tuple[list[int], list[int]]], num_positions: int, heads):
        """For each (cross blocks, token ids) of `requests`, in one batched plain forward: the
        cross-attention weights of (layer, head) pairs when the decoder reads the tokens over
        the encoder K/V cached in the blocks, [len(heads), len(token ids), num_positions]
        float32 numpy arrays. The caches are only read."""
        layers = self.model.decoder_attention_layers()
        longest = max(len(ids) for _, ids in requests)
        tokens = torch.zeros(len(requests), longest, dtype=torch.long)
        for row, (_, ids) in enumerate(requests):
            tokens[row, : len(ids)] = torch.tensor(ids)
        indexes = [torch.tensor(blocks, device=self.device) for blocks, _ in requests]
        cross_kv = []
        for layer in range(max(lay for lay, _ in heads) + 1):  # every layer up to the last asked
            op = layers[layer][1]
            cache, scales = op.kv_cache, op.kv_scales  # [2, blocks, block_size, heads, head_dim]
            read = (
                (lambda i: cache[:, i])
                if scales is None
                else (lambda i: dequantized(cache[:, i], scales[:, i]))
            )
            kv = torch.stack([read(i).flatten(1, 2)[:, :num_positions] for i in indexes])
            cross_kv.append(kv.to(self.dtype))
        weights = self.model.cross_attentions(tokens.to(self.device), cross_kv, heads).float().cpu()
        return [weights[row, :, : len(ids)].numpy() for row, (_, ids) in enumerate(requests)]

    @torch.inference_mode()
    def execute(self, sched: SchedulerOutputs, blocks: BlockManager) -> StepResult:
        """Run the step the scheduler planned: its block moves, then its groups (their running
        sequences, with the block tables `blocks` holds for them)."""
        device, host = self.kv_caches + self.kv_scales, self.cpu_caches + self.cpu_scales  # scales move too
        swap_blocks(device, host, sched.blocks_to_swap_out)
        swap_blocks(host, device, sched.blocks_to_swap_in)
        copy_blocks(device, sched.blocks_to_copy)
        prefills, decodes = _running(sched.prefills, blocks), _running(sched.decodes, blocks)
        if not prefills and not decodes:
            self.self_rows.gather([], [])  # sequences away from this step may come back changed
            self.cross_rows.gather([], [])
            return StepResult({}, {})
        step = self.prepare_inputs(prefills, decodes)
        if self.graphs is not None and self.graphs.fits(step.meta):
            logits = self.graphs.run(step.input_ids, step.positions, step.meta).float()
        else:
            encoder = (step.encoder_inputs, step.encoder_positions)
            hidden = self.model(step.input_ids, step.positions, step.meta, *encoder)
            logits = self.model.compute_logits(hidden[step.sample_indices]).float()
        asked = None
        if step.prompt_logprob_queries:  # raw log-probs at prompt positions, before any rule
            queries = step.prompt_logprob_queries
            index = torch.tensor([i for _, i, _ in queries], device=self.device)
            logprobs = self.model.compute_logits(hidden[index]).float().log_softmax(dim=-1)
            asked = logprobs.gather(1, torch.tensor([[t] for _, _, t in queries], device=self.device))[:, 0]
        rows = [self._sample_row(group, seq) for group, seq in step.rows]
        seqs = [(seq.seq_id, seq.token_ids) for _, seq in step.rows]
        history = _memo(lambda: self.history.rows(seqs)[0])
        results, values = sample(logits, rows, history, prompt_logprobs=asked)
        read = {rid: v for (rid, _, _), v in zip(step.prompt_logprob_queries, values)}
        return StepResult({seq.seq_id: samples for (_, seq), samples in zip(step.rows, results)}, read)

    @staticmethod
    def _sample_row(group: SequenceGroup, seq: Sequence) -> SampleRow:
        return SampleRow(
            token_ids=seq.token_ids,
            num_generated=seq.num_output_tokens,
            params=group.params,
            processors=group.processors,
            generator=group.generator,
            num_samples=group.params.n if group.needs_fork else 1,  # n > 1: the first token's draws
        )

    def prepare_inputs(self, prefills: list[_Running], decodes: list[_Running]) -> StepInputs:
        """Pack [prefill tokens | decode tokens], build the step's attention metadata, and move
        its integer inputs to the device in one copy."""
        pre = _pack_prefills(prefills, self.block_size)
        dec = self._pack_decodes(decodes, len(pre.input_ids))
        t = _upload(self.staging, _step_arrays(pre, dec))
        meta = self._metadata(pre, dec, t)
        features = torch.stack(pre.features).to(self.device, self.dtype) if pre.features else None
        return StepInputs(
            input_ids=t["input_ids"],
            positions=t["positions"],
            encoder_inputs=features if features is not None else t["encoder_input_ids"],
            encoder_positions=t["encoder_positions"],
            meta=meta,
            sample_indices=t["sample_indices"],
            rows=pre.rows + dec.rows,
            prompt_logprob_queries=pre.prompt_logprob_queries,
        )

    def _metadata(self, pre: "_Prefills", dec: "_Decodes", t: dict[str, torch.Tensor]) -> AttentionMetadata:
        """The step's attention metadata over its uploaded arrays `t` (see _step_arrays)."""
        meta = AttentionMetadata(
            backend=self.backend,
            num_encoder_tokens=pre.encoder_cu_seqlens[-1],
            encoder_max_seqlen=_max_diff(pre.encoder_cu_seqlens),
            num_prefill_tokens=len(pre.input_ids),
            num_decode_tokens=len(dec.input_ids),
            prefill_max_seqlen=_max_diff(pre.prefill_cu_seqlens),
            cross_max_seqlen_k=_max_diff(pre.cross_cu_seqlens_k),
            **{name: t[name] for name in STAGED_METADATA},
        )
        if len(dec.input_ids) and self.backend.plans_context_reads:  # runs read in place: plan once a step
            bs = self.block_size
            meta.decode_reads = group_context_reads(dec.table_lists, dec.decode_seq_lens.tolist(), bs)
            meta.cross_reads = group_context_reads(dec.cross_table_lists, dec.cross_seq_lens.tolist(), bs)
        return meta

    def _pack_decodes(self, decodes: list[_Running], offset: int) -> "_Decodes":
        """One token per running sequence: its last token at position length - 1, its slot
        from its (persistent) block table row."""
        rows, last, lens, tables, cross_keys, cross_block_tables, cross_seq_lens = [], [], [], [], [], [], []
        for group, seqs, seq_tables, cross_table in decodes:
            for seq, table in zip(seqs, seq_tables):
                last.append(seq.token_ids[-1])
                lens.append(len(seq.token_ids))
                tables.append(table)
                cross_keys.append(group.request_id)
                cross_block_tables.append(cross_table)
                cross_seq_lens.append(group.encoder_len)
                rows.append((group, seq))
        keys = [seq.seq_id for _, seq in rows]
        decode_block_tables = self.self_rows.gather(keys, tables)
        lens_arr = np.asarray(lens, dtype=np.int32)
        pos = lens_arr.astype(np.int64) - 1
        bs = self.block_size
        slots = decode_block_tables[np.arange(len(pos)), pos // bs].astype(np.int64) * bs + pos % bs
        return _Decodes(
            input_ids=np.asarray(last, dtype=np.int64),
            positions=pos,
            slot_mapping=slots,
            sample_indices=np.arange(offset, offset + len(pos), dtype=np.int64),
            decode_block_tables=decode_block_tables,
            decode_seq_lens=lens_arr,
            cross_block_tables=self.cross_rows.gather(cross_keys, cross_block_tables),
            cross_seq_lens=np.asarray(cross_seq_lens, dtype=np.int32),
            table_lists=tables,
            cross_table_lists=cross_block_tables,
            rows=rows,
        )


@dataclass
class _Prefills:
    input_ids: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    slot_mapping: list[int] = field(default_factory=list)
    sample_indices: list[int] = field(default_factory=list)
    rows: list = field(default_factory=list)
    encoder_input_ids: list[int] = field(default_factory=list)
    encoder_positions: list[int] = field(default_factory=list)
    encoder_cu_seqlens: list[int] = field(default_factory=lambda: [0])
    cross_slot_mapping: list[int] = field(default_factory=list)
    features: list[torch.Tensor] = field(default_factory=list)
    prompt_logprob_queries: list = field(default_factory=list)
    prefill_cu_seqlens: list[int] = field(default_factory=lambda: [0])
    cross_cu_seqlens_k: list[int] = field(default_factory=lambda: [0])
    cross_kv_index: list[int] = field(default_factory=list)


@dataclass
class _Decodes:
    input_ids: np.ndarray  # [n] int64
    positions: np.ndarray  # [n] int64
    slot_mapping: np.ndarray  # [n] int64
    sample_indices: np.ndarray  # [n] int64
    decode_block_tables: np.ndarray  # [n, max_blocks] int32
    decode_seq_lens: np.ndarray  # [n] int32
    cross_block_tables: np.ndarray  # [n, max_cross_blocks] int32
    cross_seq_lens: np.ndarray  # [n] int32
    table_lists: list[list[int]]
    cross_table_lists: list[list[int]]
    rows: list


# The step's staged integer arrays, named as the fields of AttentionMetadata they become.
STAGED_METADATA = (
    "encoder_cu_seqlens",
    "prefill_cu_seqlens",
    "slot_mapping",
    "decode_block_tables",
    "decode_seq_lens",
    "cross_slot_mapping",
    "cross_cu_seqlens_k",
    "cross_kv_index",
    "cross_block_tables",
    "cross_seq_lens",
)


def _step_arrays(pre: _Prefills, dec: _Decodes) -> dict[str, np.ndarray | None]:
    """The step's integer inputs by name: the model's (input_ids, positions, sample_indices,
    encoder_input_ids, encoder_positions) and AttentionMetadata's own fields (STAGED_METADATA);
    None where the step has none (no prefills, no decodes, K/V rows already in order)."""
    i64 = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    i32 = lambda xs: np.asarray(xs, dtype=np.int32)  # noqa: E731
    encodes, token_ids = pre.encoder_cu_seqlens[-1] > 0, bool(pre.encoder_input_ids)
    in_order = len(pre.cross_kv_index) == pre.encoder_cu_seqlens[-1]
    return {
        "input_ids": np.concatenate([i64(pre.input_ids), dec.input_ids]),
        "positions": np.concatenate([i64(pre.positions), dec.positions]),
        "sample_indices": np.concatenate([i64(pre.sample_indices), dec.sample_indices]),
        "encoder_input_ids": i64(pre.encoder_input_ids) if encodes and token_ids else None,
        "encoder_positions": i64(pre.encoder_positions) if encodes and token_ids else None,
        "encoder_cu_seqlens": i32(pre.encoder_cu_seqlens) if encodes else None,
        "prefill_cu_seqlens": i32(pre.prefill_cu_seqlens) if pre.rows else None,
        "slot_mapping": np.concatenate([i64(pre.slot_mapping), dec.slot_mapping]),
        "decode_block_tables": dec.decode_block_tables if dec.rows else None,
        "decode_seq_lens": dec.decode_seq_lens if dec.rows else None,
        "cross_slot_mapping": i64(pre.cross_slot_mapping) if encodes else None,
        "cross_cu_seqlens_k": i32(pre.cross_cu_seqlens_k) if pre.rows else None,
        "cross_kv_index": None if in_order else i64(pre.cross_kv_index),
        "cross_block_tables": dec.cross_block_tables if dec.rows else None,
        "cross_seq_lens": dec.cross_seq_lens if dec.rows else None,
    }


def _upload(staging, arrays: dict[str, np.ndarray | None]) -> dict[str, torch.Tensor | None]:
    """The arrays on the device (one copy), by the same names; None stays None."""
    moved = staging.upload({name: a for name, a in arrays.items() if a is not None})
    return {name: moved.get(name) for name in arrays}


def _slots(table: list[int], start: int, end: int, block_size: int) -> list[int]:
    return [table[p // block_size] * block_size + p % block_size for p in range(start, end)]


class _Running(NamedTuple):
    """A scheduled group, its running sequences and their block tables (the block manager's)."""

    group: SequenceGroup
    seqs: list[Sequence]
    tables: list[list[int]]  # per sequence
    cross_table: list[int]


def _running(groups: list[SequenceGroup], blocks: BlockManager) -> list[_Running]:
    running = []
    for group in groups:
        seqs = group.seqs_with(SequenceStatus.RUNNING)
        tables = [blocks.block_table(s.seq_id) for s in seqs]
        running.append(_Running(group, seqs, tables, blocks.cross_block_table(group.request_id)))
    return running


def _pack_prefills(prefills: list[_Running], block_size: int) -> _Prefills:
    """Every token of each prefilling sequence, and its request's encoder inputs."""
    p = _Prefills()
    for group, seqs, tables, cross_table in prefills:
        enc_start, enc_len, inputs = p.encoder_cu_seqlens[-1], group.encoder_len, group.inputs
        if inputs.encoder_features is not None:
            p.features.append(torch.as_tensor(inputs.encoder_features))
        else:
            p.encoder_input_ids += inputs.encoder_token_ids
            p.encoder_positions += range(enc_len)
        p.encoder_cu_seqlens.append(enc_start + enc_len)
        p.cross_slot_mapping += _slots(cross_table, 0, enc_len, block_size)
        query = group.prompt_logprob_query
        if query is not None:
            p.prompt_logprob_queries.append(
                (group.request_id, len(p.input_ids) + query.position, query.token_id)
            )
        for seq, table in zip(seqs, tables):
            tokens = seq.token_ids
            p.input_ids += tokens
            p.positions += range(len(tokens))
            p.slot_mapping += _slots(table, 0, len(tokens), block_size)
            p.prefill_cu_seqlens.append(len(p.input_ids))
            p.cross_kv_index += range(enc_start, enc_start + enc_len)
            p.cross_cu_seqlens_k.append(len(p.cross_kv_index))
            p.sample_indices.append(len(p.input_ids) - 1)
            p.rows.append((group, seq))
    return p


def _max_diff(cu: list[int]) -> int:
    return max((b - a for a, b in zip(cu, cu[1:])), default=0)


def _memo(fn):
    """fn, computed on the first call only."""
    cache = []

    def once():
        if not cache:
            cache.append(fn())
        return cache[0]

    return once
