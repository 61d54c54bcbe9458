"""One cache block (16 positions) of decode attention over a float16 cache, in LLVM IR.

Why: numba compiles a position's 64-wide dot product q . k into vector products and then a
reduction across the vector's lanes, per position, and keeps the weighted sum of values in
memory between positions. Here a block of 16 positions is straight-line vector code: 16 partial
products, then one transposing reduction tree (15 pairs of shuffles and adds, not 16 reductions)
leaves the 16 scores in one vector; the values' 64 sums stay in registers over the block's
positions. Float16 is widened by F16C (`fpext`), as the numba kernels do. Only head size 64
(Whisper's and BART's), only a float16 cache (int16 bits): cpu_paged_attention's loops serve
the rest.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

BLOCK, HEAD_DIM = 16, 64
_F32, _I16, _I64 = ir.FloatType(), ir.IntType(16), ir.IntType(64)
_VEC = ir.VectorType(_F32, 16)
_HALVES = ir.VectorType(ir.HalfType(), 16)


def _fma(builder):
    module = builder.module
    fn = module.globals.get("llvm.fma.v16f32")
    return fn if fn is not None else ir.Function(module, ir.FunctionType(_VEC, [_VEC] * 3), "llvm.fma.v16f32")


def _address(builder, value, offset_bytes: int):
    return builder.add(value, ir.Constant(_I64, offset_bytes))


def _load_floats(builder, address, offset_bytes: int):
    """16 float32 at address + offset."""
    pointer = builder.inttoptr(_address(builder, address, offset_bytes), _VEC.as_pointer())
    return builder.load(pointer, align=4)


def _load_halves(builder, address, offset_bytes: int):
    """16 float16 (their bits) at address + offset, widened to float32."""
    pointer = builder.inttoptr(_address(builder, address, offset_bytes), ir.VectorType(_I16, 16).as_pointer())
    return builder.fpext(builder.bitcast(builder.load(pointer, align=2), _HALVES), _VEC)


def _pair_sums(builder, a, b, step: int):
    """Lane i: a's pair sum (lanes i, i + step) where bit `step` of i is clear, else b's (lanes
    i - step, i): one level of the transposing reduction tree."""
    first = [i if not i & step else 16 + i - step for i in range(16)]
    second = [i + step if not i & step else 16 + i for i in range(16)]
    mask = lambda m: ir.Constant(ir.VectorType(ir.IntType(32), 16), m)  # noqa: E731
    return builder.fadd(builder.shuffle_vector(a, b, mask(first)), builder.shuffle_vector(a, b, mask(second)))


def _typed_addresses(*ts) -> bool:
    return all(isinstance(t, types.Integer) for t in ts)


@intrinsic
def block_scores(typingctx, keys, query, out):
    """out[j] = query . key j for the block's 16 keys: keys the address of [16, 64] float16 bits
    (a block of one head), query of 64 float32, out of 16 float32 (all 16 written: keys past a
    sequence's length give scores its caller ignores)."""
    if not _typed_addresses(keys, query, out):
        return None

    def build(context, builder, sig, args):
        keys, query, out = (context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args))
        fma = _fma(builder)
        q = [_load_floats(builder, query, 64 * c) for c in range(4)]
        partial = []
        for j in range(BLOCK):
            row = j * HEAD_DIM * 2
            acc = builder.fmul(q[0], _load_halves(builder, keys, row))
            for c in range(1, 4):
                acc = builder.call(fma, [q[c], _load_halves(builder, keys, row + 32 * c), acc])
            partial.append(acc)
        step = 1
        while len(partial) > 1:
            partial = [_pair_sums(builder, a, b, step) for a, b in zip(partial[::2], partial[1::2])]
            step *= 2
        builder.store(partial[0], builder.inttoptr(out, _VEC.as_pointer()), align=4)
        return context.get_dummy_value()

    return types.none(keys, query, out), build


@intrinsic
def block_values(typingctx, values, weights, acc, count):
    """acc[:64] += sum over j < count of weights[j] * value j: values the address of [16, 64]
    float16 bits (a block of one head), weights of float32, acc of 64 float32."""
    if not _typed_addresses(values, weights, acc, count):
        return None

    def build(context, builder, sig, args):
        values, weights, acc, count = (
            context.cast(builder, v, t, types.int64) for v, t in zip(args, sig.args)
        )
        fma = _fma(builder)
        sums = [_load_floats(builder, acc, 64 * c) for c in range(4)]
        entry = builder.block
        loop, done = builder.append_basic_block("values.loop"), builder.append_basic_block("values.done")
        builder.cbranch(builder.icmp_signed(">", count, ir.Constant(_I64, 0)), loop, done)
        builder.position_at_end(loop)
        j = builder.phi(_I64)
        running = [builder.phi(_VEC) for _ in range(4)]
        weight_at = builder.inttoptr(
            builder.add(weights, builder.mul(j, ir.Constant(_I64, 4))), _F32.as_pointer()
        )
        weight = builder.load(weight_at, align=4)
        splat = builder.insert_element(
            ir.Constant(_VEC, ir.Undefined), weight, ir.Constant(ir.IntType(32), 0)
        )
        splat = builder.shuffle_vector(splat, splat, ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16))
        row = builder.add(values, builder.mul(j, ir.Constant(_I64, HEAD_DIM * 2)))
        updated = [
            builder.call(fma, [splat, _load_halves(builder, row, 32 * c), running[c]]) for c in range(4)
        ]
        following = builder.add(j, ir.Constant(_I64, 1))
        j.add_incoming(ir.Constant(_I64, 0), entry)
        j.add_incoming(following, loop)
        for c in range(4):
            running[c].add_incoming(sums[c], entry)
            running[c].add_incoming(updated[c], loop)
        builder.cbranch(builder.icmp_signed("<", following, count), loop, done)
        builder.position_at_end(done)
        finals = [builder.phi(_VEC) for _ in range(4)]  # phis first: they head the block
        for c, final in enumerate(finals):
            final.add_incoming(sums[c], entry)
            final.add_incoming(updated[c], loop)
        for c, final in enumerate(finals):
            builder.store(final, builder.inttoptr(_address(builder, acc, 64 * c), _VEC.as_pointer()), align=4)
        return context.get_dummy_value()

    return types.none(values, weights, acc, count), build
