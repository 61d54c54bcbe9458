"""The quantized KV caches (kernels/kv8.py: fp8 e4m3, int8 or packed 4-bit codes, a scale per
cached vector) and every reader and writer of it, against the torch reference: the numba CPU
kernel, and the Triton decode and write kernels (on CUDA, else in Triton's interpreter,
conftest.py). Oracle for the reference itself: the float32 values written, within the code's
rounding, and dense float attention over what was kept."""

import random

import pytest
import torch

from scriba.kernels.cpu_paged_attention import paged_decode_attention_cpu
from scriba.kernels.kv8 import (
    FP8,
    PACKED4,
    dequantized,
    new_kv_scales,
    pack4,
    packed_view,
    quantize,
    unpack4,
    write_kv_cache_8bit_ref,
)
from scriba.kernels.kv_cache import copy_blocks, new_kv_cache, swap_blocks, write_kv_cache_triton
from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK_SIZE, HEADS, DIM = 16, 3, 64
DTYPES = [FP8, torch.int8, PACKED4]
# the largest error of a kept value, relative to its vector's largest |value|: half a code step
# (e4m3: 3 mantissa bits, 1/16 of the value's binade; int8: 1/254 of the largest; 4-bit: 1/14)
BOUND = {FP8: 1 / 16, torch.int8: 1 / 254 + 1e-6, PACKED4: 1 / 14 + 1e-6}


