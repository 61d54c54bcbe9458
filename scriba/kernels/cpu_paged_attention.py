"""Paged decode attention on the CPU over a float32, float16 or bfloat16 KV cache: a numba kernel.

Every decode step reads each sequence's whole context in every layer, and for Whisper that is
a cross-attention context of 1,500 positions: on a 2-core CPU the step is bound by those reads.
PyTorch's SDPA makes them at a fraction of the memory's speed (its small per-block products
bound it) and runs 3-5x slower still on a bfloat16 cache. This kernel reads the cache in place
through the block tables (no gather); a bfloat16 cache halves the bytes (17 contexts of 1,500
positions, 4 layers in turn on 2 AVX2 cores: 2.64 ms a layer from a float32 cache, 1.52 ms from
a bfloat16 one, against SDPA's 4.04 ms in float32 and 2.40 ms for a plain read of the float32 K
and V). One task per (sequence, head):

    scores[t] = scale * q[r, h] . k[h, slot(r, t)]    for t < length[r]
    out[r, h] = sum_t softmax(scores)[t] * v[h, slot(r, t)]

A bfloat16 is the top half of a float32: it is widened by shifting its bits up 16. The
softmax's exp vectorizes (cpu_exp.py: numba's own exp is a scalar call per element). The torch path
(`paged_attention.paged_decode_attention_ref`) is this kernel's oracle. An 8-bit (e4m3) cache is
read by its own kernel (fp8 or int8): each code widened to a float32 in the loop, each
position times its scale.
"""

from __future__ import annotations

import os
import threading

import numba
import numpy as np
import torch
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from scriba.kernels.compile_notice import compile_notice, compiles
from scriba.kernels.cpu_exp import softmax_weights
from scriba.kernels.cpu_f16_blocks import BLOCK, HEAD_DIM, block_scores, block_values
from scriba.kernels.kv8 import is_quantized
from scriba.kernels.paged_attention import check_paged_args

BLOCK_ELEMENTS = BLOCK * HEAD_DIM  # a block of one head's float16 keys or values


@intrinsic
def _as_float32(typingctx, x):
    """A cache element as a float32: a float32 as it is; a bfloat16 (its bits, a uint16) is the
    top half of a float32, widened by shifting its bits up 16 (vectorizes with the loop); a
    float16 comes as its bits in an int16 (numba has no float16 arrays)."""
    if x == types.float32:
        return types.float32(x), lambda context, builder, sig, args: args[0]
    if x == types.uint16:

        def widen(context, builder, sig, args):
            i32 = ir.IntType(32)
            bits = builder.shl(builder.zext(args[0], i32), ir.Constant(i32, 16))
            return builder.bitcast(bits, ir.FloatType())

        return types.float32(x), widen
    if x == types.int16:  # a float16 (its bits): widened by F16C's conversion

        def widen_half(context, builder, sig, args):
            return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

        return types.float32(x), widen_half
    if x == types.int8:  # an int8 code: its value (the scale is applied per position)
        return types.float32(x), lambda context, builder, sig, args: builder.sitofp(args[0], ir.FloatType())
    if x == types.uint8:  # an e4m3 code's bits (kv8.py never writes its NaN codes)
        return types.float32(x), _e4m3_to_float32
    return None


@intrinsic
def narrow(typingctx, x, like):
    """A float32 as a cache element of `like`'s type, rounded to nearest even as torch's `.to`:
    a float32 as it is; a bfloat16 (uint16 bits) its top half after adding half of the cut
    part (ties to even); a float16 (int16 bits) by LLVM's fptrunc (F16C). 8-bit codes need a
    scale (kv8.py): for them this is a plain conversion, so that a kernel's branch for float caches
    types over every cache, never what writes them."""
    if x != types.float32 or like not in (types.float32, types.uint16, types.int16, types.int8, types.uint8):
        return None

    def build(context, builder, sig, args):
        value = args[0]
        if like == types.float32:
            return value
        if like in (types.int8, types.uint8):
            return builder.fptosi(value, ir.IntType(8))
        if like == types.int16:
            return builder.bitcast(builder.fptrunc(value, ir.HalfType()), ir.IntType(16))
        i32 = ir.IntType(32)
        bits = builder.bitcast(value, i32)
        odd = builder.and_(builder.lshr(bits, ir.Constant(i32, 16)), ir.Constant(i32, 1))
        rounded = builder.add(bits, builder.add(ir.Constant(i32, 0x7FFF), odd))
        return builder.trunc(builder.lshr(rounded, ir.Constant(i32, 16)), ir.IntType(16))

    return like(x, like), build


