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


def _address_of(context, builder, array_type, array, first):
    """The address (int64) of element `first` of a C-contiguous array (its flat index)."""
    data = context.make_array(array_type)(context, builder, array).data
    itemsize = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
    offset = builder.mul(first, ir.Constant(_I64, itemsize))
    return builder.add(builder.ptrtoint(data, _I64), offset)


def _arrays(*ts) -> bool:
    """Arrays of any dtype: the callers' kernels are typed for every cache dtype and call these
    for a float16 one only (its bits, int16)."""
    return all(isinstance(t, types.Array) for t in ts)


# The intrinsics take the arrays themselves, never their addresses: numba keeps an array it
# passes alive through the call, while an address taken earlier (`a.ctypes.data`) lets it free
# a temporary array after that line, and a parallel task's next allocation reuses the memory
# while this code still reads it (wrong outputs under load, seen before this was done so).
@intrinsic
def block_scores(typingctx, keys, key_first, query, out, out_first):
    """out[out_first + j] = query . key j for the block's 16 keys, which start at flat element
    `key_first` of `keys` (float16 bits, int16, C-contiguous, rows of 64: a block of one head);
    query: 64 float32; out: float32 (all 16 written: keys past a sequence's length give scores
    its caller ignores)."""
    if not _arrays(keys, query, out):
        return None
    if not all(isinstance(t, types.Integer) for t in (key_first, out_first)):
        return None

    def build(context, builder, sig, args):
        firsts = [context.cast(builder, args[i], sig.args[i], types.int64) for i in (1, 4)]
        keys = _address_of(context, builder, sig.args[0], args[0], firsts[0])
        query = _address_of(context, builder, sig.args[2], args[2], ir.Constant(_I64, 0))
        out = _address_of(context, builder, sig.args[3], args[3], firsts[1])
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

    return types.none(keys, key_first, query, out, out_first), build


@intrinsic
def block_values(typingctx, values, value_first, weights, weight_first, acc, count):
    """acc[:64] += sum over j < count of weights[weight_first + j] * value j, the values a
    block of one head starting at flat element `value_first` of `values` (float16 bits, int16,
    C-contiguous, rows of 64); weights and acc: float32."""
    if not _arrays(values, weights, acc):
        return None
    if not all(isinstance(t, types.Integer) for t in (value_first, weight_first, count)):
        return None

    def build(context, builder, sig, args):
        value_first, weight_first, count = (
            context.cast(builder, args[i], sig.args[i], types.int64) for i in (1, 3, 5)
        )
        values = _address_of(context, builder, sig.args[0], args[0], value_first)
        weights = _address_of(context, builder, sig.args[2], args[2], weight_first)
        acc = _address_of(context, builder, sig.args[4], args[4], ir.Constant(_I64, 0))
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

    return types.none(values, value_first, weights, weight_first, acc, count), build