def filled_cache(dtype, lengths, seed, head_major=False, device="cpu"):
    """Contexts written into shuffled blocks: (cache, scales, block tables, lengths, the float32
    values written [per sequence])."""
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    need = [-(-n // BLOCK_SIZE) for n in lengths]
    physical = list(range(sum(need) + 5))
    rng.shuffle(physical)
    cache = new_kv_cache(
        len(physical), BLOCK_SIZE, HEADS, DIM, head_major=head_major, dtype=dtype, device=device
    )
    scales = new_kv_scales(len(physical), BLOCK_SIZE, HEADS, device)
    tables, values = [], []
    for n, blocks in zip(lengths, need):
        table, physical = physical[:blocks], physical[blocks:]
        # heads of very different sizes, as K and V are: each vector's scale fits it
        k = torch.randn(n, HEADS, DIM, generator=gen) * torch.tensor([0.01, 1.0, 300.0])[None, :, None]
        v = torch.randn(n, HEADS, DIM, generator=gen) * torch.tensor([50.0, 0.2, 3.0])[None, :, None]
        slots = torch.tensor([table[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE for p in range(n)])
        write_kv_cache_8bit_ref(k.to(device), v.to(device), cache, scales, slots.to(device))
        tables.append(table + [0] * (max(need) - blocks))
        values.append((k, v))
    as_tensor = lambda x: torch.tensor(x, dtype=torch.int32, device=device)  # noqa: E731
    return cache, scales, as_tensor(tables), as_tensor(lengths), values


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_each_vector_is_kept_to_its_codes_precision(dtype):
    cache, scales, tables, lengths, values = filled_cache(dtype, [40, 1500, 7], seed=0)
    for table, n, (k, v) in zip(tables, lengths.tolist(), values):
        blocks = table[: -(-n // BLOCK_SIZE)].long()
        back = dequantized(cache[:, blocks], scales[:, blocks]).flatten(1, 2)[:, :n]
        for written, read in ((k, back[0]), (v, back[1])):
            err = (read - written).abs() / written.abs().amax(-1, keepdim=True)
            assert err.max() <= BOUND[dtype], err.max()
    codes, scale = quantize(torch.zeros(2, 4), dtype)  # a vector of zeros: zeros, a positive scale
    assert codes.float().abs().sum() == 0 and (scale > 0).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("head_major", [True, False])
def test_decode_readers_agree_with_dense_float_attention(dtype, head_major):
    cache, scales, tables, lengths, _ = filled_cache(dtype, [1500, 33, 1], seed=1, head_major=head_major)
    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(1))
    ref = paged_decode_attention_ref(q, cache, tables, lengths, 0.125, kv_scales=scales)
    for row, n in enumerate(lengths.tolist()):
        blocks = tables[row, : -(-n // BLOCK_SIZE)].long()
        kv = dequantized(cache[:, blocks], scales[:, blocks]).flatten(1, 2)[:, :n]  # what was kept
        dense = torch.softmax(torch.einsum("hd,thd->ht", q[row] * 0.125, kv[0]), -1)
        torch.testing.assert_close(ref[row], torch.einsum("ht,thd->hd", dense, kv[1]), atol=1e-3, rtol=1e-3)
    if dtype == PACKED4:  # the numba kernel reads 8-bit caches only (the engine picks torch)
        with pytest.raises(ValueError, match="fp8 or int8 cache"):
            paged_decode_attention_cpu(q, cache, tables, lengths, 0.125, kv_scales=scales)
        return
    cpu = paged_decode_attention_cpu(q, cache, tables, lengths, 0.125, kv_scales=scales)
    torch.testing.assert_close(cpu, ref, atol=5e-4, rtol=1e-3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("splits", [1, 4])
@pytest.mark.parametrize("heads_first", [False, True], ids=["seqs_first", "heads_first"])
def test_the_triton_decode_kernel_reads_8bit_as_the_reference(dtype, splits, heads_first):
    cache, scales, tables, lengths, _ = filled_cache(dtype, [700, 16, 90], seed=2, device=DEVICE)
    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    ref = paged_decode_attention_ref(q, cache, tables, lengths, 0.125, kv_scales=scales)
    got = paged_decode_attention_triton(
        q,
        cache,
        tables,
        lengths,
        0.125,
        num_splits=splits,
        kv_scales=scales,
        launch=dict(heads_first=heads_first),
    )
    # float32 sums in another order, over keys up to ~1,000 (a head's scores up to ~1e4)
    torch.testing.assert_close(got, ref, atol=5e-4, rtol=1e-3)
    with pytest.raises(ValueError, match="quantized cache is read with its scales"):
        paged_decode_attention_triton(q, cache, tables, lengths, 0.125)


@pytest.mark.parametrize("dtype", [FP8, torch.int8, torch.float32], ids=str)
@pytest.mark.parametrize("splits", [1, 4])
def test_the_decode_in_two_passes_reads_as_one_pass(dtype, splits):
    """LAUNCH's `two_pass` over an 8-bit or a float cache (paged_attention_two_pass.py): the span's
    scores kept, their max, then V with no rescale: the reference's attention, and the one-pass
    kernel's within float32's sums in another order."""
    cache, scales, tables, lengths, _ = filled_cache(
        torch.int8 if dtype == torch.float32 else dtype, [700, 16, 90], seed=4, device=DEVICE
    )
    if dtype == torch.float32:  # the same values as floats, read with no scales
        cache, scales = dequantized(cache, scales), None
    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(4)).to(DEVICE)
    one, two = (
        paged_decode_attention_triton(
            q, cache, tables, lengths, 0.125, num_splits=splits, kv_scales=scales, launch=dict(two_pass=on)
        )
        for on in (False, True)
    )
    torch.testing.assert_close(two, one, atol=5e-4, rtol=1e-3)
    assert not torch.equal(two, one)  # (the two-pass kernel ran: its sums' order shows)
    ref = paged_decode_attention_ref(q, cache, tables, lengths, 0.125, kv_scales=scales)
    torch.testing.assert_close(two, ref, atol=5e-4, rtol=1e-3)


@pytest.mark.parametrize("splits", [1, 4])
@pytest.mark.parametrize("int_scores", [False, True], ids=["float_scores", "int_scores"])
def test_the_4bit_decode_in_two_passes_reads_as_one_pass(splits, int_scores):
    """LAUNCH's `two_pass` over a 4-bit cache: the span's scores kept, their max, then V with no
    rescale: the one-pass kernel's attention within float32's sums in another order (contexts of
    700, 16 and 90 positions: with 4 splits, some empty)."""
    cache, scales, tables, lengths, _ = filled_cache(PACKED4, [700, 16, 90], seed=3, device=DEVICE)
    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    one, two = (
        paged_decode_attention_triton(
            q,
            cache,
            tables,
            lengths,
            0.125,
            num_splits=splits,
            kv_scales=scales,
            launch=dict(int_scores=int_scores, two_pass=two_pass),
        )  # fmt: skip
        for two_pass in (False, True)
    )
    torch.testing.assert_close(two, one, atol=5e-4, rtol=1e-3)
    assert not torch.equal(two, one)  # (the two-pass kernel ran: its sums' order shows)
    ref = paged_decode_attention_ref(q, cache, tables, lengths, 0.125, kv_scales=scales)
    torch.testing.assert_close(two, ref, atol=1e-2 if int_scores else 5e-4, rtol=1e-2 if int_scores else 1e-3)


@pytest.mark.parametrize("splits", [1, 4])
def test_the_4bit_decode_with_integer_scores_reads_as_the_reference(splits):
    """LAUNCH's `int_scores` over a 4-bit cache: q as int8 codes (a step per vector) against K's
    4-bit codes, summed exactly in int32 (dp4a on a GPU). Its only error is q's rounding: half a
    step of 1/127 of q's largest |value| per element."""
    cache, scales, tables, lengths, _ = filled_cache(PACKED4, [700, 16, 90], seed=2, device=DEVICE)

    def decode(query, reference=False, **launch):
        if reference:
            return paged_decode_attention_ref(query, cache, tables, lengths, 0.125, kv_scales=scales)
        return paged_decode_attention_triton(
            query, cache, tables, lengths, 0.125, num_splits=splits, kv_scales=scales, launch=launch
        )

    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    ints = decode(q, int_scores=True)
    # the same attention to q's rounding: measured 2.3e-3 at most (outputs ~2.5, up to 28)
    torch.testing.assert_close(ints, decode(q, reference=True), atol=1e-2, rtol=1e-2)
    assert not torch.equal(ints, decode(q))  # (the integer path ran: q's rounding shows)
    # q exactly on its int8 grid: the integer scores are the float ones
    step = q.abs().amax(-1, keepdim=True) / 127
    on_grid = (q / step).round() * step
    torch.testing.assert_close(
        decode(on_grid, int_scores=True), decode(on_grid, reference=True), atol=5e-4, rtol=1e-3
    )


# Values at the codes' rounding edges, each vector's largest |value| exactly the largest code so its
# scale is 1 and the values reach the rounding as they are: e4m3 ties (1.0625 -> 1, 1.1875 ->
# 1.25), a carry into the exponent (1.9375 -> 2), subnormal ties (2**-10 -> 0, 3 * 2**-10 -> 2**-8,
# 15 * 2**-10 -> 2**-6, the smallest normal); int8 ties (2.5 -> 2, 3.5 -> 4, -2.5 -> -2).
EDGES = {
    FP8: [448.0, 1.0625, 1.1875, 1.9375, 2**-10, 3 * 2**-10, 15 * 2**-10, -1.0625, -(2**-12), 0.0, 300.0],
    torch.int8: [127.0, 2.5, 3.5, -2.5, 0.5, 1.5, -0.5, 126.5, -127.0, 0.0, 0.49],
    PACKED4: [7.0, 2.5, 3.5, -2.5, 0.5, 1.5, -0.5, 6.5, -7.0, 0.0, 0.49],
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_triton_write_kernel_rounds_ties_as_torch(dtype):
    """The codes the one-kernel write computes from the bits (kv8_triton.py) at every rounding
    edge: the same bytes as torch's conversions (round to nearest even), scales exactly 1."""
    edges = torch.tensor(EDGES[dtype])
    k = edges.repeat(HEADS * 8)[: HEADS * DIM].view(1, HEADS, DIM).clone()
    k[:, :, 0] = edges[0]  # every head's largest value: its scale is 1
    v = -k
    ref_cache, ref_scales = new_kv_cache(2, 4, HEADS, DIM, dtype=dtype), new_kv_scales(2, 4, HEADS)
    got_cache = new_kv_cache(2, 4, HEADS, DIM, dtype=dtype, device=DEVICE)
    got_scales = new_kv_scales(2, 4, HEADS, DEVICE)
    write_kv_cache_8bit_ref(k, v, ref_cache, ref_scales, torch.tensor([5]))
    write_kv_cache_triton(
        k.to(DEVICE), v.to(DEVICE), got_cache, torch.tensor([5], device=DEVICE), scales=got_scales
    )
    assert torch.equal(ref_scales[:, 1, 1], torch.ones(2, HEADS))
    assert torch.equal(got_cache.view(torch.uint8).cpu(), ref_cache.view(torch.uint8))
    assert torch.equal(got_scales.cpu(), ref_scales)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_triton_write_kernel_writes_as_the_reference(dtype):
    """The same codes and scales, padding slots (-1, CUDA-graph batches) skipped."""
    ref_cache, ref_scales = new_kv_cache(12, 4, HEADS, DIM, dtype=dtype), new_kv_scales(12, 4, HEADS)
    got_cache = new_kv_cache(12, 4, HEADS, DIM, dtype=dtype, device=DEVICE)
    got_scales = new_kv_scales(12, 4, HEADS, DEVICE)
    k, v = torch.randn(6, HEADS, DIM) * 200, torch.randn(6, HEADS, DIM) * 0.001
    slots = torch.tensor([20, 21, 13, 0, 47, -1])
    write_kv_cache_8bit_ref(k[:5], v[:5], ref_cache, ref_scales, slots[:5])
    write_kv_cache_triton(k.to(DEVICE), v.to(DEVICE), got_cache, slots.to(DEVICE), scales=got_scales)
    assert torch.equal(got_cache.view(torch.uint8).cpu(), ref_cache.view(torch.uint8))
    # a GPU's float division may round the last bit otherwise (seen on an H200): a few ulps
    torch.testing.assert_close(got_scales.cpu(), ref_scales, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_copies_and_swaps_carry_the_scales(dtype):
    cache, scales, tables, _, _ = filled_cache(dtype, [40], seed=3)
    block = int(tables[0, 1])
    copy_blocks([cache, scales], [(block, 0)])
    assert torch.equal(cache[:, 0].view(torch.uint8), cache[:, block].view(torch.uint8))
    assert torch.equal(scales[:, 0], scales[:, block])
    host, host_scales = (
        new_kv_cache(3, BLOCK_SIZE, HEADS, DIM, dtype=dtype),
        new_kv_scales(3, BLOCK_SIZE, HEADS),
    )
    swap_blocks([cache, scales], [host, host_scales], [(block, 2)])
    moved = dequantized(host[:, 2:3], host_scales[:, 2:3])
    assert torch.equal(moved, dequantized(cache[:, block : block + 1], scales[:, block : block + 1]))


def test_4bit_codes_pack_two_halves_a_byte():
    """pack4 puts a vector's first half in the low nibbles and its second in the high ones (what
    the Triton kernels unpack), each code + 8; unpack4 inverts it for every code."""
    codes = torch.tensor([[-7, 0, 3, 7, -1, 2, -7, 5]], dtype=torch.int8)
    packed = pack4(codes)
    assert packed.dtype == PACKED4 and packed.shape == (1, 4)
    assert packed[0].tolist() == [(-7 + 8) | ((-1 + 8) << 4), 8 | (10 << 4), 11 | (1 << 4), 15 | (13 << 4)]
    every = torch.arange(-7, 8, dtype=torch.int8).repeat(2)[None, :]
    assert torch.equal(unpack4(pack4(every)), every)
    with pytest.raises(ValueError, match="head_dim must be even"):
        new_kv_cache(2, 4, HEADS, 63, dtype=PACKED4)


@pytest.mark.parametrize("head_major", [False, True], ids=["block-major", "head-major"])
def test_4bit_view_is_each_blocks_first_half(head_major):
    """packed_view's bytes of a block are the first half of that block's contiguous bytes (per head
    where the cache is head-major): a reader streams them, with no gaps to fetch."""
    cache = new_kv_cache(3, BLOCK_SIZE, HEADS, DIM, head_major=head_major, dtype=torch.int8)
    flat = cache.permute(0, 3, 1, 2, 4) if head_major else cache  # block contiguous in its last dims
    flat.view(torch.uint8).copy_(torch.arange(flat.numel()).remainder(251).view(flat.shape))
    view = packed_view(cache)
    assert view.shape == (2, 3, BLOCK_SIZE, HEADS, DIM // 2)
    for kv, block in ((0, 0), (0, 2), (1, 1)):
        for head in range(HEADS) if head_major else [None]:
            whole = (cache[kv, block, :, head] if head_major else cache[kv, block]).view(torch.uint8)
            got = view[kv, block, :, head] if head_major else view[kv, block]
            assert torch.equal(got.flatten(), whole.flatten()[: whole.numel() // 2])


def test_4bit_codes_in_the_first_half_of_an_int8_cache():
    """kv_cache_dtype="int4"'s cross-attention cache: kv8.packed_view of an int8 cache (strided: each
    block's first half of bytes). The Triton write and decode kernels take it as the torch
    reference does, and the int8 codes of other slots (the self K/V) are left alone."""
    int8_cache = new_kv_cache(8, BLOCK_SIZE, HEADS, DIM, dtype=torch.int8, device=DEVICE)
    ref_int8 = int8_cache.clone()
    got_scales, ref_scales = (
        new_kv_scales(8, BLOCK_SIZE, HEADS, DEVICE),
        new_kv_scales(8, BLOCK_SIZE, HEADS, DEVICE),
    )
    gen = torch.Generator().manual_seed(5)
    k, v = (torch.randn(40, HEADS, DIM, generator=gen).to(DEVICE) for _ in range(2))
    slots = torch.randperm(8 * BLOCK_SIZE, generator=gen)[:40].to(DEVICE)
    self_k = torch.randn(3, HEADS, DIM, generator=gen).to(DEVICE)  # int8 codes at slots of their own
    self_slots = torch.tensor(
        [s for s in range(8 * BLOCK_SIZE) if s not in slots.tolist()][:3], device=DEVICE
    )
    for cache, scales in ((int8_cache, got_scales), (ref_int8, ref_scales)):
        write_kv_cache_8bit_ref(self_k, self_k, cache, scales, self_slots)
    write_kv_cache_triton(k, v, packed_view(int8_cache), slots, scales=got_scales)
    write_kv_cache_8bit_ref(k, v, packed_view(ref_int8), ref_scales, slots)
    assert torch.equal(int8_cache.cpu(), ref_int8.cpu())
    torch.testing.assert_close(got_scales, ref_scales, rtol=1e-6, atol=0)
    tables = torch.arange(8, dtype=torch.int32, device=DEVICE)[None, :]  # every block, in order
    lengths = torch.tensor([8 * BLOCK_SIZE], dtype=torch.int32, device=DEVICE)
    q = torch.randn(1, HEADS, DIM, generator=gen).to(DEVICE)
    view = packed_view(int8_cache)
    ref = paged_decode_attention_ref(q, view, tables, lengths, 0.125, kv_scales=got_scales)
    got = paged_decode_attention_triton(q, view, tables, lengths, 0.125, num_splits=2, kv_scales=got_scales)
    torch.testing.assert_close(got, ref, atol=5e-4, rtol=1e-3)
