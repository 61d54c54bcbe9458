"""The Triton paged decode over a 4-bit cache (kv8.PACKED4): paged_attention.py's kernel, each byte
read once and unpacked into a code of the vector's first half (its low nibble) and one of its second
half (its high nibble), so q, the accumulators and the output are kept as two contiguous halves.
Why a kernel of its own: the float and 8-bit kernel reads one element per lane; this one reads half
the bytes of the 8-bit cache, the point of the format. Measured on an H200 (Whisper large's cross
attention, batch 256): 325 us a layer, as long as the fp8 cache's 316 us for half its bytes; it is
bound by its instructions (~10 an element), not by memory (benchmarks/results/
gpu_h200_2026-11-28_session31.txt). A tensor-core form (q's row 16 times) was slower (> 382 us).
"""

from __future__ import annotations

from scriba.kernels.triton_support import HAS_TRITON, tl, triton

if HAS_TRITON:
    from scriba.kernels.paged_attention import _lane_update, _merge_lanes, _program_span, _tile_at

    @triton.jit
    def _tile_codes4(cache_ptr, row, d, kv_mask):
        """A tile's K (or V) rows as (first halves' codes, 16 x second halves' codes) [TILE, BLOCK_HALF]
        float32. No int-to-float conversion: a GPU runs it at a quarter of the float rate (H200: 346
        us a layer at batch 256 with two a byte, 325 us without). A nibble OR'ed into the low bits
        of 2^23's float bits reads as 2^23 + nibble, exactly; the high nibble is left in place (16 x
        its value), and the caller scales its half of q and of the output by 1/16 (exact)."""
        packed = tl.load(cache_ptr + row[:, None] + d[None, :], mask=kv_mask, other=0).to(tl.int32)
        low = ((packed & 0x0F) | 0x4B000000).to(tl.float32, bitcast=True) - 8388616.0  # 2^23 + 8
        high = ((packed & 0xF0) | 0x4B000000).to(tl.float32, bitcast=True) - 8388736.0  # 2^23 + 16 * 8
        return low, high

    @triton.jit
    def _paged_decode_4bit_kernel(
        q_ptr, cache_ptr, scales_ptr, tables_ptr, lens_ptr, out_ptr, part_max_ptr, part_sum_ptr,
        part_acc_ptr, scale, half, num_heads, partition, num_splits, stride_q_seq, stride_q_head,
        stride_cache_kv, stride_cache_block, stride_cache_tok, stride_cache_head, stride_table,
        stride_out_seq, stride_out_head, stride_scales_kv, BLOCK_SIZE: tl.constexpr,
        BLOCK_HALF: tl.constexpr, TILE: tl.constexpr, ONE_SPLIT: tl.constexpr,
        HEADS_FIRST: tl.constexpr, INT_SCORES: tl.constexpr, ASM: tl.constexpr,
    ):  # fmt: skip
        """Program (seq, head, split), as paged_attention._paged_decode_kernel with SCALED (which
        launches it with the same arguments, `half` in place of head_dim). INT_SCORES (LAUNCH's
        `int_scores`): the scores in integers, q's int8 codes against K's 4-bit ones, four products
        an instruction (_int_scores4; ASM: the GPU's dp4a, else the same sum in Triton)."""
        seq, head, split, start, end = _program_span(lens_ptr, partition, HEADS_FIRST)
        d = tl.arange(0, BLOCK_HALF)
        d_mask = d < half
        q_low, q_high, codes_low, codes_high, q_step, q_offset = _q_halves(
            q_ptr + seq * stride_q_seq + head * stride_q_head, d, d_mask, half, scale, BLOCK_HALF, INT_SCORES
        )
        lane_max = tl.full([TILE], float("-inf"), tl.float32)
        lane_sum = tl.zeros([TILE], tl.float32)
        acc_low = tl.zeros([TILE, BLOCK_HALF], tl.float32)
        acc_high = tl.zeros([TILE, BLOCK_HALF], tl.float32)
        for tile_start in range(start, end, TILE):
            valid, slot, row = _tile_at(
                tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
                tile_start, end, BLOCK_SIZE, TILE,
            )  # fmt: skip
            kv_mask = valid[:, None] & d_mask[None, :]
            k_scales = scales_ptr + slot * num_heads + head
            scores = _tile_scores4(
                cache_ptr, row, d, kv_mask, valid, half, q_low, q_high, codes_low, codes_high, q_step,
                q_offset, BLOCK_HALF, INT_SCORES, ASM,
            )  # fmt: skip
            lane_max, lane_sum, acc_low, acc_high = _attend_values4(
                scores, cache_ptr, row, d, kv_mask, valid, k_scales, stride_cache_kv, stride_scales_kv,
                lane_max, lane_sum, acc_low, acc_high,
            )  # fmt: skip
        running_max, running_sum, low = _merge_lanes(lane_max, lane_sum, acc_low)
        _, _, high = _merge_lanes(lane_max, lane_sum, acc_high)
        _store_halves(
            out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
            stride_out_seq, stride_out_head, d, d_mask, half, running_max, running_sum, low, high, ONE_SPLIT,
        )  # fmt: skip

    @triton.jit
    def _paged_decode_4bit_two_pass_kernel(
        q_ptr, cache_ptr, scales_ptr, tables_ptr, lens_ptr, out_ptr, part_max_ptr, part_sum_ptr,
        part_acc_ptr, scale, half, num_heads, partition, num_splits, stride_q_seq, stride_q_head,
        stride_cache_kv, stride_cache_block, stride_cache_tok, stride_cache_head, stride_table,
        stride_out_seq, stride_out_head, stride_scales_kv, scores_ptr, BLOCK_SIZE: tl.constexpr,
        BLOCK_HALF: tl.constexpr, TILE: tl.constexpr, ONE_SPLIT: tl.constexpr,
        HEADS_FIRST: tl.constexpr, INT_SCORES: tl.constexpr, ASM: tl.constexpr,
    ):  # fmt: skip
        """_paged_decode_4bit_kernel in two passes (LAUNCH's `two_pass`): the span's scores first,
        kept in scores_ptr (float32 [seqs, heads, splits, partition]), and their max; then V under
        weights exp(score - max), which need no rescale of the accumulators: one multiply-add an
        element, not two (the one-pass kernel is bound by its instructions, not memory)."""
        seq, head, split, start, end = _program_span(lens_ptr, partition, HEADS_FIRST)
        d = tl.arange(0, BLOCK_HALF)
        d_mask = d < half
        q_low, q_high, codes_low, codes_high, q_step, q_offset = _q_halves(
            q_ptr + seq * stride_q_seq + head * stride_q_head, d, d_mask, half, scale, BLOCK_HALF, INT_SCORES
        )
        kept = scores_ptr + ((seq * num_heads + head) * num_splits + split) * partition - start
        lane_max = tl.full([TILE], float("-inf"), tl.float32)
        for tile_start in range(start, end, TILE):
            valid, slot, row = _tile_at(
                tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
                tile_start, end, BLOCK_SIZE, TILE,
            )  # fmt: skip
            kv_mask = valid[:, None] & d_mask[None, :]
            scores = _tile_scores4(
                cache_ptr, row, d, kv_mask, valid, half, q_low, q_high, codes_low, codes_high, q_step,
                q_offset, BLOCK_HALF, INT_SCORES, ASM,
            )  # fmt: skip
            k_scales = scales_ptr + slot * num_heads + head
            scores = tl.where(valid, scores * tl.load(k_scales, mask=valid, other=0.0), float("-inf"))
            tl.store(kept + tile_start + tl.arange(0, TILE), scores)
            lane_max = tl.maximum(lane_max, scores)
        top = tl.max(lane_max, 0)  # (-inf only for an empty split, whose second loop never runs)
        tl.debug_barrier()  # the scores stored by one thread are read by another
        lane_sum = tl.zeros([TILE], tl.float32)
        acc_low = tl.zeros([TILE, BLOCK_HALF], tl.float32)
        acc_high = tl.zeros([TILE, BLOCK_HALF], tl.float32)
        for tile_start in range(start, end, TILE):
            valid, slot, row = _tile_at(
                tables_ptr, seq, head, stride_table, stride_cache_block, stride_cache_tok, stride_cache_head,
                tile_start, end, BLOCK_SIZE, TILE,
            )  # fmt: skip
            weights = tl.exp(tl.load(kept + tile_start + tl.arange(0, TILE)) - top)  # (-inf: 0)
            lane_sum += weights
            v_scales = scales_ptr + stride_scales_kv + slot * num_heads + head
            weights *= tl.load(v_scales, mask=valid, other=0.0)
            v_low, v_high = _tile_codes4(
                cache_ptr + stride_cache_kv, row, d, valid[:, None] & d_mask[None, :]
            )
            acc_low += weights[:, None] * v_low
            acc_high += weights[:, None] * v_high
        _store_halves(
            out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
            stride_out_seq, stride_out_head, d, d_mask, half, top, tl.sum(lane_sum, 0), tl.sum(acc_low, 0),
            tl.sum(acc_high, 0), ONE_SPLIT,
        )  # fmt: skip

    @triton.jit
    def _q_halves(q_at, d, d_mask, half, scale, BLOCK_HALF: tl.constexpr, INT_SCORES: tl.constexpr):
        """q's two halves times the softmax scale, for _tile_scores4: (first half, second half / 16
        (_tile_codes4's second halves are 16 x their codes; exact), and with INT_SCORES their int8
        codes (_quantized_q: codes of each half, the step, the offset); else placeholders)."""
        low = tl.load(q_at + d, mask=d_mask, other=0.0).to(tl.float32) * scale
        high = tl.load(q_at + half + d, mask=d_mask, other=0.0).to(tl.float32) * scale
        if INT_SCORES:
            codes_low, codes_high, step, offset = _quantized_q(low, high, BLOCK_HALF)
            return low, high / 16, codes_low, codes_high, step, offset
        else:
            return low, high / 16, low, high, scale, 0

    @triton.jit
    def _tile_scores4(
        cache_ptr, row, d, kv_mask, valid, half, q_low, q_high, codes_low, codes_high, step, offset,
        BLOCK_HALF: tl.constexpr, INT_SCORES: tl.constexpr, ASM: tl.constexpr,
    ):  # fmt: skip
        """A tile's scores [TILE] float32 (before the K scales): its K codes against q (_q_halves)."""
        if INT_SCORES:
            words = tl.arange(0, BLOCK_HALF // 4)
            words_mask = valid[:, None] & (words < half // 4)[None, :]
            return step * _int_scores4(cache_ptr, row, words, words_mask, codes_low, codes_high, offset, ASM)
        else:
            k_low, k_high = _tile_codes4(cache_ptr, row, d, kv_mask)
            return tl.sum(k_low * q_low[None, :], 1) + tl.sum(k_high * q_high[None, :], 1)

    @triton.jit
    def _store_halves(
        out_ptr, part_max_ptr, part_sum_ptr, part_acc_ptr, seq, head, split, num_heads, num_splits,
        stride_out_seq, stride_out_head, d, d_mask, half, running_max, running_sum, low, high,
        ONE_SPLIT: tl.constexpr,
    ):  # fmt: skip
        """The output's two halves (the second accumulated 16 x: _tile_codes4), or the split's partial
        softmax (an empty split's: max -inf, sum 0, acc 0)."""
        high = high / 16
        if ONE_SPLIT:
            out_at = out_ptr + seq * stride_out_seq + head * stride_out_head + d
            tl.store(out_at, (low / running_sum).to(out_ptr.dtype.element_ty), mask=d_mask)
            tl.store(out_at + half, (high / running_sum).to(out_ptr.dtype.element_ty), mask=d_mask)
        else:
            part = (seq * num_heads + head) * num_splits + split
            tl.store(part_max_ptr + part, running_max)
            tl.store(part_sum_ptr + part, running_sum)
            tl.store(part_acc_ptr + part * 2 * half + d, low, mask=d_mask)
            tl.store(part_acc_ptr + part * 2 * half + half + d, high, mask=d_mask)

    @triton.jit
    def _attend_values4(
        scores, cache_ptr, row, d, kv_mask, valid, k_scales, stride_cache_kv, stride_scales_kv,
        lane_max, lane_sum, acc_low, acc_high,
    ):  # fmt: skip
        """One tile of positions into the per-lane online softmax: its scores [TILE] (of the K
        codes) times each position's K scale; V's codes into the two accumulators, weighted by its
        V scale. Returns (lane_max, lane_sum, acc_low, acc_high)."""
        scores *= tl.load(k_scales, mask=valid, other=0.0)
        lane_max, rescale, weights, lane_sum = _lane_update(lane_max, lane_sum, scores, valid)
        weights *= tl.load(k_scales + stride_scales_kv, mask=valid, other=0.0)
        v_low, v_high = _tile_codes4(cache_ptr + stride_cache_kv, row, d, kv_mask)
        acc_low = acc_low * rescale[:, None] + weights[:, None] * v_low
        acc_high = acc_high * rescale[:, None] + weights[:, None] * v_high
        return lane_max, lane_sum, acc_low, acc_high

    @triton.jit
    def _quantized_q(q_low, q_high, BLOCK_HALF: tl.constexpr):
        """q's halves (float32 [BLOCK_HALF], zeros past half) as int8 codes, symmetric, the largest
        |value| at 127: (low's codes four a word [BLOCK_HALF / 4] int32, high's, the value of a
        code's step, 8 x the codes' sum: the 4-bit codes' offset, _int_scores4)."""
        largest = tl.maximum(tl.max(tl.abs(q_low), 0), tl.max(tl.abs(q_high), 0))
        step = tl.maximum(largest / 127, 1e-30)
        low = tl.floor(q_low / step + 0.5).to(tl.int32)
        high = tl.floor(q_high / step + 0.5).to(tl.int32)
        offset = 8 * (tl.sum(low, 0) + tl.sum(high, 0))
        return _four_a_word(low, BLOCK_HALF), _four_a_word(high, BLOCK_HALF), step, offset

    @triton.jit
    def _four_a_word(codes, BLOCK_HALF: tl.constexpr):
        """int32 codes in [-128, 127] [BLOCK_HALF] -> their bytes four a word [BLOCK_HALF / 4], the
        first in the lowest byte (as the cache's bytes read as int32 on a little-endian GPU)."""
        fields = (tl.reshape(codes, [BLOCK_HALF // 4, 4]) & 0xFF) << (8 * tl.arange(0, 4))[None, :]
        return tl.sum(fields, 1)  # (disjoint bits: the sum is their OR)

    @triton.jit
    def _int_scores4(cache_ptr, row, words, words_mask, q_low, q_high, q_offset, ASM: tl.constexpr):
        """Each position's K codes against q's int8 codes (_quantized_q), exact in int32, as float32
        [TILE]: a word of the cache holds four bytes, whose low nibbles are four codes of the first
        half (+ 8) and high nibbles the same four of the second half; each nibble set meets q's word
        in one dp4a. The + 8 is taken off once, as q_offset."""
        at = (cache_ptr + row[:, None]).to(tl.pointer_type(tl.int32)) + words[None, :]
        packed = tl.load(at, mask=words_mask, other=-2004318072)  # 0x88888888: codes 0
        zeros = tl.zeros_like(packed)  # (q's words broadcast to the tile: the assembly takes equal shapes)
        total = _dp4a(packed & 0x0F0F0F0F, q_low[None, :] + zeros, zeros, ASM)
        total = _dp4a((packed >> 4) & 0x0F0F0F0F, q_high[None, :] + zeros, total, ASM)
        return (tl.sum(total, 1) - q_offset).to(tl.float32)

    @triton.jit
    def _dp4a(a, b, c, ASM: tl.constexpr):
        """c + the products of a's four bytes (unsigned) and b's (signed), int32: with ASM the
        GPU's dp4a, one instruction; else (the interpreter, which runs no assembly) byte by byte."""
        if ASM:
            return tl.inline_asm_elementwise(
                "dp4a.u32.s32 $0, $1, $2, $3;", "=r,r,r,r", [a, b, c], dtype=tl.int32, is_pure=True, pack=1
            )
        else:
            total = c
            for j in tl.static_range(4):
                signed = (b >> (8 * j)) & 0xFF
                total += ((a >> (8 * j)) & 0xFF) * (signed - ((signed >> 7) << 8))
            return total
