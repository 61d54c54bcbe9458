"""The torch attention ops against a dense, explicitly masked reference (built only here)."""

import math
import random

import pytest
import torch

from scriba.engine.kv_pools import copy_blocks, new_kv_cache, swap_blocks
from scriba.kernels.context_reads import group_context_reads
from scriba.kernels.kv_cache import write_kv_cache_ref
from scriba.kernels.paged_attention import paged_decode_attention_ref
from scriba.kernels.varlen_attention import varlen_attention_ref

HEADS, DIM = 4, 16


def dense_attention(q, k, v, allowed, scale):
    """q [Tq,H,D], k/v [Tk,H,D], allowed [Tq,Tk] bool: softmax(q k^T) v over allowed keys."""
    scores = torch.einsum("qhd,khd->hqk", q.double(), k.double()) * scale
    scores = scores.masked_fill(~allowed[None], -math.inf)
    return torch.einsum("hqk,khd->qhd", scores.softmax(-1), v.double()).to(q.dtype)


def dense_mask(q_lens, k_lens, causal):
    """The block-diagonal (optionally causal, bottom-right aligned) mask over packed tokens."""
    mask = torch.zeros(sum(q_lens), sum(k_lens), dtype=torch.bool)
    q0 = k0 = 0
    for ql, kl in zip(q_lens, k_lens):
        block = torch.ones(ql, kl, dtype=torch.bool)
        if causal:
            block = torch.arange(kl)[None, :] <= torch.arange(ql)[:, None] + (kl - ql)
        mask[q0 : q0 + ql, k0 : k0 + kl] = block
        q0, k0 = q0 + ql, k0 + kl
    return mask


def cu(lengths):
    return torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross", "causal_with_context"])
def test_varlen_matches_dense(seed, kind):
    rng = random.Random(seed)
    n = rng.randint(1, 8)
    q_lens = [rng.randint(1, 70) for _ in range(n)]
    if kind in ("encoder", "decoder"):
        k_lens = q_lens
    elif kind == "cross":
        k_lens = [rng.randint(1, 200) for _ in range(n)]
    else:
        k_lens = [q + rng.randint(0, 30) for q in q_lens]
    causal = kind in ("decoder", "causal_with_context")
    torch.manual_seed(seed)
    q = torch.randn(sum(q_lens), HEADS, DIM)
    k, v = torch.randn(2, sum(k_lens), HEADS, DIM)
    out = varlen_attention_ref(q, k, v, cu(q_lens), cu(k_lens), max(q_lens), max(k_lens), DIM**-0.5, causal)
    ref = dense_attention(q, k, v, dense_mask(q_lens, k_lens, causal), DIM**-0.5)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def nan_cache(num_blocks: int, block_size: int, head_major: bool) -> torch.Tensor:
    """A cache in either memory order, every slot NaN (a wrong read poisons the output)."""
    return new_kv_cache(num_blocks, block_size, HEADS, DIM, head_major).fill_(float("nan"))


