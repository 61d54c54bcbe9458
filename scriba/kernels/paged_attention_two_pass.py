"""The Triton paged decode in two passes (LAUNCH's `two_pass`), over a float or 8-bit cache:
paged_attention._paged_decode_kernel's program, which first keeps the span's scores (float32, in
`scores_ptr` [seqs, heads, splits, partition]) and their max, then reads V under weights
exp(score - max). Why: the one-pass kernel's online softmax rescales every lane's accumulator at
every tile, a multiply for each element beside the multiply-add, and over an 8-bit cache that
kernel is bound by its instructions, not by memory (an H200: fp8 at 3.1 TB/s, float16 at 3.7;
benchmarks/results/gpu_h200_2026-11-28_session31.txt). The cost: 8 bytes a position written and read
back, against 128 of an fp8 K and V at Whisper's head_dim. The 4-bit form is
paged_attention_4bit._paged_decode_4bit_two_pass_kernel. Not yet timed on a GPU.
"""

from __future__ import annotations

from scriba.kernels.triton_support import HAS_TRITON, tl, triton

if HAS_TRITON:
    from scriba.kernels.paged_attention import _program_span, _store_output, _tile_at, _tile_rows

    @triton.jit
    def _paged_decode_two_pass_kernel(
        q_ptr, cache_ptr, scales_ptr, tables_ptr, lens_ptr, out_ptr, part_max_ptr, part_sum_ptr,
        part_acc_ptr, scale, head_dim, num_heads, partition, num_splits, stride_q_seq, stride_q_head,
        stride_cache_kv, stride_cache_block, stride_cache_tok, stride_cache_head, stride_table,
        stride_out_seq, stride_out_head, stride_scales_kv, scores_ptr, BLOCK_SIZE: tl.constexpr,
        BLOCK_D: tl.constexpr, TILE: tl.constexpr, ONE_SPLIT: tl.constexpr, SCALED: tl.constexpr,
        HEADS_FIRST: tl.constexpr,
    ):  # fmt: skip
        """Program (seq, head, split), as paged_attention._paged_decode_kernel (same arguments, and
        scores_ptr)."""
        seq, head, split, start, end = _program_span(lens_ptr, partition, HEADS_FIRST)
        d = tl.arange(0, BLOCK_D)
        d_mask = d < head_dim
        q_at = q_ptr + seq * stride_q_seq + head * stride_q_head + d
        q = tl.load(q_at, mask=d_mask, other=0.0).to(tl.float32) * scale
        kept = scores_ptr + ((seq * num_heads + head) * num_splits + split) * partition - start
        lane_max = tl.full([TILE], float("-inf"), tl.float32)
        for tile_start in range(start, end, TILE):
            valid, slot, row = _tile_at(
                tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
                tile_start, end, BLOCK_SIZE, TILE,
            )  # fmt: skip
            scores = tl.sum(_tile_rows(cache_ptr, row, d, valid[:, None] & d_mask[None, :]) * q[None, :], 1)
            if SCALED:  # scales [2, blocks, BLOCK_SIZE, heads]
                k_scales = scales_ptr + slot * num_heads + head
                scores *= tl.load(k_scales, mask=valid, other=0.0)
            scores = tl.where(valid, scores, float("-inf"))
            tl.store(kept + tile_start + tl.arange(0, TILE), scores)
            lane_max = tl.maximum(lane_max, scores)
        top = tl.max(lane_max, 0)  # (-inf only for an empty split, whose second loop never runs)
        tl.debug_barrier()  # the scores one thread stored are read by another
        lane_sum = tl.zeros([TILE], tl.float32)
        lane_acc = tl.zeros([TILE, BLOCK_D], tl.float32)
        for tile_start in range(start, end, TILE):
            valid, slot, row = _tile_at(
                tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
                tile_start, end, BLOCK_SIZE, TILE,
            )  # fmt: skip
            weights = tl.exp(tl.load(kept + tile_start + tl.arange(0, TILE)) - top)  # (-inf: 0)
            lane_sum += weights
            if SCALED:
                v_scales = scales_ptr + stride_scales_kv + slot * num_heads + head
                weights *= tl.load(v_scales, mask=valid, other=0.0)
            v = _tile_rows(cache_ptr + stride_cache_kv, row, d, valid[:, None] & d_mask[None, :])
            lane_acc += weights[:, None] * v
        _store_output(
            out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
            stride_out_seq, stride_out_head, d, d_mask, head_dim, top, tl.sum(lane_sum, 0),
            tl.sum(lane_acc, 0), ONE_SPLIT,
        )  # fmt: skip
