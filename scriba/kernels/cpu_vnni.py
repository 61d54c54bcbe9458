"""int8 x int8 matrix-vector products with AVX-512 VNNI's `vpdpbusd`, for the numba decoder step.

Why: a decode step's products are one row (or a few) times int8 weights. Widening every code to
float32 and multiplying costs three instructions a 16 codes, and the step computes slower than it
reads (tiny.en's logits: ~13 GB/s of codes from memory). `vpdpbusd` multiplies 64 unsigned bytes
by 64 signed bytes and sums them in fours into 16 int32 lanes, one instruction; numba (LLVM) does
not emit it from a plain loop, so the loop is written here in LLVM IR. The same logits: ~23 GB/s
from memory, 50 from the cache.

The row x is quantized first, as fbgemm's dynamic int8 layers do: unsigned bytes over the row's
range (zero included), s = (max - min) / 255, zero point z = round(-min / s), codes
q = round(x / s) + z in [0, 255] (`vpdpbusd` wants one operand unsigned). Then for weight row o
(codes w, scale t_o):

    x . w_o ~= s * t_o * (sum_i q_i * w_oi  -  z * sum_i w_oi)

the weight rows' sums precomputed (`code_sums`). Input sizes must be multiples of 64 (every
Whisper and BART width is).

Only where the host has AVX-512 VNNI (Zen 4, Intel since Ice Lake); `HAS_VNNI` says so, and the
caller keeps the float32 products elsewhere: the instruction is not even compiled there.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from scriba.kernels.cpu_features import cpu_flags

CHUNK = 32  # output features per task of a product (here and models/decoder_step/kernel.py's): 32 weight rows


def _host_has_vnni() -> bool:
    features = llvm.get_host_cpu_features()
    wanted = features.get("avx512vnni") and features.get("avx512f") and features.get("avx512bw")
    return bool(wanted) and {"avx512_vnni", "avx512f", "avx512bw"} <= cpu_flags()  # unless capped


HAS_VNNI = _host_has_vnni()


def fits(in_features: int) -> bool:
    """Whether products of this input width can run here."""
    return HAS_VNNI and in_features % 64 == 0


def code_sums(weights: np.ndarray) -> np.ndarray:
    """[..., out, in] int8 codes -> [..., out] int32: each row's sum."""
    return weights.astype(np.int32).sum(axis=-1, dtype=np.int32)


def _declare(module, name: str, ret, params):
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, ir.FunctionType(ret, params), name)


@intrinsic
def _dot_u8s8(typingctx, a_address, b_address, blocks):
    """sum over blocks * 64 bytes of a[i] * b[i]: a uint8, b int8, at the given addresses, in
    int32 (exact: |sum| <= 255 * 128 * width fits for widths up to 65,000)."""
    if not all(isinstance(t, types.Integer) for t in (a_address, b_address, blocks)):
        return None

    def build(context, builder, sig, args):
        a_address, b_address, blocks = (
            context.cast(builder, v, t, types.intp) for v, t in zip(args, sig.args)
        )
        i32, i64 = ir.IntType(32), ir.IntType(64)
        lanes = ir.VectorType(i32, 16)
        dot = _declare(builder.module, "llvm.x86.avx512.vpdpbusd.512", lanes, [lanes] * 3)
        reduce = _declare(builder.module, "llvm.vector.reduce.add.v16i32", i32, [lanes])
        a = builder.inttoptr(a_address, lanes.as_pointer())
        b = builder.inttoptr(b_address, lanes.as_pointer())
        entry = builder.block
        loop, done = builder.append_basic_block("vnni.loop"), builder.append_basic_block("vnni.done")
        zero = ir.Constant(lanes, [0] * 16)
        builder.cbranch(builder.icmp_signed(">", blocks, ir.Constant(i64, 0)), loop, done)
        builder.position_at_end(loop)
        index, acc = builder.phi(i64), builder.phi(lanes)
        va = builder.load(builder.gep(a, [index]), align=1)
        vb = builder.load(builder.gep(b, [index]), align=1)
        summed = builder.call(dot, [acc, va, vb])
        following = builder.add(index, ir.Constant(i64, 1))
        index.add_incoming(ir.Constant(i64, 0), entry)
        index.add_incoming(following, loop)
        acc.add_incoming(zero, entry)
        acc.add_incoming(summed, loop)
        builder.cbranch(builder.icmp_signed("<", following, blocks), loop, done)
        builder.position_at_end(done)
        final = builder.phi(lanes)
        final.add_incoming(zero, entry)
        final.add_incoming(summed, loop)
        return builder.call(reduce, [final])

    return types.int32(a_address, b_address, blocks), build


@numba.njit(fastmath=True)
def quantize_rows(x, codes, row_scales, zero_points):
    """x [R, in] float32 -> codes [R, in] uint8 (round(x / s) + z), row_scales [R] float32 (s =
    (max - min) / 255 of each row, zero included in its range), zero_points [R] int32 (z)."""
    rows, size = x.shape
    for r in range(rows):
        low, high = np.float32(0.0), np.float32(0.0)
        for i in range(size):
            low, high = min(low, x[r, i]), max(high, x[r, i])
        s = max((high - low) / np.float32(255.0), np.float32(1e-30))
        z = min(max(np.int32(np.round(-low / s)), 0), 255)
        row_scales[r], zero_points[r] = s, z
        inverse = np.float32(1.0) / s
        for i in range(size):
            codes[r, i] = np.uint8(min(max(np.int32(np.round(x[r, i] * inverse)) + z, 0), 255))


@numba.njit(fastmath=True, inline="always")
def _products(w, sums, scales, bias, x, out):
    """vnni_matvec's work: in parallel over chunks of output features where it is inlined into
    a parallel kernel, one after another elsewhere (prange is range there)."""
    rows, size = x.shape
    codes = np.empty((rows, size), np.uint8)
    row_scales, zero_points = np.empty(rows, np.float32), np.empty(rows, np.int32)
    quantize_rows(x, codes, row_scales, zero_points)
    blocks = size // 64
    n_out = w.shape[0]
    for c in numba.prange((n_out + CHUNK - 1) // CHUNK):
        for o in range(c * CHUNK, min(n_out, c * CHUNK + CHUNK)):
            row = w[o].ctypes.data
            for r in range(rows):
                total = _dot_u8s8(codes[r].ctypes.data, row, blocks) - zero_points[r] * sums[o]
                out[r, o] = np.float32(total) * row_scales[r] * scales[o] + bias[o]


@numba.njit(parallel=True, fastmath=True, cache=True)
def vnni_matvec(w, sums, scales, bias, x, out):
    """out [R, out] = (x @ w.T) * scales + bias as in models/decoder_step/kernel.int8_matvec, x quantized
    a row at a time: w [out, in] int8 (in a multiple of 64), sums [out] int32 (code_sums)."""
    _products(w, sums, scales, bias, x, out)


@numba.njit(fastmath=True, cache=True)
def vnni_matvec_serial(w, sums, scales, bias, x, out):
    """vnni_matvec on the calling thread: for a small product a parallel launch costs more than
    it saves (tiny.en's 384 x 384: ~4 us of work, ~8 us to start and join the pool)."""
    _products(w, sums, scales, bias, x, out)
