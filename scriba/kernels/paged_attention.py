"""Paged decode attention: one query token per sequence over its block table.

The Triton kernel splits each sequence's context into partitions handled by separate
programs and reduces their partial softmaxes (flash-decoding): a cross-attention context of
1500 positions then fills the GPU even at small batch sizes. The torch reference is the CPU
path and the kernel's oracle.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from scriba.kernels.context_reads import ContextReads, RunBatch, group_context_reads
from scriba.kernels.kv8 import dequantized, is_quantized
from scriba.kernels.paged_decode_plan import partial_buffers, partitions, resolve_launch
from scriba.kernels.triton_support import (
    HAS_TRITON,
    next_power_of_2,
    require_triton,
    tl,
    triton,
)

# The split reduce's register budget: a chunk of every split's accumulators, SPLITS x BLOCK_D float32
# values, 32 a thread in 4 warps.
REDUCE_VALUES = 4096


def check_paged_args(
    q: torch.Tensor, kv_cache: torch.Tensor, block_tables: torch.Tensor, seq_lens: torch.Tensor
) -> None:
    if q.dim() != 3:
        raise ValueError(f"q must be [seqs, heads, head_dim], got {tuple(q.shape)}")
    if (
        kv_cache.dim() != 5
        or kv_cache.shape[0] != 2
        or kv_cache.shape[3:] != q.shape[1:]
    ):
        raise ValueError(f"kv_cache {tuple(kv_cache.shape)} does not fit q {tuple(q.shape)}")
    if block_tables.dim() != 2 or block_tables.shape[0] != q.shape[0] or seq_lens.shape != (q.shape[0],):
        raise ValueError(
            f"block_tables {tuple(block_tables.shape)} / seq_lens {tuple(seq_lens.shape)} "
            f"do not match {q.shape[0]} seqs"
        )


def paged_decode_attention_ref(
    q: torch.Tensor,  # [seqs, heads, head_dim]
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim]
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
    reads: ContextReads | None = None,  # from group_context_reads (the runner's, once a step)
    kv_scales: torch.Tensor | None = None,  # [2, blocks, block_size, heads]: an 8-bit cache's (kv8.py)
) -> torch.Tensor:  # [seqs, heads, head_dim]
    """Tables that are runs of consecutive blocks (cross-attention tables are allocated as
    runs) are read in place, a batch of adjacent equal runs per call, with no copy (an 8-bit
    cache's are dequantized). The other sequences' blocks are gathered into one padded batch,
    masked by length."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    if reads is None:
        reads = group_context_reads(block_tables.tolist(), seq_lens.tolist(), kv_cache.shape[2])
    out = torch.empty_like(q)
    for batch in reads.batches:
        _attend_runs(q, kv_cache, batch, scale, out, kv_scales)
    if reads.gathered:
        index = torch.tensor(reads.gathered, device=q.device)
        tables, lens = block_tables[index], seq_lens[index]
        out[index] = _attend_gathered(q[index], kv_cache, tables, lens, scale, kv_scales)
    return out


def _attend_runs(
    q: torch.Tensor, kv_cache: torch.Tensor, batch: RunBatch, scale: float, out: torch.Tensor, kv_scales=None
) -> None:
    """One SDPA call over a batch of runs, viewed in place as [runs, heads, positions, dim]."""
    _, heads, dim = q.shape
    num_runs, width = len(batch.queries), batch.run_blocks * kv_cache.shape[2]
    blocks = slice(batch.first, batch.first + num_runs * batch.run_blocks)
    span = kv_cache[:, blocks]
    if kv_scales is not None:
        span = dequantized(span, kv_scales[:, blocks], q.dtype)
    longest = max(batch.lengths)  # past it only unwritten slots: cut, not masked (a mask costs 20%)
    k, v = (span[i].reshape(num_runs, width, heads, dim)[:, :longest].transpose(1, 2) for i in (0, 1))
    most = max(len(rows) for rows in batch.queries)
    rows = [r for rows in batch.queries for r in rows]
    slots = [i * most + j for i, rows in enumerate(batch.queries) for j in range(len(rows))]
    dev = q.device
    queries = q.new_zeros(num_runs * most, heads, dim)
    queries[torch.tensor(slots, device=dev)] = q[torch.tensor(rows, device=dev)]
    queries = queries.view(num_runs, most, heads, dim).transpose(1, 2)  # [runs, heads, most, dim]
    mask = None
    if any(n < longest for n in batch.lengths):
        lengths = torch.tensor(batch.lengths, device=dev)
        mask = (torch.arange(longest, device=dev)[None, :] < lengths[:, None])[:, None, None, :]
    attended = F.scaled_dot_product_attention(queries, k, v, attn_mask=mask, scale=scale)
    attended = attended.transpose(1, 2).reshape(num_runs * most, heads, dim)
    out[torch.tensor(rows, device=dev)] = attended[torch.tensor(slots, device=dev)]


def _attend_gathered(q, kv_cache, block_tables, seq_lens, scale, kv_scales=None) -> torch.Tensor:
    num_seqs, heads, dim = q.shape
    max_blocks = int(seq_lens.max().item() + kv_cache.shape[2] - 1) // kv_cache.shape[2]
    index = block_tables[:, :max_blocks].flatten().long()
    shape = (num_seqs, -1, heads, dim)
    k, v = kv_cache[0].index_select(0, index), kv_cache[1].index_select(0, index)
    if kv_scales is not None:
        k = dequantized(k, kv_scales[0].index_select(0, index), q.dtype)
        v = dequantized(v, kv_scales[1].index_select(0, index), q.dtype)
    k, v = k.view(shape).transpose(1, 2), v.view(shape).transpose(1, 2)  # [seqs, heads, len, dim]
    mask = torch.arange(k.shape[2], device=q.device)[None, :] < seq_lens[:, None]
    return F.scaled_dot_product_attention(
        q[:, :, None, :], k, v, attn_mask=mask[:, None, None, :], scale=scale
    )[:, :, 0, :]


# -- Triton -----------------------------------------------------------------------------------
if HAS_TRITON:

    @triton.jit
    def _tile_rows(cache_ptr, row, d, kv_mask):
        """A tile's K (or V) rows [TILE, BLOCK_D] in float32, 0 where masked. int8 codes become floats
        with no int-to-float conversion, which a GPU runs at a quarter of the float rate (an H200:
        int8 self-attention took 30 us a layer at batch 256 where fp8's took 15): the code + 128 in
        the low bits of 2^23's float bits reads as 2^23 + 128 + code, exactly."""
        at = cache_ptr + row[:, None] + d[None, :]
        if cache_ptr.dtype.element_ty == tl.int8:
            codes = tl.load(at, mask=kv_mask, other=0).to(tl.int32)
            return ((codes + 128) | 0x4B000000).to(tl.float32, bitcast=True) - 8388736.0  # 2^23 + 128
        else:
            return tl.load(at, mask=kv_mask, other=0.0).to(tl.float32)

    @triton.jit
    def _program_span(lens_ptr, partition, HEADS_FIRST: tl.constexpr):
        """(seq, head, split, start, end): this program's sequence, head, split and the positions
        [start, end) it attends over (HEADS_FIRST: the grid is (heads, seqs, splits))."""
        if HEADS_FIRST:
            head, seq = tl.program_id(0), tl.program_id(1)
        else:
            seq, head = tl.program_id(0), tl.program_id(1)
        split = tl.program_id(2)
        start = split * partition
        return seq, head, split, start, tl.minimum(start + partition, tl.load(lens_ptr + seq))

    @triton.jit
    def _tile_at(
        tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
        tile_start, end, BLOCK_SIZE: tl.constexpr, TILE: tl.constexpr,
    ):  # fmt: skip
        """Positions [tile_start, +TILE): (valid [TILE], their slots int64 (block * BLOCK_SIZE +
        offset: where their scales are), their rows of this head in the cache, in elements)."""
        pos = tile_start + tl.arange(0, TILE)
        valid = pos < end
        block = tl.load(tables_ptr + seq * stride_table + pos // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
        offset = pos % BLOCK_SIZE
        row = block * stride_cache_block + offset * stride_cache_tok + head * stride_cache_head
        return valid, block * BLOCK_SIZE + offset, row

    @triton.jit
    def _lane_update(lane_max, lane_sum, scores, valid):
        """One tile of the per-lane online softmax: (new max, rescale of the old accumulators,
        weights, new sum), each [TILE]. A lane that has seen no position keeps max -inf: its
        rescale and weight are 0, not NaN."""
        scores = tl.where(valid, scores, float("-inf"))
        new_max = tl.maximum(lane_max, scores)
        rescale = tl.where(new_max > float("-inf"), tl.exp(lane_max - new_max), 0.0)
        weights = tl.where(valid, tl.exp(scores - new_max), 0.0)
        return new_max, rescale, weights, lane_sum * rescale + weights

    @triton.jit
    def _merge_lanes(lane_max, lane_sum, lane_acc):
        """The lanes' partial softmaxes as one: (max, sum, acc [BLOCK_D])."""
        running_max = tl.max(lane_max, 0)
        share = tl.where(lane_max > float("-inf"), tl.exp(lane_max - running_max), 0.0)
        return running_max, tl.sum(lane_sum * share, 0), tl.sum(lane_acc * share[:, None], 0)

    @triton.jit
    def _paged_decode_kernel(
        q_ptr, cache_ptr, scales_ptr, tables_ptr, lens_ptr, out_ptr, part_max_ptr, part_sum_ptr,
        part_acc_ptr, scale, head_dim, num_heads, partition, num_splits, stride_q_seq, stride_q_head,
        stride_cache_kv, stride_cache_block, stride_cache_tok, stride_cache_head, stride_table,
        stride_out_seq, stride_out_head, stride_scales_kv, BLOCK_SIZE: tl.constexpr,
        BLOCK_D: tl.constexpr, TILE: tl.constexpr, ONE_SPLIT: tl.constexpr, SCALED: tl.constexpr,
        HEADS_FIRST: tl.constexpr,
    ):  # fmt: skip
        """Program (seq, head, split) attends q over positions [split * partition, +partition)
        of the sequence; with one split it writes the output, else a partial (max, sum, acc).
        The online softmax is kept per lane (a tile row): each lane has its own max, sum and
        [BLOCK_D] accumulator, so the loop reduces only across head_dim (within a warp) and the
        lanes merge once at the end, not across warps every tile (13-16% faster on an H100).
        SCALED: an 8-bit cache; a position's K scale multiplies its score and its V scale its
        weight (kv8.py). HEADS_FIRST: the grid is (heads, seqs, splits), so the programs that
        run together read the heads of the same positions (the same cache rows and scales)."""
        seq, head, split, start, end = _program_span(lens_ptr, partition, HEADS_FIRST)
        d = tl.arange(0, BLOCK_D)
        d_mask = d < head_dim
        q_at = q_ptr + seq * stride_q_seq + head * stride_q_head + d
        q = tl.load(q_at, mask=d_mask, other=0.0).to(tl.float32) * scale
        lane_max = tl.full([TILE], float("-inf"), tl.float32)
        lane_sum = tl.zeros([TILE], tl.float32)
        lane_acc = tl.zeros([TILE, BLOCK_D], tl.float32)
        for tile_start in range(start, end, TILE):
            valid, slot, row = _tile_at(
                tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
                tile_start, end, BLOCK_SIZE, TILE,
            )  # fmt: skip
            kv_mask = valid[:, None] & d_mask[None, :]
            scores = tl.sum(_tile_rows(cache_ptr, row, d, kv_mask) * q[None, :], 1)
            if SCALED:  # scales [2, blocks, BLOCK_SIZE, heads]
                scores *= tl.load(scales_ptr + slot * num_heads + head, mask=valid, other=0.0)
            lane_max, rescale, weights, lane_sum = _lane_update(lane_max, lane_sum, scores, valid)
            if SCALED:
                v_scales = scales_ptr + stride_scales_kv + slot * num_heads + head
                weights *= tl.load(v_scales, mask=valid, other=0.0)
            v = _tile_rows(cache_ptr + stride_cache_kv, row, d, kv_mask)
            lane_acc = lane_acc * rescale[:, None] + weights[:, None] * v
        running_max, running_sum, acc = _merge_lanes(lane_max, lane_sum, lane_acc)
        _store_output(
            out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
            stride_out_seq, stride_out_head, d, d_mask, head_dim, running_max, running_sum, acc, ONE_SPLIT,
        )  # fmt: skip

    @triton.jit
    def _store_output(
        out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
        stride_out_seq, stride_out_head, d, d_mask, head_dim, running_max, running_sum, acc,
        ONE_SPLIT: tl.constexpr,
    ):  # fmt: skip
        """The output [BLOCK_D], or the split's partial softmax (max, sum, acc). An empty split
        (start >= seq_len) leaves max = -inf, sum = 0, acc = 0."""
        if ONE_SPLIT:
            out_at = out_ptr + seq * stride_out_seq + head * stride_out_head + d
            tl.store(out_at, (acc / running_sum).to(out_ptr.dtype.element_ty), mask=d_mask)
        else:
            part = (seq * num_heads + head) * num_splits + split
            tl.store(part_max_ptr + part, running_max)
            tl.store(part_sum_ptr + part, running_sum)
            tl.store(part_acc_ptr + part * head_dim + d, acc, mask=d_mask)

    @triton.jit
    def _reduce_splits_kernel(
        part_max_ptr,
        part_sum_ptr,
        part_acc_ptr,
        out_ptr,
        head_dim,
        num_splits,
        stride_out_seq,
        stride_out_head,
        SPLITS: tl.constexpr,
        BLOCK_D: tl.constexpr,
    ):
        """Program (seq, head) merges the partial softmaxes of its splits (split 0 is never empty),
        BLOCK_D columns of their accumulators at a time."""
        seq, head = tl.program_id(0), tl.program_id(1)
        part = (seq * tl.num_programs(1) + head) * num_splits
        s = tl.arange(0, SPLITS)
        s_mask = s < num_splits
        maxes = tl.load(part_max_ptr + part + s, mask=s_mask, other=float("-inf"))
        sums = tl.load(part_sum_ptr + part + s, mask=s_mask, other=0.0)
        top = tl.max(maxes, 0)
        weights = tl.exp(maxes - top)
        total = tl.sum(weights * sums, 0)
        out_at = out_ptr + seq * stride_out_seq + head * stride_out_head
        for start in range(0, head_dim, BLOCK_D):
            d = start + tl.arange(0, BLOCK_D)
            d_mask = d < head_dim
            accs = tl.load(
                part_acc_ptr + (part + s)[:, None] * head_dim + d[None, :],
                mask=s_mask[:, None] & d_mask[None, :],
                other=0.0,
            )
            out = tl.sum(weights[:, None] * accs, 0) / total
            tl.store(out_at + d, out.to(out_ptr.dtype.element_ty), mask=d_mask)


def _output_for(q: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """`out` checked to take the result of `q`'s attention, or a new contiguous one."""
    if out is None:
        return torch.empty_like(q, memory_format=torch.contiguous_format)
    if out.shape != q.shape or out.dtype != q.dtype or out.stride(-1) != 1:
        raise ValueError(f"out must be {tuple(q.shape)} {q.dtype}, contiguous in head_dim")
    return out


def _check_triton_args(q, kv_cache, block_tables, seq_lens, kv_scales) -> None:
    """What the Triton kernel assumes of its arguments, beyond `check_paged_args`."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    require_triton(q.device)
    if q.stride(-1) != 1 or not kv_cache.is_contiguous():
        raise ValueError("q must be contiguous in head_dim and kv_cache contiguous")
    if block_tables.stride(-1) != 1 or block_tables.dtype not in (torch.int32, torch.int64):
        raise ValueError("block_tables must be an int32/int64 tensor contiguous in its last dim")
    if is_quantized(kv_cache.dtype) != (kv_scales is not None):
        raise ValueError("a quantized cache is read with its scales, and only a quantized cache has scales")
    if q.dtype != kv_cache.dtype and kv_scales is None:
        raise ValueError(f"q dtype {q.dtype} differs from the cache's {kv_cache.dtype}")
    if kv_scales is not None and (
        not kv_scales.is_contiguous() or kv_scales.shape[1:] != kv_cache.shape[1:4]
    ):
        raise ValueError(
            f"kv_scales must be a contiguous [2, blocks, block_size, heads], got {tuple(kv_scales.shape)}"
        )


def paged_decode_attention_triton(
    q: torch.Tensor,  # [seqs, heads, head_dim], last dim contiguous
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] contiguous
    block_tables: torch.Tensor,  # [seqs, max_blocks] int32
    seq_lens: torch.Tensor,  # [seqs] int32, each in [1, max_blocks * block_size]
    scale: float,
    num_splits: int | None = None,  # None: plan_splits
    out: torch.Tensor | None = None,  # [seqs, heads, head_dim] to write into (CUDA graphs, tests)
    launch: dict | None = None,  # DEFAULT_LAUNCH's settings overridden (a tuner's candidates)
    kv_scales: torch.Tensor | None = None,  # [2, blocks, block_size, heads] float32: a quantized cache's
) -> torch.Tensor:  # [seqs, heads, head_dim], q's dtype
    """The Triton version of `paged_decode_attention_ref` (which it is tested against). No
    host synchronisation: CUDA graphs capture it."""
    _check_triton_args(q, kv_cache, block_tables, seq_lens, kv_scales)
    num_seqs, heads, dim = q.shape
    out = _output_for(q, out)
    if num_seqs == 0:
        return out
    block_size = kv_cache.shape[2]
    tile, heads_first, launch = resolve_launch(launch, kv_scales is not None)
    partition, num_splits = partitions(num_seqs, heads, block_tables.shape[1] * block_size, tile, num_splits)
    one_split = num_splits == 1
    part_max, part_sum, part_acc = partial_buffers(q, num_splits)
    grid = (heads, num_seqs, num_splits) if heads_first else (num_seqs, heads, num_splits)
    _paged_decode_kernel[grid](
        q, kv_cache, kv_scales if kv_scales is not None else part_max,  # (scales not read unless SCALED)
        block_tables, seq_lens, out, part_max, part_sum, part_acc, scale, dim, heads, partition, num_splits,
        q.stride(0), q.stride(1), *kv_cache.stride()[:4],
        block_tables.stride(0), out.stride(0), out.stride(1),
        kv_scales.stride(0) if kv_scales is not None else 0,
        BLOCK_SIZE=block_size, BLOCK_D=next_power_of_2(dim), TILE=tile, ONE_SPLIT=one_split,
        SCALED=kv_scales is not None, HEADS_FIRST=heads_first, **launch,
    )  # fmt: skip
    if not one_split:
        _reduce_splits(part_max, part_sum, part_acc, out, num_splits, next_power_of_2(dim))
    return out


def _reduce_splits(part_max, part_sum, part_acc, out: torch.Tensor, num_splits: int, block_d: int) -> None:
    """Each (sequence, head)'s splits combined into `out` [seqs, heads, head_dim], in chunks of
    block_d columns (at most a power of two of them) small enough that a chunk of every split's
    accumulators, SPLITS x chunk float32 values, stays in registers (compiled for sm_90, d_model
    1280 whole over 128 splits spilled ~11 KB a thread)."""
    num_seqs, heads, dim = out.shape
    splits = next_power_of_2(num_splits)
    _reduce_splits_kernel[(num_seqs, heads)](
        part_max, part_sum, part_acc, out, dim, num_splits, out.stride(0), out.stride(1),
        SPLITS=splits, BLOCK_D=max(16, min(block_d, REDUCE_VALUES // splits)),
    )  # fmt: skip