def make_paged(rng, lengths, block_size, num_blocks, head_major=False):
    """Scatter each sequence's K/V into shuffled physical blocks; return cache, tables, dense K/V."""
    cache = nan_cache(num_blocks, block_size, head_major)
    free = list(range(num_blocks))
    rng.shuffle(free)
    tables, dense = [], []
    for n in lengths:
        table = [free.pop() for _ in range(-(-n // block_size))]
        kv = torch.randn(2, n, HEADS, DIM)
        slots = torch.tensor([table[p // block_size] * block_size + p % block_size for p in range(n)])
        write_kv_cache_ref(kv[0], kv[1], cache, slots)
        tables.append(table)
        dense.append(kv)
    return cache, tables, dense


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("block_size", [1, 16])
@pytest.mark.parametrize("head_major", [False, True])
def test_paged_decode_matches_dense(seed, block_size, head_major):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    lengths = [rng.choice([1, 2, 15, 16, 17, rng.randint(1, 300)]) for _ in range(rng.randint(1, 9))]
    num_blocks = sum(-(-n // block_size) for n in lengths) + 5
    cache, tables, dense = make_paged(rng, lengths, block_size, num_blocks, head_major)
    # Unwritten slots are NaN: a wrong read would poison the output. Pad tables with a written block.
    width = max(map(len, tables))
    padded = torch.tensor([t + [tables[0][0]] * (width - len(t)) for t in tables], dtype=torch.int32)
    q = torch.randn(len(lengths), HEADS, DIM)
    for i in range(len(lengths)):  # the tail of each last block is NaN: zero it as the engine's pool is
        last, used = tables[i][-1], lengths[i] - (len(tables[i]) - 1) * block_size
        cache[:, last, used:] = 0.0
    out = paged_decode_attention_ref(q, cache, padded, torch.tensor(lengths, dtype=torch.int32), DIM**-0.5)
    for i, (kv, n) in enumerate(zip(dense, lengths)):
        ref = dense_attention(q[i : i + 1], kv[0], kv[1], torch.ones(1, n, dtype=torch.bool), DIM**-0.5)
        torch.testing.assert_close(out[i : i + 1], ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("head_major", [False, True])
def test_write_kv_cache_writes_only_its_slots(head_major):
    cache = new_kv_cache(4, 4, HEADS, DIM, head_major)
    k, v = torch.randn(2, 3, HEADS, DIM)
    write_kv_cache_ref(k, v, cache, torch.tensor([13, 2, 7]))
    assert (
        torch.equal(cache[0, 3, 1], k[0])
        and torch.equal(cache[1, 0, 2], v[1])
        and torch.equal(cache[0, 1, 3], k[2])
    )
    assert int((cache.abs().sum(dim=(-1, -2)) > 0).sum()) == 6


def test_head_major_cache_keeps_each_heads_run_contiguous():
    cache = new_kv_cache(10, 16, HEADS, DIM, head_major=True)
    assert cache.shape == (2, 10, 16, HEADS, DIM)
    assert all(cache[kv, 3:7, :, head].is_contiguous() for kv in (0, 1) for head in range(HEADS))
    assert new_kv_cache(10, 16, HEADS, DIM).is_contiguous()  # what the Triton kernels take


@pytest.mark.parametrize("head_major", [False, True])
def test_copy_and_swap_blocks(head_major):
    dev = [new_kv_cache(6, 4, HEADS, DIM, head_major).normal_() for _ in range(2)]
    cpu = [torch.zeros(2, 3, 4, HEADS, DIM) for _ in range(2)]
    copy_blocks(dev, [(1, 4)])
    assert all(torch.equal(c[:, 4], c[:, 1]) for c in dev)
    swap_blocks(dev, cpu, [(5, 0), (2, 2)])
    assert all(torch.equal(c[:, 0], d[:, 5]) and torch.equal(c[:, 2], d[:, 2]) for c, d in zip(cpu, dev))


def test_launchers_reject_bad_shapes():
    q = torch.randn(5, HEADS, DIM)
    with pytest.raises(ValueError, match="cu_seqlens"):
        varlen_attention_ref(q, q, q, cu([5]), cu([2, 3]), 5, 3, 1.0, False)
    with pytest.raises(ValueError, match="kv_cache"):
        paged_decode_attention_ref(
            q, torch.zeros(2, 2, 4, HEADS, DIM + 1), torch.zeros(5, 1, dtype=torch.int32), torch.ones(5), 1.0
        )
    with pytest.raises(ValueError, match="slot_mapping"):
        write_kv_cache_ref(q, q, torch.zeros(2, 2, 4, HEADS, DIM), torch.tensor([0, 1]))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("head_major", [False, True])
def test_paged_decode_reads_adjacent_runs_in_batches(seed, head_major):
    """Cross-attention-like tables: runs of consecutive blocks, some adjacent (one batch),
    some shared by several query rows (beams), some apart, beside scattered tables; NaN
    everywhere unwritten. Every row equals the dense per-sequence reference."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    bs, run_len = 16, rng.choice([150, 160, 1500])
    run_blocks = -(-run_len // bs)
    num_runs = rng.randint(2, 6)
    cache = nan_cache((num_runs + 2) * run_blocks + 40, bs, head_major)
    firsts = [i * run_blocks for i in range(num_runs)]
    firsts[-1] += run_blocks  # a gap before the last run: it goes in a batch of its own
    tables, lengths, dense = [], [], []
    for first in firsts:
        n = run_len - rng.choice([0, 0, 3])
        kv = torch.randn(2, n, HEADS, DIM)
        table = list(range(first, first + run_blocks))
        cache[:, first : first + run_blocks] = 0.0
        write_kv_cache_ref(kv[0], kv[1], cache, torch.tensor([table[0] * bs + p for p in range(n)]))
        for _ in range(rng.choice([1, 1, 3])):  # rows sharing the run
            tables.append(table), lengths.append(n), dense.append(kv)
    scattered = list(range(cache.shape[1] - 40, cache.shape[1]))
    rng.shuffle(scattered)
    for n in (5, 33):
        table = [scattered.pop() for _ in range(-(-n // bs))]
        kv = torch.randn(2, n, HEADS, DIM)
        for b in table:
            cache[:, b] = 0.0
        write_kv_cache_ref(
            kv[0], kv[1], cache, torch.tensor([table[p // bs] * bs + p % bs for p in range(n)])
        )
        tables.append(table), lengths.append(n), dense.append(kv)
    order = list(range(len(tables)))
    rng.shuffle(order)
    tables, lengths, dense = (
        [tables[i] for i in order],
        [lengths[i] for i in order],
        [dense[i] for i in order],
    )
    width = max(map(len, tables))
    padded = torch.tensor([t + [t[0]] * (width - len(t)) for t in tables], dtype=torch.int32)
    reads = group_context_reads(padded.tolist(), lengths, bs)
    assert max(len(b.queries) for b in reads.batches) == num_runs - 1 and len(reads.gathered) == 2
    q = torch.randn(len(tables), HEADS, DIM)
    out = paged_decode_attention_ref(
        q, cache, padded, torch.tensor(lengths, dtype=torch.int32), DIM**-0.5, reads
    )
    for i, (kv, n) in enumerate(zip(dense, lengths)):
        ref = dense_attention(q[i : i + 1], kv[0], kv[1], torch.ones(1, n, dtype=torch.bool), DIM**-0.5)
        torch.testing.assert_close(out[i : i + 1], ref, atol=1e-5, rtol=1e-5)