def _e4m3_to_float32(context, builder, sig, args):
    """e4m3 bits s eeee mmm -> float32, branch-free (it vectorizes): placed in a float16's bits as
    s 0eeee mmm0000000, they read as the e4m3 value / 2^8 for normal and subnormal codes alike
    (the exponent bias 7 against 15), which a float16 -> float32 conversion (F16C) widens."""
    i16 = ir.IntType(16)
    bits = builder.zext(args[0], i16)
    sign = builder.shl(builder.and_(bits, ir.Constant(i16, 0x80)), ir.Constant(i16, 8))
    rest = builder.shl(builder.and_(bits, ir.Constant(i16, 0x7F)), ir.Constant(i16, 7))
    half = builder.bitcast(builder.or_(sign, rest), ir.HalfType())
    return builder.fmul(builder.fpext(half, ir.FloatType()), ir.Constant(ir.FloatType(), 256.0))


@numba.njit(fastmath=True, inline="always")
def _scores(query, k, table, n, block_size, scores):
    """scores[:n] = query . keys, the keys read block by block through `table`."""
    dim = query.shape[0]
    for b in range((n + block_size - 1) // block_size):
        block = k[table[b] * block_size :]
        for j in range(min(block_size, n - b * block_size)):
            acc = np.float32(0.0)
            for d in range(dim):
                acc += query[d] * _as_float32(block[j, d])
            scores[b * block_size + j] = acc


@numba.njit(fastmath=True, inline="always")
def _weighted_values(weights, v, table, n, block_size, acc):
    """acc += sum_t weights[t] * value t, the values read block by block through `table`."""
    dim = acc.shape[0]
    for b in range((n + block_size - 1) // block_size):
        block = v[table[b] * block_size :]
        for j in range(min(block_size, n - b * block_size)):
            w = weights[b * block_size + j]
            for d in range(dim):
                acc[d] += w * _as_float32(block[j, d])


@numba.njit(fastmath=True, inline="always")
def _attend_f16_blocks(query, k, v, table, n, scores, acc):
    """scores and values block by block (cpu_f16_blocks.py: a float16 cache, head size 64,
    blocks of 16); scores [>= 16 * blocks], acc [64] zeros; returns the softmax's total."""
    blocks = (n + BLOCK - 1) // BLOCK
    for b in range(blocks):
        block_scores(k, table[b] * BLOCK_ELEMENTS, query, scores, b * BLOCK)
    total = softmax_weights(scores, n)
    for b in range(blocks):
        count = min(BLOCK, n - b * BLOCK)
        block_values(v, table[b] * BLOCK_ELEMENTS, scores, b * BLOCK, acc, count)
    return total


@numba.njit(fastmath=True, inline="always")
def attend(q, k, v, tables, lengths, block_size, scale, out):
    """out[r, h] = softmax(scale * q[r, h] . K) V over each row's paged context, one task per
    (row, head): q, out [R, H, D] float32; k, v [H, slots, D] float32, or bfloat16 as its bits
    (uint16), or float16 as its bits (int16: blocks of 16 and head size 64 in LLVM IR, the rest
    here); tables [R, blocks] int32; lengths [R] int32. Inlined into a parallel kernel."""
    rows, heads, dim = q.shape
    rows_packed = k.strides[1] == v.strides[1] == HEAD_DIM * 2 and k.strides[2] == v.strides[2] == 2
    blocks = _halves(k) and dim == HEAD_DIM and block_size == BLOCK and rows_packed  # a head's block: 2 KB
    for task in numba.prange(rows * heads):
        r, h = task // heads, task % heads
        n = lengths[r]
        scores = np.empty((n + BLOCK - 1) // BLOCK * BLOCK, np.float32)
        query = q[r, h] * scale
        acc = np.zeros(dim, np.float32)
        if blocks:
            total = _attend_f16_blocks(query, k[h], v[h], tables[r], n, scores, acc)
        else:
            _scores(query, k[h], tables[r], n, block_size, scores)
            total = softmax_weights(scores, n)
            _weighted_values(scores, v[h], tables[r], n, block_size, acc)
        for d in range(dim):
            out[r, h, d] = acc[d] / total


def _halves(k) -> bool:
    """Typed by the overload below: whether k is a float16 cache (its bits, int16), known when
    the kernel compiles."""


@overload(_halves)
def _halves_for(k):
    is_half = k.dtype == types.int16
    return lambda k: is_half


@numba.njit(parallel=True, fastmath=True, cache=True)
def attention_kernel(q, k, v, tables, lengths, block_size, scale, out):
    attend(q, k, v, tables, lengths, block_size, scale, out)


@numba.njit(fastmath=True, inline="always")
def _scores_8bit(query, k, k_scales, h, table, n, block_size, scores):
    """_scores over an 8-bit cache: each key code widened to a float32 (_as_float32), each
    position's dot product times its scale (k_scales [slots, heads])."""
    dim = query.shape[0]
    for b in range((n + block_size - 1) // block_size):
        first = table[b] * block_size
        block = k[first:]
        for j in range(min(block_size, n - b * block_size)):
            acc = np.float32(0.0)
            for d in range(dim):
                acc += query[d] * _as_float32(block[j, d])
            scores[b * block_size + j] = acc * k_scales[first + j, h]


@numba.njit(fastmath=True, inline="always")
def _weighted_values_8bit(weights, v, v_scales, h, table, n, block_size, acc):
    dim = acc.shape[0]
    for b in range((n + block_size - 1) // block_size):
        first = table[b] * block_size
        block = v[first:]
        for j in range(min(block_size, n - b * block_size)):
            w = weights[b * block_size + j] * v_scales[first + j, h]
            for d in range(dim):
                acc[d] += w * _as_float32(block[j, d])


@numba.njit(fastmath=True, inline="always")
def attend_8bit(q, k, v, k_scales, v_scales, tables, lengths, block_size, scale, out):
    """attend over an 8-bit cache: k, v [H, slots, D] int8 codes, or e4m3 codes as their bits
    (uint8); k_scales, v_scales [slots, H] float32, each position's scale."""
    rows, heads, dim = q.shape
    for task in numba.prange(rows * heads):
        r, h = task // heads, task % heads
        n = lengths[r]
        scores = np.empty(n, np.float32)
        _scores_8bit(q[r, h] * scale, k[h], k_scales, h, tables[r], n, block_size, scores)
        total = softmax_weights(scores, n)
        acc = np.zeros(dim, np.float32)
        _weighted_values_8bit(scores, v[h], v_scales, h, tables[r], n, block_size, acc)
        for d in range(dim):
            out[r, h, d] = acc[d] / total


@numba.njit(parallel=True, fastmath=True, cache=True)
def attention_kernel_8bit(q, k, v, k_scales, v_scales, tables, lengths, block_size, scale, out):
    attend_8bit(q, k, v, k_scales, v_scales, tables, lengths, block_size, scale, out)


def paged_decode_attention_cpu(
    q: torch.Tensor,  # [seqs, heads, head_dim] float32
    kv_cache: torch.Tensor,  # [2, blocks, block_size, heads, head_dim] float32, bfloat16 or fp8, either order
    block_tables: torch.Tensor,  # [seqs, max_blocks] int
    seq_lens: torch.Tensor,  # [seqs] int, >= 1
    scale: float,
    kv_scales: torch.Tensor | None = None,  # [2, blocks, block_size, heads]: an 8-bit cache's scales
) -> torch.Tensor:  # [seqs, heads, head_dim] float32
    """What `paged_decode_attention_ref` computes, over a float32, bfloat16 or 8-bit (fp8 or
    int8, with its scales) cache, in float32."""
    check_paged_args(q, kv_cache, block_tables, seq_lens)
    if kv_cache.dtype not in CACHE_DTYPES or q.dtype != torch.float32 or q.device.type != "cpu":
        raise ValueError(
            "needs a CPU float32, float16, bfloat16, fp8 or int8 cache and float32 q, "
            f"got {kv_cache.dtype} and {q.dtype}"
        )
    if is_quantized(kv_cache.dtype) != (kv_scales is not None):
        raise ValueError("an 8-bit cache is read with its scales, and only an 8-bit cache has scales")
    out = torch.empty(q.shape)
    args = _kernel_args(q, kv_cache, block_tables, seq_lens, scale, out)
    # One launch at a time (engines on several threads): each already takes every core, and
    # numba's fallback pool, where there is no OpenMP, refuses launches from two threads at once.
    with _launches:
        _use_torch_threads()
        if kv_scales is None:
            attention_kernel(*args)
        else:
            q_np, k, v, *rest = args
            heads = kv_scales.shape[3]
            per_slot = [kv_scales[i].view(-1, heads).numpy() for i in (0, 1)]  # [slots, heads], views
            attention_kernel_8bit(q_np, k, v, *per_slot, *rest)
    return out


def launch(kernel, args: tuple) -> None:
    """Run a numba kernel of this package on torch's thread count, one launch at a time."""
    with _launches, compile_notice(compiles(kernel)):
        _use_torch_threads()
        kernel(*args)


def load_kernel(kv_cache: torch.Tensor, kv_scales: torch.Tensor | None = None) -> None:
    """Load (from numba's cache, else compile) the kernel that reads this cache, without running
    it: what a first decode step would do (0.3-0.4 s on a fresh process, most of it numba's own
    start), done ahead on another thread (engine/kernel_preload.py)."""
    heads, dim = kv_cache.shape[3:]
    q = torch.zeros(1, heads, dim)
    one = torch.ones(1, 1, dtype=torch.int32)
    args = _kernel_args(q, kv_cache, one, one[0], 1.0, torch.empty(q.shape))
    if kv_scales is None:
        attention_kernel.compile(tuple(numba.typeof(a) for a in args))
        return
    per_slot = [kv_scales[i].view(-1, kv_scales.shape[3]).numpy() for i in (0, 1)]
    args = (*args[:3], *per_slot, *args[3:])
    attention_kernel_8bit.compile(tuple(numba.typeof(a) for a in args))


def _kernel_args(q, kv_cache, block_tables, seq_lens, scale: float, out) -> tuple:
    """The kernel's arguments as numpy views of the tensors (no copies but q's and the ints')."""
    # [2, heads, slots, head_dim]: a view for both memory orders (new_kv_cache)
    cache = kv_cache.view(CACHE_DTYPES[kv_cache.dtype]).permute(0, 3, 1, 2, 4).flatten(2, 3).numpy()
    lengths = seq_lens.to(torch.int32).numpy()
    tables = block_tables.to(torch.int32).contiguous().numpy()
    block_size = kv_cache.shape[2]
    return (
        q.contiguous().numpy(),
        cache[0],
        cache[1],
        tables,
        lengths,
        block_size,
        np.float32(scale),
        out.numpy(),
    )


CACHE_DTYPES = {  # -> what numba reads
    torch.float32: torch.float32,
    torch.bfloat16: torch.uint16,
    torch.float16: torch.int16,
    torch.float8_e4m3fn: torch.uint8,
    torch.int8: torch.int8,
}


_launches = threading.Lock()
_threads_started = False
_thread_setting = threading.local()  # the thread count numba was last given on this thread


def _use_torch_threads() -> None:
    """numba's kernels run on as many threads as torch's ops. Its OpenMP pool is a second one
    beside torch's: its workers are started sleeping between kernels (OMP_WAIT_POLICY=PASSIVE,
    read when the pool starts; torch's own pool started earlier and keeps its setting), not
    spinning on the cores torch's next ops need."""
    global _threads_started
    if not _threads_started:
        before = os.environ.get("OMP_WAIT_POLICY")
        os.environ["OMP_WAIT_POLICY"] = before or "PASSIVE"
        try:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)  # starts the pool
        finally:
            if before is None:
                del os.environ["OMP_WAIT_POLICY"]
        _threads_started = True
    wanted = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    if getattr(_thread_setting, "threads", None) != wanted:  # numba's setting is per thread
        numba.set_num_threads(wanted)  # ~10 us: only when it changes
        _thread_setting.threads = wanted
