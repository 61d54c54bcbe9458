"""The Triton kernels against their torch references: on CUDA when there is a GPU, else on CPU
tensors in Triton's interpreter (conftest.py sets TRITON_INTERPRET=1). Shuffled physical
blocks, mixed lengths up to Whisper's 1500 encoder positions, three dtypes, head sizes 64,
80 and 128; outputs and unused cache slots are poisoned with NaN so a missed write or a
read past a sequence's end fails."""

import random

import pytest
import torch

from scriba.kernels import paged_decode_plan
from scriba.kernels.kv_cache import write_kv_cache_ref, write_kv_cache_triton
from scriba.kernels.paged_attention import (
    paged_decode_attention_ref,
    paged_decode_attention_triton,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOLERANCE = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}
BLOCK_SIZE, HEADS = 16, 2


def paged_batch(lengths, head_dim, dtype, seed):
    """A cache whose sequences own shuffled blocks; every slot no sequence owns is NaN.
    Returns (q, cache, padded block tables, seq lens, the same cache with 0 for NaN)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    blocks_needed = [-(-n // BLOCK_SIZE) for n in lengths]
    num_blocks = sum(blocks_needed) + 7  # some blocks belong to no one
    physical = list(range(num_blocks))
    rng.shuffle(physical)
    cache = torch.full((2, num_blocks, BLOCK_SIZE, HEADS, head_dim), float("nan"))
    tables = []
    for n, need in zip(lengths, blocks_needed):
        table, physical = physical[:need], physical[need:]
        tables.append(table)
        for pos in range(n):
            cache[:, table[pos // BLOCK_SIZE], pos % BLOCK_SIZE] = torch.randn(
                2, HEADS, head_dim, generator=gen
            )
    width = max(blocks_needed) + rng.randint(0, 3)  # tables padded past the longest one
    padded = torch.tensor(
        [t + [rng.randrange(num_blocks)] * (width - len(t)) for t in tables], dtype=torch.int32
    )
    q = torch.randn(len(lengths), HEADS, head_dim, generator=gen)
    to = dict(device=DEVICE, dtype=dtype)
    return (
        q.to(**to),
        cache.to(**to),
        padded.to(DEVICE),
        torch.tensor(lengths, dtype=torch.int32, device=DEVICE),
        cache.nan_to_num(0).to(**to),
    )


HEAD_DIMS = [64, 80, 128]
# In the interpreter a case costs ~9 s: there each dtype and each head size runs once (the loads
# depend on the dtype, the tiling on the head size, not on the pair); on a GPU every pair.
CASES = [(d, h) for d in DTYPES for h in HEAD_DIMS] if DEVICE == "cuda" else list(zip(DTYPES, HEAD_DIMS))


@pytest.mark.parametrize("dtype, head_dim", CASES, ids=str)
def test_paged_decode_matches_reference(dtype, head_dim, heads_first=True):
    rng = random.Random(head_dim)
    # The interpreter's time grows with the positions: one random length there, three on a GPU
    lengths = [1, 15, 16, 17, 448, 1500] + [rng.randint(1, 1500) for _ in range(3 if DEVICE == "cuda" else 1)]
    q, cache, tables, lens, clean = paged_batch(lengths, head_dim, dtype, seed=head_dim)
    ref = paged_decode_attention_ref(q.float(), clean.float(), tables, lens, head_dim**-0.5)
    for num_splits in (
        None,
        1,
        5,
        40,
    ):  # planned, a single pass, a few, many (most empty for short sequences)
        out = torch.full_like(q, float("nan"))
        paged_decode_attention_triton(
            q,
            cache,
            tables,
            lens,
            head_dim**-0.5,
            num_splits=num_splits,
            out=out,
            launch=dict(heads_first=heads_first),
        )
        torch.testing.assert_close(out.float(), ref, atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])


def test_paged_decode_runs_in_either_grid_order():
    """The grid's sequences first (heads_first=False, against DEFAULT_LAUNCH's True) reads as the
    default order."""
    test_paged_decode_matches_reference(torch.float16, 64, heads_first=False)


def test_the_default_launch_is_read_only_and_overrides_are_checked():
    """A tuner passes its launch to the kernel; nothing changes the default for everyone else, and
    a setting the kernel does not have is refused, naming it."""
    with pytest.raises(TypeError):
        paged_decode_plan.DEFAULT_LAUNCH["tile"] = 64
    tile, heads_first, options = paged_decode_plan.resolve_launch(dict(tile=16, heads_first=False), True)
    assert (tile, heads_first, options) == (16, False, dict(num_warps=4, num_stages=3))
    assert paged_decode_plan.resolve_launch(None, False)[2]["num_warps"] == 8
    with pytest.raises(ValueError, match=r"unknown launch settings \['two_pass'\]"):
        paged_decode_plan.resolve_launch(dict(two_pass=True), False)


def test_split_plan_fills_the_gpu_and_covers_the_context(monkeypatch):
    monkeypatch.setattr(paged_decode_plan, "TARGET_PROGRAMS", 1024)  # as on a GPU
    assert paged_decode_plan.plan_splits(1, 20, 1504, 32) == (
        32,
        47,
    )  # one cross-attention request: split wide
    partition, splits = paged_decode_plan.plan_splits(256, 20, 1504, 32)
    assert splits == 1 and partition >= 1504  # a full batch fills the GPU alone
    for seqs in (1, 3, 17, 64):
        partition, splits = paged_decode_plan.plan_splits(seqs, 8, 1000, 64)
        assert partition % 64 == 0 and (splits - 1) * partition < 1000 <= splits * partition


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("head_dim", [64, 80, 128])
def test_kv_write_matches_reference(dtype, head_dim):
    gen = torch.Generator().manual_seed(head_dim)
    num_tokens, num_blocks = 50, 9
    # K and V as the attention layer passes them: strided views into a fused projection.
    fused = torch.randn(num_tokens, 3, HEADS, head_dim, generator=gen).to(DEVICE, dtype)
    k, v = fused[:, 1], fused[:, 2]
    slots = torch.randperm(num_blocks * BLOCK_SIZE, generator=gen)[:num_tokens]
    slots[::7] = -1  # padding rows write nothing
    poisoned = torch.full(
        (2, num_blocks, BLOCK_SIZE, HEADS, head_dim), float("nan"), device=DEVICE, dtype=dtype
    )
    expected = poisoned.clone()
    write_kv_cache_triton(k, v, poisoned, slots.to(DEVICE))
    keep = slots >= 0
    write_kv_cache_ref(k[keep.to(DEVICE)], v[keep.to(DEVICE)], expected, slots[keep].to(DEVICE))
    assert torch.equal(poisoned.isnan(), expected.isnan())  # the same slots written, no others
    assert torch.equal(poisoned.nan_to_num(0), expected.nan_to_num(0))


def test_launchers_check_their_arguments():
    q, cache, tables, lens, _ = paged_batch([5, 9], 64, torch.float32, seed=0)
    with pytest.raises(ValueError, match="dtype"):
        paged_decode_attention_triton(q.half(), cache, tables, lens, 0.125)
    with pytest.raises(ValueError, match="contiguous"):
        paged_decode_attention_triton(
            q.transpose(1, 2).contiguous().transpose(1, 2), cache, tables, lens, 0.125
        )
    with pytest.raises(ValueError, match="do not match"):
        paged_decode_attention_triton(q, cache, tables[:1], lens, 0.125)
    with pytest.raises(ValueError, match="out must be"):
        paged_decode_attention_triton(
            q, cache, tables, lens, 0.125, out=torch.empty(3, HEADS, 64, device=DEVICE)
        )
    k = torch.zeros(2, HEADS, 64, device=DEVICE)
    with pytest.raises(ValueError, match="dtype"):
        write_kv_cache_triton(k.half(), k.half(), cache, torch.tensor([0, 1], device=DEVICE))
    with pytest.raises(ValueError, match="contiguous in head_dim"):
        write_kv_cache_triton(
            k.transpose(1, 2).contiguous().transpose(1, 2), k, cache, torch.tensor([0, 1], device=DEVICE)
        )
