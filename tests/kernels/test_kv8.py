"""The quantized KV caches (kernels/kv8.py: fp8 e4m3 or int8 codes, a scale per cached
vector) and every reader and writer of it, against the torch reference: the numba CPU
kernel, and the Triton decode and write kernels (on CUDA, else in Triton's interpreter,
conftest.py). Oracle for the reference itself: the float32 values written, within the code's
rounding, and dense float attention over what was kept."""

import random

import pytest
import torch

from scriba.engine.kv_pools import copy_blocks, new_kv_cache, swap_blocks
from scriba.kernels.cpu_paged_attention import paged_decode_attention_cpu
from scriba.kernels.kv8 import (
    FP8,
    dequantized,
    new_kv_scales,
    quantize,
    write_kv_cache_8bit_ref,
)
from scriba.kernels.kv_cache import write_kv_cache_triton
from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK_SIZE, HEADS, DIM = 16, 3, 64
DTYPES = [FP8, torch.int8]
# the largest error of a kept value, relative to its vector's largest |value|: half a code step
# (e4m3: 3 mantissa bits, 1/16 of the value's binade; int8: 1/254 of the largest)
BOUND = {FP8: 1 / 16, torch.int8: 1 / 254 + 1e-6}


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


# Values at the codes' rounding edges, each vector's largest |value| exactly the largest code so its
# scale is 1 and the values reach the rounding as they are: e4m3 ties (1.0625 -> 1, 1.1875 ->
# 1.25), a carry into the exponent (1.9375 -> 2), subnormal ties (2**-10 -> 0, 3 * 2**-10 -> 2**-8,
# 15 * 2**-10 -> 2**-6, the smallest normal); int8 ties (2.5 -> 2, 3.5 -> 4, -2.5 -> -2).
EDGES = {
    FP8: [448.0, 1.0625, 1.1875, 1.9375, 2**-10, 3 * 2**-10, 15 * 2**-10, -1.0625, -(2**-12), 0.0, 300.0],
    torch.int8: [127.0, 2.5, 3.5, -2.5, 0.5, 1.5, -0.5, 126.5, -127.0, 0.0, 0.49],
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
