"""int8 x int8 matrix-vector products with AVX2's `vpmaddubsw`, for the numba decoder step on CPUs
without AVX-512 VNNI (AMD Zen 2 and 3, Intel before Ice Lake).

Why: there the step's products widen every weight code to float32 and multiply (three
instructions for 8 codes) and compute slower than they read. `vpmaddubsw` multiplies 32 unsigned
bytes by 32 signed bytes and adds neighbouring pairs into 16 int16 lanes; `vpmaddwd` against ones
adds those pairs into 8 int32 lanes: 32 codes in two instructions. numba (LLVM) does not emit them
from a plain loop, so the loop is written here in LLVM IR, as cpu_vnni.py's.

The int16 pair sums must not saturate: with the row's codes in [0, 127] (7 bits) and the weights'
in [-128, 127] a pair is at most 2 * 127 * 128 = 32,512 < 32,767, so every product is exact (the
reason fbgemm quantizes activations to 7 bits without VNNI: its `reduce_range`). The row is
quantized as cpu_vnni.quantize_rows does with 127 steps instead of 255 (zero included in its
range, s = (max - min) / 127, zero point z), and for weight row o (codes w, scale t_o):

    x . w_o ~= s * t_o * (sum_i q_i * w_oi  -  z * sum_i w_oi)

Input sizes must be multiples of 32. Only where the host has AVX2 (`HAS_AVX2`).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from scriba.kernels.cpu_features import cpu_flags
from scriba.kernels.cpu_vnni import CHUNK, declare, quantize_rows

LEVELS = 127  # the row's codes: 7 bits, so vpmaddubsw's int16 pair sums never saturate


def _host_has_avx2() -> bool:
    return bool(llvm.get_host_cpu_features().get("avx2")) and "avx2" in cpu_flags()


HAS_AVX2 = _host_has_avx2()


def fits(in_features: int) -> bool:
    """Whether products of this input width can run here."""
    return HAS_AVX2 and in_features % 32 == 0


@intrinsic
def _dot_u7s8(typingctx, a_address, b_address, blocks):
    """sum over blocks * 32 bytes of a[i] * b[i]: a uint8 in [0, 127], b int8, at the given
    addresses, in int32 (exact: each int16 pair sum is within 2 * 127 * 128)."""
    if not all(isinstance(t, types.Integer) for t in (a_address, b_address, blocks)):
        return None

    def build(context, builder, sig, args):
        a_address, b_address, blocks = (
            context.cast(builder, v, t, types.intp) for v, t in zip(args, sig.args)
        )
        i8, i16, i32, i64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
        bytes32, pairs, lanes = ir.VectorType(i8, 32), ir.VectorType(i16, 16), ir.VectorType(i32, 8)
        madd_bytes = declare(builder.module, "llvm.x86.avx2.pmadd.ub.sw", pairs, [bytes32, bytes32])
        madd_pairs = declare(builder.module, "llvm.x86.avx2.pmadd.wd", lanes, [pairs, pairs])
        reduce = declare(builder.module, "llvm.vector.reduce.add.v8i32", i32, [lanes])
        a = builder.inttoptr(a_address, bytes32.as_pointer())
        b = builder.inttoptr(b_address, bytes32.as_pointer())
        entry = builder.block
        loop, done = builder.append_basic_block("avx2.loop"), builder.append_basic_block("avx2.done")
        zero, ones = ir.Constant(lanes, [0] * 8), ir.Constant(pairs, [1] * 16)
        builder.cbranch(builder.icmp_signed(">", blocks, ir.Constant(i64, 0)), loop, done)
        builder.position_at_end(loop)
        index, acc = builder.phi(i64), builder.phi(lanes)
        va = builder.load(builder.gep(a, [index]), align=1)
        vb = builder.load(builder.gep(b, [index]), align=1)
        summed = builder.add(acc, builder.call(madd_pairs, [builder.call(madd_bytes, [va, vb]), ones]))
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


@numba.njit(fastmath=True, inline="always")
def _products(w, sums, scales, bias, x, out):
    """avx2_matvec's work: in parallel over chunks of output features where it is inlined into
    a parallel kernel, one after another elsewhere (prange is range there)."""
    rows, size = x.shape
    codes = np.empty((rows, size), np.uint8)
    row_scales, zero_points = np.empty(rows, np.float32), np.empty(rows, np.int32)
    quantize_rows(x, codes, row_scales, zero_points, LEVELS)
    blocks = size // 32
    n_out = w.shape[0]
    for c in numba.prange((n_out + CHUNK - 1) // CHUNK):
        for o in range(c * CHUNK, min(n_out, c * CHUNK + CHUNK)):
            row = w[o].ctypes.data
            for r in range(rows):
                total = _dot_u7s8(codes[r].ctypes.data, row, blocks) - zero_points[r] * sums[o]
                out[r, o] = np.float32(total) * row_scales[r] * scales[o] + bias[o]


@numba.njit(parallel=True, fastmath=True, cache=True)
def avx2_matvec(w, sums, scales, bias, x, out):
    """out [R, out] = (x @ w.T) * scales + bias as in cpu_decoder_step.int8_matvec, x quantized
    a row at a time to 7 bits: w [out, in] int8 (in a multiple of 32), sums [out] (code_sums)."""
    _products(w, sums, scales, bias, x, out)


@numba.njit(fastmath=True, cache=True)
def avx2_matvec_serial(w, sums, scales, bias, x, out):
    """avx2_matvec on the calling thread (small products: see cpu_vnni.vnni_matvec_serial)."""
    _products(w, sums, scales, bias, x, out)
