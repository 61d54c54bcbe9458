"""The Triton kernel of cross-attention read through the encoder states (paged_states_attention.py
has the math and the torch form it is tested against): a program's queries [ROWS, d_model] (a
sequence's heads) attend over the sequence's states E [positions, d_model], both products on the
tensor cores.

The products are ROWS x TILE over d_model (the scores) and ROWS x d_model over TILE (the weighted
sum): small M and N, long K. Split over the warps by M or N (session 32's kernel), every warp reads
all of q and much of the tile from shared memory for its own [16, 8] piece (sm_90, 8 warps: 530 KB
for each 40 KB tile). So d_model is cut into slices, one a warp: q and E as [slices, ROWS or TILE,
width] and each product a batched one (Triton gives a batched product's warps the batch). A warp's
scores are its slice's part, summed across the warps; the weights come back to every warp for its
slice of the weighted sum: each warp reads only its own slices of q and of the tile.

Slices are a power of two in number and width (Triton's shapes), so each slice is a main part
and a tail, both powers of two: d_model = SLICES x (WIDTH + TAIL_WIDTH), Whisper large's
1280 = 8 x (128 + 32), tiny's 384 = 8 x (32 + 16) (slices_of). The tail is a second batched
product with as many slices as the main one: each warp has its own (Triton 3.6, the GPU machine's,
gives a batched product of fewer slices than warps to several warps at once, the same work each).
"""

from __future__ import annotations

import torch

from scriba.kernels.kv8 import FP8
from scriba.kernels.paged_attention import _reduce_splits
from scriba.kernels.paged_decode_plan import partial_buffers, partitions
from scriba.kernels.triton_support import HAS_TRITON, IS_INTERPRETED, require_triton, tl, triton

# How the kernel is launched; not yet timed on a GPU (benchmarks/tune_states_decode.py). rows: a
# program's query rows, heads padded up (16, the least a tensor-core product takes, splits Whisper
# large's 20 heads into two programs of 10 that read the same states; 32: one program). tile:
# positions a step. None: by the dtypes (`resolve_launch`). Compiled for sm_90 in Triton 3.6 (the
# GPU machine's), Whisper large (benchmarks/compile_for_gpu.py --model, sass_loop.py: a warp's loop
# against its data reads in an SM's time):
# - float16 states, tiles of 16 (one block), 2 stages: 207 registers, 88 KB of shared memory, no
#   spills; shared-memory traffic 0.67x, issue 0.67x (tiles of 32 spill a few bytes at one split);
# - fp8 states, tiles of 32, 1 stage: 230 registers; shared 1.46x, issue 1.23x (tiles of 64 need
#   more shared memory than an SM has in 3.6; without the PTX conversion issue is 1.5x more);
# - float32 (full-precision products, the tests' mode) in tiles of 16 and 1 stage: tiles of 32 need
#   368 KB of shared memory. int8 states spill ~450 bytes.
LAUNCH = dict(tile=None, rows=16, num_warps=8, num_stages=None)
SLICES = (8, 4, 2, 1)  # slices of d_model, most first: one a warp in LAUNCH's 8 warps
LEAST_WIDTH = 16  # a tensor-core product's least


def slices_of(d_model: int) -> tuple[int, int, int]:
    """(slices, width, tail_width): d_model = slices x (width + tail_width), each a power of two of
    at least 16 (tail_width 0: no tail), with the most slices that allow it."""
    for slices in SLICES:
        each = d_model // slices
        width = 1 << (each.bit_length() - 1) if each else 0
        tail = each - width
        if d_model % slices == 0 and width >= LEAST_WIDTH and tail in (0, *_powers(LEAST_WIDTH, width)):
            return slices, width, tail
    raise ValueError(
        f"cross_cache='states' reads d_model {d_model} in Triton only as 1-8 slices of a power of two "
        "(at least 16), or of two such"
    )


def _powers(least: int, below: int) -> tuple[int, ...]:
    """The powers of two from `least` up to `below`, not included."""
    return tuple(1 << k for k in range(least.bit_length() - 1, below.bit_length() - 1))


