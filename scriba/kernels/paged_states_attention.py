"""Cross-attention read through the encoder states (EngineConfig.cross_cache="states").

A decoder layer's cross-attention K and V are both projections of the encoder states E
[positions, d_model]. For head h, with W_k,h and W_v,h its [head_dim, d_model] rows of the K and V
projections:

    score_t = q_h . (W_k,h e_t) = (W_k,h^T q_h) . e_t          (K's bias adds the same to every
    out_h = sum_t p_t (W_v,h e_t + b_v,h) = W_v,h (sum_t p_t e_t) + b_v,h      score: softmax drops it)

So a step may read E, once for the scores and the values together, in place of a layer's K and V:
half the bytes of a float cache, and one cache for every layer in place of one a layer. The query
becomes d_model wide (`absorb_queries`); the read is then an attention with `heads` queries a
sequence over one head d_model wide (`attend_states_*`), its result projected back per head
(`project_context`). The price is compute: the scores and the weighted sum over d_model, not
head_dim, per head, which the Triton kernel runs as tensor-core products.

The states sit in a pool of their own, shaped as one layer's K half ([1, blocks, block_size,
heads, head_dim], a row of heads x head_dim = d_model; engine/kv_pools.py), the cross tables'
blocks (BlockManager.cross_pools). In an 8-bit cache (kv8.py) a row has one scale, kept in each of
its heads' scale slots: a scale per position factors out of both products (score_t = scale_t
(q . codes_t), and the weighted sum takes p_t scale_t), so the kernel converts codes and scales
each score and weight once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from scriba.kernels.kv8 import dequantized, quantize
from scriba.kernels.paged_attention import _reduce_splits
from scriba.kernels.paged_decode_plan import partial_buffers, partitions
from scriba.kernels.triton_support import HAS_TRITON, next_power_of_2, require_triton, tl, triton

MAX_CHUNKS = 5  # the kernel's accumulators: d_model up to 5 x 256 (Whisper large's 1280)
# How the Triton kernel is launched; not yet timed on a GPU (benchmarks/tune_states_decode.py).
# rows: a program's query rows, heads padded up (16, the least a tensor-core product takes, splits
# Whisper large's 20 heads into two programs of 10 that read the same states; 32: one program).
# hoist_q: q's chunks held in registers across the loop (HOIST_Q); reuse_e: a tile's states read
# once for both products (REUSE_E), not again for the weighted sum (for sm_90 the compiler makes
# the same code of both either way). Tiles of 16 positions: a stage of a tile's loads is 16 x
# d_model values of E and as many of q in shared memory (Whisper large: 40 KB each in float16).
# 8 warps, 2 stages: compiled for sm_90 (benchmarks/compile_for_gpu.py) Whisper large's float16
# kernel takes 127 registers a thread and 82 KB of shared memory, two programs an SM, no spills;
# fp8 states 188. In 4 warps five [16, 256] float32 accumulators are 160 registers a thread alone:
# 255 and spills (72-336 bytes a thread), one split or 8-bit states.
LAUNCH = dict(tile=16, rows=16, hoist_q=False, reuse_e=False, num_warps=8, num_stages=2)


def absorb_queries(q: torch.Tensor, kv_weight: torch.Tensor) -> torch.Tensor:
    """q [seqs, heads, head_dim] -> [seqs, heads, d_model]: W_k,h^T q_h (kv_weight [2 * d_model,
    d_model], the fused K/V projection's; its first half is K's). Last dim contiguous."""
    heads, dim = q.shape[1:]
    w_k = kv_weight[: heads * dim].view(heads, dim, -1)
    return torch.bmm(q.transpose(0, 1), w_k).transpose(0, 1)


def project_context(
    context: torch.Tensor, kv_weight: torch.Tensor, kv_bias: torch.Tensor | None
) -> torch.Tensor:
    """context [seqs, heads, d_model] (sum_t p_t e_t per head) -> [seqs, heads, head_dim]:
    W_v,h context_h + b_v,h."""
    heads, d_model = context.shape[1:]
    w_v = kv_weight[d_model:].view(heads, -1, d_model)
    out = torch.bmm(context.transpose(0, 1), w_v.transpose(1, 2)).transpose(0, 1)
    return out if kv_bias is None else out + kv_bias[d_model:].view(heads, -1)


def states_decode_attention(
    q: torch.Tensor,  # [seqs, heads, head_dim]
    states_cache: torch.Tensor,  # [1, blocks, block_size, heads, head_dim]: E (kv_pools.py)
    kv_weight: torch.Tensor,  # [2 * d_model, d_model]
    kv_bias: torch.Tensor | None,  # [2 * d_model]
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
    attend,  # attend_states_ref or attend_states_triton
    states_scales: torch.Tensor | None = None,  # [1, blocks, block_size, heads]: an 8-bit cache's
) -> torch.Tensor:  # [seqs, heads, head_dim]
    """Cross-attention of one query token a sequence, read through the cached encoder states."""
    weight, bias = kv_weight.to(q.dtype), None if kv_bias is None else kv_bias.to(q.dtype)
    row_scales = None if states_scales is None else states_scales[0]
    context = attend(absorb_queries(q, weight), states_cache[0], block_tables, seq_lens, scale, row_scales)
    return project_context(context, weight, bias)


def attend_states_ref(
    queries: torch.Tensor,  # [seqs, heads, d_model]
    states: torch.Tensor,  # [blocks, block_size, heads, head_dim]: rows of d_model
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int
    scale: float,
    row_scales: torch.Tensor | None = None,  # [blocks, block_size, heads]: an 8-bit cache's
) -> torch.Tensor:  # [seqs, heads, d_model]
    """Each sequence's states gathered (a padded batch, masked by length), its heads' queries
    attending over them as one head."""
    num_seqs, block_size = queries.shape[0], states.shape[1]
    max_blocks = int(seq_lens.max().item() + block_size - 1) // block_size
    index = block_tables[:, :max_blocks].flatten().long()
    e = states.index_select(0, index)
    if row_scales is not None:
        e = dequantized(e, row_scales.index_select(0, index), queries.dtype)
    e = e.reshape(num_seqs, 1, max_blocks * block_size, -1).to(queries.dtype)
    mask = torch.arange(e.shape[2], device=e.device)[None, :] < seq_lens[:, None]
    mask = mask[:, None, None, :]
    return F.scaled_dot_product_attention(queries[:, None], e, e, attn_mask=mask, scale=scale)[:, 0]


def write_states(
    states: torch.Tensor,  # [tokens, d_model]
    states_cache: torch.Tensor,  # [1 or 2, blocks, block_size, heads, head_dim]: its K half written
    states_scales: torch.Tensor | None,  # [1 or 2, blocks, block_size, heads]: an 8-bit cache's
    slot_mapping: torch.Tensor,  # [tokens] int
) -> None:
    """The encoder states into the K half at their slots (any layout: by block and offset), in
    the cache's dtype; in an 8-bit cache as codes with one scale a row, in each of its heads' slots."""
    heads, dim = states_cache.shape[3:]
    slots = slot_mapping.long()
    block, offset = slots.div(states_cache.shape[2], rounding_mode="floor"), slots % states_cache.shape[2]
    if states_scales is None:
        states_cache[0][block, offset] = states.view(-1, heads, dim).to(states_cache.dtype)
        return
    codes, row_scale = quantize(states, states_cache.dtype)
    # as bytes (the CPU has no index_put for float8)
    states_cache[0].view(torch.int8)[block, offset] = codes.view(torch.int8).view(-1, heads, dim)
    states_scales[0].view(-1, heads).index_copy_(0, slots, row_scale[:, None].expand(-1, heads).contiguous())


if HAS_TRITON:

    @triton.jit
    def _states_chunk(states_ptr, row, valid, k: tl.constexpr, CHUNK: tl.constexpr, like):
        """Chunk k of a tile's states [TILE, CHUNK] in the dtype of `like` (the queries'): an 8-bit
        cache's codes converted, unscaled; 0 where not valid."""
        c = k * CHUNK + tl.arange(0, CHUNK)
        return tl.load(states_ptr + row[:, None] + c[None, :], mask=valid[:, None], other=0.0).to(like.dtype)

    @triton.jit
    def _dot(a, b, PRECISION: tl.constexpr):
        """a @ b, float32 accumulation; float32 operands in full where PRECISION is "ieee"."""
        if PRECISION == "ieee":
            return tl.dot(a, b, input_precision="ieee")
        return tl.dot(a, b)

    @triton.jit
    def _q_chunk(q_rows, row_mask, k: tl.constexpr, CHUNK: tl.constexpr, NUM_CHUNKS: tl.constexpr):
        """Chunk k of the program's queries [ROWS, CHUNK]; zeros, with no read, past d_model."""
        c = k * CHUNK + tl.arange(0, CHUNK)
        return tl.load(
            q_rows + c[None, :], mask=row_mask[:, None] & (c[None, :] < NUM_CHUNKS * CHUNK), other=0.0
        )

    @triton.jit
    def _score_chunk(
        q, q_rows, row_mask, states_ptr, row, valid, k: tl.constexpr, CHUNK: tl.constexpr,
        NUM_CHUNKS: tl.constexpr, PRECISION: tl.constexpr, HOIST_Q: tl.constexpr,
    ):  # fmt: skip
        """(q's chunk k times the tile's [ROWS, TILE], the tile's chunk k [TILE, CHUNK]): q's chunk
        `q` as hoisted (HOIST_Q), else read here."""
        if not HOIST_Q:
            q = _q_chunk(q_rows, row_mask, k, CHUNK, NUM_CHUNKS)
        e = _states_chunk(states_ptr, row, valid, k, CHUNK, q)
        return _dot(q, tl.trans(e), PRECISION), e

    @triton.jit
    def _tile_scores(
        q0, q1, q2, q3, q4, q_rows, row_mask, states_ptr, row, valid, TILE: tl.constexpr,
        CHUNK: tl.constexpr, NUM_CHUNKS: tl.constexpr, PRECISION: tl.constexpr, HOIST_Q: tl.constexpr,
    ):  # fmt: skip
        """(the queries' products [ROWS, TILE] with a tile's states, 0 where not valid; the tile's
        chunks e0..e4 [TILE, CHUNK] as read, zeros past d_model), chunk by chunk: q's chunks the
        hoisted q0..q4 (HOIST_Q), else read here."""
        zeros = tl.zeros([TILE, CHUNK], q0.dtype)
        e1, e2, e3, e4 = zeros, zeros, zeros, zeros
        # (constexprs named one by one: a tuple assignment would make them tensors, which no str is)
        p: tl.constexpr = PRECISION
        h: tl.constexpr = HOIST_Q
        scores, e0 = _score_chunk(q0, q_rows, row_mask, states_ptr, row, valid, 0, CHUNK, NUM_CHUNKS, p, h)
        if NUM_CHUNKS > 1:
            more, e1 = _score_chunk(q1, q_rows, row_mask, states_ptr, row, valid, 1, CHUNK, NUM_CHUNKS, p, h)
            scores += more
        if NUM_CHUNKS > 2:
            more, e2 = _score_chunk(q2, q_rows, row_mask, states_ptr, row, valid, 2, CHUNK, NUM_CHUNKS, p, h)
            scores += more
        if NUM_CHUNKS > 3:
            more, e3 = _score_chunk(q3, q_rows, row_mask, states_ptr, row, valid, 3, CHUNK, NUM_CHUNKS, p, h)
            scores += more
        if NUM_CHUNKS > 4:
            more, e4 = _score_chunk(q4, q_rows, row_mask, states_ptr, row, valid, 4, CHUNK, NUM_CHUNKS, p, h)
            scores += more
        return scores, e0, e1, e2, e3, e4

    @triton.jit
    def _row_update(scores, valid, running_max, total):
        """One tile of each query row's online softmax: (new max, rescale of the accumulators,
        weights [ROWS, TILE], new sum). A tile always has a valid position, so the max is finite."""
        scores = tl.where(valid[None, :], scores, float("-inf"))
        new_max = tl.maximum(running_max, tl.max(scores, 1))
        rescale = tl.where(new_max > float("-inf"), tl.exp(running_max - new_max), 0.0)
        weights = tl.where(valid[None, :], tl.exp(scores - new_max[:, None]), 0.0)
        return new_max, rescale, weights, total * rescale + tl.sum(weights, 1)

    @triton.jit
    def _q_chunks(q_rows, row_mask, CHUNK: tl.constexpr, NUM_CHUNKS: tl.constexpr):
        """The program's queries as five chunks [ROWS, CHUNK] (those past d_model zeros, never read)."""
        return (
            _q_chunk(q_rows, row_mask, 0, CHUNK, NUM_CHUNKS),
            _q_chunk(q_rows, row_mask, 1, CHUNK, NUM_CHUNKS),
            _q_chunk(q_rows, row_mask, 2, CHUNK, NUM_CHUNKS),
            _q_chunk(q_rows, row_mask, 3, CHUNK, NUM_CHUNKS),
            _q_chunk(q_rows, row_mask, 4, CHUNK, NUM_CHUNKS),
        )

    @triton.jit
    def _accumulate(
        acc, rescale, weights, e, states_ptr, row, valid, k: tl.constexpr, CHUNK: tl.constexpr,
        PRECISION: tl.constexpr, REUSE_E: tl.constexpr,
    ):  # fmt: skip
        """acc [ROWS, CHUNK] rescaled, plus the weights [ROWS, TILE] times the tile's chunk k: `e`,
        as the scores read it (REUSE_E), else read again (from L1 or L2)."""
        if not REUSE_E:
            e = _states_chunk(states_ptr, row, valid, k, CHUNK, e)
        return acc * rescale[:, None] + _dot(weights.to(e.dtype), e, PRECISION)

    @triton.jit
    def _accumulate_chunks(
        acc0, acc1, acc2, acc3, acc4, e0, e1, e2, e3, e4, rescale, weights, states_ptr, row, valid,
        CHUNK: tl.constexpr, NUM_CHUNKS: tl.constexpr, PRECISION: tl.constexpr, REUSE_E: tl.constexpr,
    ):  # fmt: skip
        """Each of the NUM_CHUNKS accumulators rescaled, plus the weights times its chunk of the tile."""
        p: tl.constexpr = PRECISION
        r: tl.constexpr = REUSE_E
        acc0 = _accumulate(acc0, rescale, weights, e0, states_ptr, row, valid, 0, CHUNK, p, r)
        if NUM_CHUNKS > 1:
            acc1 = _accumulate(acc1, rescale, weights, e1, states_ptr, row, valid, 1, CHUNK, p, r)
        if NUM_CHUNKS > 2:
            acc2 = _accumulate(acc2, rescale, weights, e2, states_ptr, row, valid, 2, CHUNK, p, r)
        if NUM_CHUNKS > 3:
            acc3 = _accumulate(acc3, rescale, weights, e3, states_ptr, row, valid, 3, CHUNK, p, r)
        if NUM_CHUNKS > 4:
            acc4 = _accumulate(acc4, rescale, weights, e4, states_ptr, row, valid, 4, CHUNK, p, r)
        return acc0, acc1, acc2, acc3, acc4

    @triton.jit
    def _store_chunk(
        acc, k: tl.constexpr, out_at, part_acc_at, d_model, total, row_mask, ONE_SPLIT: tl.constexpr,
        CHUNK: tl.constexpr,
    ):  # fmt: skip
        """Chunk k of the output (acc / total), or of the split's partial acc."""
        c = k * CHUNK + tl.arange(0, CHUNK)
        if ONE_SPLIT:
            out = acc / total[:, None]
            tl.store(out_at + c[None, :], out.to(out_at.dtype.element_ty), mask=row_mask[:, None])
        else:
            tl.store(part_acc_at + c[None, :], acc, mask=row_mask[:, None])

    @triton.jit
    def _states_decode_kernel(
        q_ptr, states_ptr, scales_ptr, tables_ptr, lens_ptr, out_ptr, part_max_ptr, part_sum_ptr,
        part_acc_ptr, scale, num_heads, heads_per_program, d_model, partition, num_splits, stride_q_seq,
        stride_q_head, stride_states_block, stride_states_tok, stride_table, stride_out_seq,
        stride_out_head, BLOCK_SIZE: tl.constexpr, TILE: tl.constexpr, ROWS: tl.constexpr,
        CHUNK: tl.constexpr, NUM_CHUNKS: tl.constexpr, ONE_SPLIT: tl.constexpr, PRECISION: tl.constexpr,
        HOIST_Q: tl.constexpr, SCALED: tl.constexpr, REUSE_E: tl.constexpr,
    ):  # fmt: skip
        """Program (head group, seq, split): the group's queries [ROWS, d_model] attend over the
        sequence's states at positions [split * partition, +partition), read once a tile for the
        scores and the weighted sum alike, both as tensor-core products in CHUNK-wide chunks. Up
        to MAX_CHUNKS accumulators [ROWS, CHUNK], one a chunk (Triton has no arrays of them).
        PRECISION: float32 products in full ("ieee"), not a GPU's default tf32. HOIST_Q: q's chunks
        held in registers across the loop, not read again (from L1) every tile. SCALED: an 8-bit
        cache, a scale a position (scales [blocks, BLOCK_SIZE, heads], each head's the same). REUSE_E:
        the weighted sum takes the tile's chunks the scores read, not reading them again."""
        group, seq, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        start = split * partition
        end = tl.minimum(start + partition, tl.load(lens_ptr + seq))
        r = tl.arange(0, ROWS)
        head = group * heads_per_program + r
        row_mask = (r < heads_per_program) & (head < num_heads)
        q_rows = q_ptr + seq * stride_q_seq + head[:, None] * stride_q_head
        # q's chunks, read once here where HOIST_Q (a chunk past d_model reads nothing and is never used)
        q0, q1, q2, q3, q4 = _q_chunks(q_rows, row_mask, CHUNK, NUM_CHUNKS)
        running_max = tl.full([ROWS], float("-inf"), tl.float32)
        total = tl.zeros([ROWS], tl.float32)
        acc0 = tl.zeros([ROWS, CHUNK], tl.float32)
        acc1 = tl.zeros([ROWS, CHUNK], tl.float32)
        acc2 = tl.zeros([ROWS, CHUNK], tl.float32)
        acc3 = tl.zeros([ROWS, CHUNK], tl.float32)
        acc4 = tl.zeros([ROWS, CHUNK], tl.float32)
        for tile_start in range(start, end, TILE):
            pos = tile_start + tl.arange(0, TILE)
            valid = pos < end
            block = tl.load(tables_ptr + seq * stride_table + pos // BLOCK_SIZE, mask=valid, other=0)
            row = block.to(tl.int64) * stride_states_block + (pos % BLOCK_SIZE) * stride_states_tok
            scores, e0, e1, e2, e3, e4 = _tile_scores(
                q0, q1, q2, q3, q4, q_rows, row_mask, states_ptr, row, valid, TILE, CHUNK, NUM_CHUNKS,
                PRECISION, HOIST_Q,
            )  # fmt: skip
            scores *= scale
            if SCALED:
                slot = block.to(tl.int64) * BLOCK_SIZE + pos % BLOCK_SIZE
                row_scale = tl.load(scales_ptr + slot * num_heads, mask=valid, other=0.0)
                scores *= row_scale[None, :]
            running_max, rescale, weights, total = _row_update(scores, valid, running_max, total)
            if SCALED:
                weights *= row_scale[None, :]
            acc0, acc1, acc2, acc3, acc4 = _accumulate_chunks(
                acc0, acc1, acc2, acc3, acc4, e0, e1, e2, e3, e4, rescale, weights, states_ptr, row, valid,
                CHUNK, NUM_CHUNKS, PRECISION, REUSE_E,
            )  # fmt: skip
        _store_states_output(
            out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
            d_model, stride_out_seq, stride_out_head, row_mask, running_max, total, acc0, acc1, acc2,
            acc3, acc4, ONE_SPLIT, CHUNK, NUM_CHUNKS,
        )  # fmt: skip

    @triton.jit
    def _store_states_output(
        out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
        d_model, stride_out_seq, stride_out_head, row_mask, running_max, total, acc0, acc1, acc2,
        acc3, acc4, ONE_SPLIT: tl.constexpr, CHUNK: tl.constexpr, NUM_CHUNKS: tl.constexpr,
    ):  # fmt: skip
        """The output rows [ROWS, d_model], or the split's partial softmax (max, sum, acc), laid
        out as paged_attention's partials ([seqs, heads, splits] and [..., d_model])."""
        part = (seq * num_heads + head) * num_splits + split
        if not ONE_SPLIT:
            tl.store(part_max_ptr + part, running_max, mask=row_mask)
            tl.store(part_sum_ptr + part, total, mask=row_mask)
        out_at = out_ptr + seq * stride_out_seq + head[:, None] * stride_out_head
        part_acc_at = part_acc_ptr + part[:, None].to(tl.int64) * d_model
        _store_chunk(acc0, 0, out_at, part_acc_at, d_model, total, row_mask, ONE_SPLIT, CHUNK)
        if NUM_CHUNKS > 1:
            _store_chunk(acc1, 1, out_at, part_acc_at, d_model, total, row_mask, ONE_SPLIT, CHUNK)
        if NUM_CHUNKS > 2:
            _store_chunk(acc2, 2, out_at, part_acc_at, d_model, total, row_mask, ONE_SPLIT, CHUNK)
        if NUM_CHUNKS > 3:
            _store_chunk(acc3, 3, out_at, part_acc_at, d_model, total, row_mask, ONE_SPLIT, CHUNK)
        if NUM_CHUNKS > 4:
            _store_chunk(acc4, 4, out_at, part_acc_at, d_model, total, row_mask, ONE_SPLIT, CHUNK)


def chunk_of(d_model: int) -> int:
    """The kernel's chunk: the widest power of two up to 256 dividing d_model in at most
    MAX_CHUNKS chunks (and at least 16, a tensor-core product's least)."""
    for chunk in (256, 128, 64, 32, 16):
        if d_model % chunk == 0 and d_model // chunk <= MAX_CHUNKS:
            return chunk
    raise ValueError(f"cross_cache='states' reads d_model {d_model} in Triton only as <= {MAX_CHUNKS} "
                     "chunks of a power of two from 16 to 256")  # fmt: skip


def attend_states_triton(
    queries: torch.Tensor,  # [seqs, heads, d_model], last dim contiguous
    states: torch.Tensor,  # [blocks, block_size, heads, head_dim], each position's row contiguous
    block_tables: torch.Tensor,  # [seqs, max_blocks] int32
    seq_lens: torch.Tensor,  # [seqs] int32
    scale: float,
    row_scales: torch.Tensor | None = None,  # [blocks, block_size, heads] contiguous: an 8-bit cache's
    num_splits: int | None = None,  # None: plan_splits
    launch: dict | None = None,  # LAUNCH's overrides
) -> torch.Tensor:  # [seqs, heads, d_model]
    """The Triton version of `attend_states_ref` (tested against it); no host synchronisation."""
    require_triton(queries.device)
    num_seqs, heads, d_model = queries.shape
    if queries.stride(-1) != 1 or states.stride(3) != 1 or states.stride(2) != states.shape[3]:
        raise ValueError("queries must be contiguous in d_model and each state row contiguous")
    out = torch.empty(queries.shape, dtype=queries.dtype, device=queries.device)
    if num_seqs == 0:
        return out
    launch = {**LAUNCH, **(launch or {})}
    tile, rows, hoist_q, reuse_e = (launch.pop(key) for key in ("tile", "rows", "hoist_q", "reuse_e"))
    groups = -(-heads // rows)
    per_program = -(-heads // groups)
    block_size, chunk = states.shape[1], chunk_of(d_model)
    partition, num_splits = partitions(num_seqs, groups, block_tables.shape[1] * block_size, tile, num_splits)
    part_max, part_sum, part_acc = partial_buffers(queries, num_splits)
    scales = part_max if row_scales is None else row_scales  # (not read unless SCALED)
    _states_decode_kernel[(groups, num_seqs, num_splits)](
        queries, states, scales, block_tables, seq_lens, out, part_max, part_sum, part_acc, scale, heads,
        per_program, d_model, partition, num_splits, queries.stride(0), queries.stride(1),
        states.stride(0), states.stride(1), block_tables.stride(0), out.stride(0), out.stride(1),
        BLOCK_SIZE=block_size, TILE=tile, ROWS=max(16, next_power_of_2(per_program)),
        CHUNK=chunk, NUM_CHUNKS=d_model // chunk, ONE_SPLIT=num_splits == 1,
        PRECISION="ieee" if queries.dtype == torch.float32 else "default", HOIST_Q=hoist_q,
        SCALED=row_scales is not None, REUSE_E=reuse_e, **launch,
    )  # fmt: skip
    if num_splits > 1:
        _reduce_splits(part_max, part_sum, part_acc, out, num_splits, next_power_of_2(d_model))
    return out
