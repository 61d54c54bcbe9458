"""The 8-bit (e4m3) KV cache (kernels/fp8_kv.py) and every reader and writer of it, against the
torch reference: the numba CPU kernel, and the Triton decode and write kernels (on CUDA, else in
Triton's interpreter, conftest.py). Oracle for the reference itself: the float32 values written,
within e4m3's rounding, and dense float attention over them."""

import random

import pytest
import torch

from scriba.kernels.cpu_paged_attention import paged_decode_attention_cpu
from scriba.kernels.fp8_kv import FP8, FP8_MAX, dequantized, new_kv_scales, write_kv_cache_fp8_ref
from scriba.kernels.kv_cache import copy_blocks, new_kv_cache, swap_blocks, write_kv_cache_triton
from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK_SIZE, HEADS, DIM = 16, 3, 64


def filled_cache(lengths, seed, head_major=False, device="cpu"):
    """Cross-attention contexts written whole (fitted scales) into shuffled blocks: (cache,
    scales, block tables, lengths, the float32 values written [per sequence])."""
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    need = [-(-n // BLOCK_SIZE) for n in lengths]
    physical = list(range(sum(need) + 5))
    rng.shuffle(physical)
    cache = new_kv_cache(
        len(physical), BLOCK_SIZE, HEADS, DIM, head_major=head_major, dtype=FP8, device=device
    )
    scales = new_kv_scales(len(physical), HEADS, device)
    tables, values = [], []
    for n, blocks in zip(lengths, need):
        table, physical = physical[:blocks], physical[blocks:]
        # heads of very different sizes, as K and V are: each block's scale fits its own
        k = torch.randn(n, HEADS, DIM, generator=gen) * torch.tensor([0.01, 1.0, 300.0])[None, :, None]
        v = torch.randn(n, HEADS, DIM, generator=gen) * torch.tensor([50.0, 0.2, 3.0])[None, :, None]
        slots = torch.tensor([table[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE for p in range(n)])
        write_kv_cache_fp8_ref(k.to(device), v.to(device), cache, scales, slots.to(device), fit=True)
        tables.append(table + [0] * (max(need) - blocks))
        values.append((k, v))
    return (
        cache,
        scales,
        torch.tensor(tables, dtype=torch.int32, device=device),
        torch.tensor(lengths, dtype=torch.int32, device=device),
        values,
    )


def test_cross_blocks_keep_each_value_to_e4m3s_precision():
    cache, scales, tables, lengths, values = filled_cache([40, 1500, 7], seed=0)
    for table, n, (k, v) in zip(tables, lengths.tolist(), values):
        blocks = table[: -(-n // BLOCK_SIZE)].long()
        back = dequantized(cache[:, blocks], scales[:, blocks]).flatten(1, 2)[:, :n]
        for written, read in ((k, back[0]), (v, back[1])):
            # e4m3 keeps 3 mantissa bits: each value within 1/16 of its block's head's largest
            err = (read - written).abs() / written.abs().amax(-1, keepdim=True).clamp_min(1e-30)
            assert err.max() <= 1 / 16, err.max()
            assert ((read - written).norm() / written.norm()) < 0.04
    assert scales.min() > 0 and (scales.max() / scales.min()) > 1e3  # each head its own scale


def test_self_blocks_stay_at_scale_one_and_clamp():
    cache, scales = new_kv_cache(6, 4, 2, 8, dtype=FP8), new_kv_scales(6, 2)
    scales[:, 2] = 9.0  # a block once a cross block's, now a self sequence's
    k = torch.tensor([1.0, -700.0, 0.3, 1000.0]).repeat(2, 8, 1).permute(2, 0, 1)  # [4, 2, 8]
    write_kv_cache_fp8_ref(k, k, cache, scales, torch.tensor([8, 9, 10, 11]), fit=False)
    assert torch.equal(scales[:, 2], torch.ones(2, 2))
    back = dequantized(cache[:, 2:3], scales[:, 2:3])[0, 0, :, 0, 0]
    assert back.tolist() == [1.0, -FP8_MAX, 0.3125, FP8_MAX]  # 0.3 rounds to e4m3's 0.3125
    write_kv_cache_fp8_ref(k[:1], k[:1], cache, scales, torch.tensor([13]), fit=False)  # mid-block
    assert scales[0, 3].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("head_major", [True, False])
def test_decode_readers_agree_with_dense_float_attention(head_major):
    cache, scales, tables, lengths, values = filled_cache([1500, 33, 1], seed=1, head_major=head_major)
    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(1))
    ref = paged_decode_attention_ref(q, cache, tables, lengths, 0.125, kv_scales=scales)
    for row, (n, (k, v)) in enumerate(zip(lengths.tolist(), values)):
        blocks = tables[row, : -(-n // BLOCK_SIZE)].long()
        kv = dequantized(cache[:, blocks], scales[:, blocks]).flatten(1, 2)[:, :n]  # what was kept
        dense = torch.softmax(torch.einsum("hd,thd->ht", q[row] * 0.125, kv[0]), -1)
        torch.testing.assert_close(ref[row], torch.einsum("ht,thd->hd", dense, kv[1]), atol=1e-4, rtol=1e-4)
    cpu = paged_decode_attention_cpu(q, cache, tables, lengths, 0.125, kv_scales=scales)
    torch.testing.assert_close(cpu, ref, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("splits", [1, 4])
def test_the_triton_decode_kernel_reads_fp8_as_the_reference(splits):
    cache, scales, tables, lengths, _ = filled_cache([700, 16, 90], seed=2, device=DEVICE)
    q = torch.randn(3, HEADS, DIM, generator=torch.Generator().manual_seed(2)).to(DEVICE)
    ref = paged_decode_attention_ref(q, cache, tables, lengths, 0.125, kv_scales=scales)
    got = paged_decode_attention_triton(q, cache, tables, lengths, 0.125, num_splits=splits, kv_scales=scales)
    # float32 sums in another order, over keys up to ~1,000 (a head's scores up to ~1e4)
    torch.testing.assert_close(got, ref, atol=5e-4, rtol=1e-3)
    with pytest.raises(ValueError, match="fp8 cache is read with its scales"):
        paged_decode_attention_triton(q, cache, tables, lengths, 0.125)


def test_the_triton_write_kernel_writes_self_tokens_as_the_reference():
    """The decode steps' write (CUDA graphs capture it): the same bytes and scales, padding
    slots (-1) skipped."""
    ref_cache, ref_scales = new_kv_cache(12, 4, HEADS, DIM, dtype=FP8), new_kv_scales(12, HEADS)
    got_cache, got_scales = (
        new_kv_cache(12, 4, HEADS, DIM, dtype=FP8, device=DEVICE),
        new_kv_scales(12, HEADS, DEVICE),
    )
    ref_scales[:, 5], got_scales[:, 5] = 7.0, 7.0
    k, v = torch.randn(6, HEADS, DIM) * 200, torch.randn(6, HEADS, DIM) * 900
    slots = torch.tensor([20, 21, 13, 0, 47, -1])
    write_kv_cache_fp8_ref(k[:5], v[:5], ref_cache, ref_scales, slots[:5], fit=False)
    write_kv_cache_triton(k.to(DEVICE), v.to(DEVICE), got_cache, slots.to(DEVICE), scales=got_scales)
    assert torch.equal(got_cache.view(torch.uint8).cpu(), ref_cache.view(torch.uint8))
    assert torch.equal(got_scales.cpu(), ref_scales)


def test_copies_and_swaps_carry_the_scales():
    cache, scales, tables, lengths, _ = filled_cache([40], seed=3)
    block = int(tables[0, 1])
    copy_blocks([cache, scales], [(block, 0)])
    assert torch.equal(cache[:, 0].view(torch.uint8), cache[:, block].view(torch.uint8))
    assert torch.equal(scales[:, 0], scales[:, block])
    host, host_scales = new_kv_cache(3, BLOCK_SIZE, HEADS, DIM, dtype=FP8), new_kv_scales(3, HEADS)
    swap_blocks([cache, scales], [host, host_scales], [(block, 2)])
    assert torch.equal(
        dequantized(host[:, 2:3], host_scales[:, 2:3]),
        dequantized(cache[:, block : block + 1], scales[:, block : block + 1]),
    )