if HAS_TRITON:

    @triton.jit
    def _columns(START: tl.constexpr, SLICES: tl.constexpr, WIDTH: tl.constexpr):
        """Offsets [SLICES, 1, WIDTH] of a row's columns: SLICES runs of WIDTH from column START."""
        s = tl.arange(0, SLICES)
        return START + s[:, None, None] * WIDTH + tl.arange(0, WIDTH)[None, None, :]

    @triton.jit
    def _dot(a, b, PRECISION: tl.constexpr):
        """a @ b (batched), float32 accumulation; float32 operands in full where PRECISION is "ieee"."""
        if PRECISION == "ieee":
            return tl.dot(a, b, input_precision="ieee")
        return tl.dot(a, b)

    @triton.jit
    def _e4m3_to_f16(codes):
        """fp8 (e4m3) codes as bytes -> float16, four at a time in PTX. Opaque to the compiler (not
        pure), so it converts where the codes are loaded: from the plain conversion it moves the
        codes into shared memory first and converts every byte as each product reads it (sm_90:
        1.5x the loop's instructions)."""
        return tl.inline_asm_elementwise(
            asm="{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $2; "
            "cvt.rn.f16x2.e4m3x2 $0, lo; cvt.rn.f16x2.e4m3x2 $1, hi; }",
            constraints="=r,=r,r", args=[codes], dtype=tl.float16, is_pure=False, pack=4,
        )  # fmt: skip

    @triton.jit
    def _query_slices(q_rows, row_mask, columns, d_model):
        """The program's queries at these columns [SLICES, ROWS, WIDTH] (q_rows: each row's start
        [ROWS]); 0 past d_model (where there is no tail) and in rows past the group's heads."""
        mask = row_mask[None, :, None] & (columns < d_model)
        return tl.load(q_rows[None, :, None] + columns, mask=mask, other=0.0)

    @triton.jit
    def _slice_tile(states_ptr, row, valid, columns, like, ASM: tl.constexpr):
        """A tile's states [SLICES, TILE, WIDTH] (row: each position's offset [TILE]) in the dtype of
        `like` (the queries'): an 8-bit cache's codes converted, unscaled; 0 where not valid. ASM:
        fp8 codes through _e4m3_to_f16 (compiled; the interpreter runs no PTX)."""
        at = states_ptr + row[None, :, None] + columns
        if ASM and states_ptr.dtype.element_ty == tl.float8e4nv:
            codes = tl.load(at, mask=valid[None, :, None], other=0.0).to(tl.uint8, bitcast=True)
            return _e4m3_to_f16(codes).to(like.dtype)
        return tl.load(at, mask=valid[None, :, None], other=0.0).to(like.dtype)

    @triton.jit
    def _slice_scores(q, e, PRECISION: tl.constexpr):
        """q [SLICES, ROWS, WIDTH] . e [SLICES, TILE, WIDTH] summed over slices: [ROWS, TILE]."""
        return tl.trans(tl.sum(_dot(e, tl.permute(q, (0, 2, 1)), PRECISION), 0))  # (why: LAUNCH)

    @triton.jit
    def _tile_scores(tile_ptr, row, valid, main, tail, q_main, q_tail, PRECISION: tl.constexpr,
                     ASM: tl.constexpr, HAS_TAIL: tl.constexpr):  # fmt: skip
        """(the tile's scores [ROWS, TILE], unscaled; its main slices [SLICES, TILE, WIDTH]; its tail
        slices, or the main ones again where there is no tail): both parts' products summed."""
        e_main = _slice_tile(tile_ptr, row, valid, main, q_main, ASM)
        scores = _slice_scores(q_main, e_main, PRECISION)
        e_tail = e_main
        if HAS_TAIL:
            e_tail = _slice_tile(tile_ptr, row, valid, tail, q_main, ASM)
            scores += _slice_scores(q_tail, e_tail, PRECISION)
        return scores, e_main, e_tail

    @triton.jit
    def _slice_accumulate(acc, weights, e, SLICES: tl.constexpr, PRECISION: tl.constexpr):
        """acc [SLICES, ROWS, WIDTH] plus weights [ROWS, TILE] times e [SLICES, TILE, WIDTH] (the
        product's own accumulator: no separate add)."""
        w = tl.broadcast_to(weights.to(e.dtype)[None, :, :], (SLICES, weights.shape[0], weights.shape[1]))
        return acc + _dot(w, e, PRECISION)

    @triton.jit
    def _block_rows(states_ptr, table, tile_start, pos, stride_block, stride_tok, BLOCK_SIZE: tl.constexpr):
        """A tile of one block (tiles of BLOCK_SIZE start at whole blocks: partitions are whole tiles):
        (the block's start, each position's 32-bit offset from it [TILE], the block). One table read,
        and cheaper addresses than 64-bit ones a position (sm_90: 8% fewer instructions a loop)."""
        block = tl.load(table + tile_start // BLOCK_SIZE)
        return states_ptr + block.to(tl.int64) * stride_block, (pos % BLOCK_SIZE) * stride_tok, block

    @triton.jit
    def _gathered_rows(states_ptr, table, pos, valid, stride_block, stride_tok, BLOCK_SIZE: tl.constexpr):
        """A tile over blocks: (the pool's start, each position's offset [TILE], its block [TILE])."""
        block = tl.load(table + pos // BLOCK_SIZE, mask=valid, other=0)
        return states_ptr, block.to(tl.int64) * stride_block + (pos % BLOCK_SIZE) * stride_tok, block

    @triton.jit
    def _accumulate_tile(acc_main, acc_tail, moved, rescale, weights, e_main, e_tail, SLICES: tl.constexpr,
                         PRECISION: tl.constexpr, HAS_TAIL: tl.constexpr):  # fmt: skip
        """Both parts' accumulators rescaled where the softmax reference `moved` (_row_update),
        plus the weights [ROWS, TILE] times the tile's slices."""
        if moved:
            acc_main *= rescale[None, :, None]
            if HAS_TAIL:
                acc_tail *= rescale[None, :, None]
        acc_main = _slice_accumulate(acc_main, weights, e_main, SLICES, PRECISION)
        if HAS_TAIL:
            acc_tail = _slice_accumulate(acc_tail, weights, e_tail, SLICES, PRECISION)
        return acc_main, acc_tail

    @triton.jit
    def _row_update(scores, valid, reference, total, LAZY: tl.constexpr):
        """One tile of each query row's online softmax: (reference max, whether it moved, the
        accumulators' rescale, weights [ROWS, TILE], new sum). The reference moves, every row's to its
        max, only when some row's max passes its reference by more than LAZY: until then weights reach
        e^LAZY at most (float16 holds them) and the accumulators are not rescaled, most tiles' case
        (~80 multiplies a thread a tile saved). A tile always has a valid position: the max is finite."""
        scores = tl.where(valid[None, :], scores, float("-inf"))
        new_max = tl.maximum(reference, tl.max(scores, 1))
        moved = tl.max(new_max - reference, 0) > LAZY  # (the first tile: +inf)
        new_reference = tl.where(moved, new_max, reference)
        rescale = tl.where(new_reference > float("-inf"), tl.exp(reference - new_reference), 0.0)
        weights = tl.where(valid[None, :], tl.exp(scores - new_reference[:, None]), 0.0)
        return new_reference, moved, rescale, weights, total * rescale + tl.sum(weights, 1)

    @triton.jit
    def _store_slices(acc, columns, out_at, part_acc_at, total, row_mask, ONE_SPLIT: tl.constexpr):
        """The output's slices (acc / total) at out_at [ROWS] + columns, or the split's partial acc."""
        mask = row_mask[None, :, None]
        if ONE_SPLIT:
            out = acc / total[None, :, None]
            tl.store(out_at[None, :, None] + columns, out.to(out_at.dtype.element_ty), mask=mask)
        else:
            tl.store(part_acc_at[None, :, None] + columns, acc, mask=mask)

    @triton.jit
    def _states_decode_kernel(
        q_ptr, states_ptr, scales_ptr, tables_ptr, lens_ptr, out_ptr, part_max_ptr, part_sum_ptr,
        part_acc_ptr, scale, num_heads, heads_per_program, d_model, partition, num_splits, stride_q_seq,
        stride_q_head, stride_states_block, stride_states_tok, stride_table, stride_out_seq,
        stride_out_head, BLOCK_SIZE: tl.constexpr, TILE: tl.constexpr, ROWS: tl.constexpr,
        SLICES: tl.constexpr, WIDTH: tl.constexpr, TAIL_WIDTH: tl.constexpr, HAS_TAIL: tl.constexpr,
        ONE_SPLIT: tl.constexpr, PRECISION: tl.constexpr, SCALED: tl.constexpr, ASM: tl.constexpr,
    ):  # fmt: skip
        """Program (head group, seq, split): the group's queries [ROWS, d_model] attend over the
        sequence's states at positions [split * partition, +partition), in SLICES slices of WIDTH
        columns, then as many of TAIL_WIDTH where HAS_TAIL (else a shape never used). PRECISION:
        float32 products in full ("ieee"), not a GPU's default tf32. SCALED: an 8-bit cache, a
        scale a position (scales [blocks, BLOCK_SIZE, heads], each head's the same). ASM: fp8
        codes converted in PTX (_slice_tile)."""
        group, seq, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        start = split * partition
        end = tl.minimum(start + partition, tl.load(lens_ptr + seq))
        r = tl.arange(0, ROWS)
        head = group * heads_per_program + r
        row_mask = (r < heads_per_program) & (head < num_heads)
        q_rows = q_ptr + seq * stride_q_seq + head * stride_q_head
        main = _columns(0, SLICES, WIDTH)
        tail = _columns(SLICES * WIDTH, SLICES, TAIL_WIDTH)  # (past d_model where no tail: never read)
        q_main = _query_slices(q_rows, row_mask, main, d_model)
        q_tail = _query_slices(q_rows, row_mask, tail, d_model)
        running_max = tl.full([ROWS], float("-inf"), tl.float32)
        total = tl.zeros([ROWS], tl.float32)
        acc_main = tl.zeros([SLICES, ROWS, WIDTH], tl.float32)
        acc_tail = tl.zeros([SLICES, ROWS, TAIL_WIDTH], tl.float32)
        for tile_start in range(start, end, TILE):
            pos = tile_start + tl.arange(0, TILE)
            valid = pos < end
            table, strides = tables_ptr + seq * stride_table, (stride_states_block, stride_states_tok)
            if TILE == BLOCK_SIZE:
                tile_ptr, row, block = _block_rows(states_ptr, table, tile_start, pos, *strides, BLOCK_SIZE)
            else:
                tile_ptr, row, block = _gathered_rows(states_ptr, table, pos, valid, *strides, BLOCK_SIZE)
            scores, e_main, e_tail = _tile_scores(
                tile_ptr, row, valid, main, tail, q_main, q_tail, PRECISION, ASM, HAS_TAIL
            )  # fmt: skip
            scores *= scale
            if SCALED:
                slot = block.to(tl.int64) * BLOCK_SIZE + pos % BLOCK_SIZE
                row_scale = tl.load(scales_ptr + slot * num_heads, mask=valid, other=0.0)
                scores *= row_scale[None, :]
            running_max, moved, rescale, weights, total = _row_update(scores, valid, running_max, total, 8.0)
            if SCALED:
                weights *= row_scale[None, :]
            acc_main, acc_tail = _accumulate_tile(
                acc_main, acc_tail, moved, rescale, weights, e_main, e_tail, SLICES, PRECISION, HAS_TAIL
            )  # fmt: skip
        part = (seq * num_heads + head) * num_splits + split
        if not ONE_SPLIT:
            tl.store(part_max_ptr + part, running_max, mask=row_mask)
            tl.store(part_sum_ptr + part, total, mask=row_mask)
        out_at = out_ptr + seq * stride_out_seq + head * stride_out_head
        part_acc_at = part_acc_ptr + part.to(tl.int64) * d_model
        _store_slices(acc_main, main, out_at, part_acc_at, total, row_mask, ONE_SPLIT)
        if HAS_TAIL:
            _store_slices(acc_tail, tail, out_at, part_acc_at, total, row_mask, ONE_SPLIT)


def resolve_launch(overrides: dict | None, dtype: torch.dtype, states_dtype: torch.dtype):
    """(tile, rows, Triton's own launch options) from LAUNCH and the overrides; where None, by the
    queries' and the states' dtypes: tiles of 16 (32 over 8-bit states) and 2 stages (1 in float32 or
    over 8-bit states)."""
    launch = {**LAUNCH, **(overrides or {})}
    wide, eight_bit = dtype == torch.float32, states_dtype in (FP8, torch.int8)
    tile = launch.pop("tile") or (32 if eight_bit else 16)
    launch["num_stages"] = launch["num_stages"] or (1 if wide or eight_bit else 2)
    return tile, launch.pop("rows"), launch


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
    tile, rows, launch = resolve_launch(launch, queries.dtype, states.dtype)
    groups = -(-heads // rows)
    per_program = -(-heads // groups)
    block_size, (slices, width, tail_width) = states.shape[1], slices_of(d_model)
    partition, num_splits = partitions(num_seqs, groups, block_tables.shape[1] * block_size, tile, num_splits)
    part_max, part_sum, part_acc = partial_buffers(queries, num_splits)
    scales = part_max if row_scales is None else row_scales  # (not read unless SCALED)
    _states_decode_kernel[(groups, num_seqs, num_splits)](
        queries, states, scales, block_tables, seq_lens, out, part_max, part_sum, part_acc, scale, heads,
        per_program, d_model, partition, num_splits, queries.stride(0), queries.stride(1),
        states.stride(0), states.stride(1), block_tables.stride(0), out.stride(0), out.stride(1),
        BLOCK_SIZE=block_size, TILE=tile, ROWS=max(16, triton.next_power_of_2(per_program)), SLICES=slices,
        WIDTH=width, TAIL_WIDTH=tail_width or LEAST_WIDTH, HAS_TAIL=tail_width > 0, ONE_SPLIT=num_splits == 1,
        PRECISION="ieee" if queries.dtype == torch.float32 else "default",
        SCALED=row_scales is not None, ASM=not IS_INTERPRETED, **launch,
    )  # fmt: skip
    if num_splits > 1:
        _reduce_splits(part_max, part_sum, part_acc, out, num_splits, triton.next_power_of_2(d_model))
    return out
