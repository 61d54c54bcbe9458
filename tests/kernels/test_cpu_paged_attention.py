"""The numba decode attention over a float32, float16 or bfloat16 cache
(kernels/cpu_paged_attention.py) against a dense float64 reference on the same cached values, and
against the torch path; its rounding of float32 into a half cache against torch's."""

import math
import os
import random
import subprocess
import sys

import numba
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scriba.engine.kv_pools import new_kv_cache
from scriba.kernels.cpu_paged_attention import CACHE_DTYPES as CACHE_DTYPES_READ
from scriba.kernels.cpu_paged_attention import narrow, paged_decode_attention_cpu
from scriba.kernels.kv_cache import write_kv_cache_ref
from scriba.kernels.paged_attention import paged_decode_attention_ref


def dense_attention(q, k, v, scale):
    """q [H, D], k/v [T, H, D] -> [H, D], in float64."""
    scores = torch.einsum("hd,thd->ht", q.double(), k.double()) * scale
    return torch.einsum("ht,thd->hd", scores.softmax(-1), v.double())


CACHE_DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def paged_contexts(rng, lengths, block_size, heads, dim, head_major, shared, dtype=torch.bfloat16):
    """A cache in `dtype`, NaN wherever nothing was written (a read past a length poisons the
    output), holding each context in shuffled blocks; rows in `shared` reuse row 0's table
    (beams). Returns cache, padded tables [rows, width], and each row's K/V in float32."""
    tables, dense = [], []
    num_blocks = sum(-(-n // block_size) for n in lengths) + 3
    cache = new_kv_cache(num_blocks, block_size, heads, dim, head_major, dtype=dtype)
    cache.fill_(float("nan"))
    free = list(range(num_blocks))
    rng.shuffle(free)
    for row, n in enumerate(lengths):
        if row in shared:
            tables.append(tables[0]), dense.append(dense[0])
            continue
        table = [free.pop() for _ in range(-(-n // block_size))]
        kv = torch.randn(2, n, heads, dim) * 3
        slots = torch.tensor([table[p // block_size] * block_size + p % block_size for p in range(n)])
        write_kv_cache_ref(kv[0], kv[1], cache, slots)
        tables.append(table), dense.append(kv.to(dtype).float())
    width = max(map(len, tables))
    padded = torch.tensor([t + [t[0]] * (width - len(t)) for t in tables], dtype=torch.int32)
    return cache, padded, dense


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    block_size=st.sampled_from([1, 4, 16]),
    heads=st.integers(1, 6),
    dim=st.sampled_from([8, 16, 64]),
    head_major=st.booleans(),
    dtype=st.sampled_from(CACHE_DTYPES),
)
def test_kernel_matches_dense_reference(seed, block_size, heads, dim, head_major, dtype):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    choices = [1, 2, block_size, block_size + 1, rng.randint(1, 300)]
    lengths = [rng.choice(choices) for _ in range(rng.randint(1, 7))]
    shared = {i for i in range(1, len(lengths)) if rng.random() < 0.3}
    lengths = [lengths[0] if i in shared else n for i, n in enumerate(lengths)]
    cache, tables, dense = paged_contexts(rng, lengths, block_size, heads, dim, head_major, shared, dtype)
    q = torch.randn(len(lengths), heads, dim)
    scale = 1 / math.sqrt(dim)
    out = paged_decode_attention_cpu(q, cache, tables, torch.tensor(lengths, dtype=torch.int32), scale)
    assert out.dtype == torch.float32 and out.shape == q.shape
    for i, kv in enumerate(dense):
        ref = dense_attention(q[i], kv[0], kv[1], scale).float()
        torch.testing.assert_close(out[i], ref, atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("head_major", [True, False])
def test_float16_blocks_of_head_size_64_match_dense_reference(head_major):
    """A float16 cache with blocks of 16 and head size 64 takes the LLVM IR blocks
    (cpu_f16_blocks.py) where a head's block is contiguous (head-major), the loops elsewhere:
    both the dense reference, with partial last blocks and shared contexts."""
    rng = random.Random(5)
    torch.manual_seed(5)
    lengths = [1500, 15, 16, 17, 300, 1, 1500]  # the last shares the first one's blocks
    cache, tables, dense = paged_contexts(rng, lengths, 16, 6, 64, head_major, {6}, torch.float16)
    q = torch.randn(len(lengths), 6, 64)
    out = paged_decode_attention_cpu(q, cache, tables, torch.tensor(lengths, dtype=torch.int32), 0.125)
    for i, kv in enumerate(dense):
        ref = dense_attention(q[i], kv[0], kv[1], 0.125).float()
        torch.testing.assert_close(out[i], ref, atol=2e-5, rtol=2e-5)


SHARED_ALLOCATOR_RUN = """
import torch
from scriba.kernels.cpu_paged_attention import paged_decode_attention_cpu
from scriba.engine.kv_pools import new_kv_cache
from scriba.kernels.paged_attention import paged_decode_attention_ref
torch.manual_seed(0)
rows, heads, n = 17, 6, 1500
cache = new_kv_cache(rows * 94, 16, heads, 64, head_major=True, dtype=torch.float16).normal_()
tables = torch.arange(rows * 94, dtype=torch.int32).view(rows, 94)
lens, q = torch.full((rows,), n, dtype=torch.int32), torch.randn(rows, heads, 64)
ref = paged_decode_attention_ref(q, cache.float(), tables, lens, 0.125)
print(sum((paged_decode_attention_cpu(q, cache, tables, lens, 0.125) - ref).abs().max().item() > 1e-4
          for _ in range(30)))
"""


def test_float16_blocks_read_only_live_arrays_under_one_shared_allocator():
    """Two numba threads sharing one malloc arena: an array the LLVM IR blocks read must still be
    alive (session 17's version took addresses, numba freed the scores after their last use by
    name and the other thread's next allocation overwrote them: 289 of 300 calls wrong here)."""
    env = {**os.environ, "MALLOC_ARENA_MAX": "1", "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", SHARED_ALLOCATOR_RUN], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "0", "calls with wrong outputs: " + done.stdout


@pytest.mark.parametrize("dtype", CACHE_DTYPES)
def test_kernel_equals_the_torch_path_on_whisper_sized_cross_contexts(dtype):
    """17 contexts of 1,500 positions in runs of consecutive blocks, as cross-attention's: the
    torch path (SDPA over the same values in float32) gives the same output."""
    torch.manual_seed(0)
    rows, heads, dim, bs, n = 17, 6, 64, 16, 1500
    blocks = -(-n // bs)
    cache = new_kv_cache(rows * blocks, bs, heads, dim, head_major=True, dtype=dtype)
    cache.normal_()
    tables = torch.arange(rows * blocks, dtype=torch.int32).view(rows, blocks)
    lens = torch.full((rows,), n, dtype=torch.int32)
    q = torch.randn(rows, heads, dim)
    ref = paged_decode_attention_ref(q, cache.float(), tables, lens, dim**-0.5)
    out = paged_decode_attention_cpu(q, cache, tables, lens, dim**-0.5)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_kernel_refuses_other_dtypes():
    q = torch.randn(2, 2, 8)
    tables, lens = torch.zeros(2, 1, dtype=torch.int32), torch.ones(2, dtype=torch.int32)
    with pytest.raises(ValueError, match="float32, float16, bfloat16, fp8 or int8 cache and float32 q"):
        paged_decode_attention_cpu(q, new_kv_cache(2, 4, 2, 8, dtype=torch.float64), tables, lens, 1.0)
    cache = new_kv_cache(2, 4, 2, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="float32, float16, bfloat16, fp8 or int8 cache and float32 q"):
        paged_decode_attention_cpu(q.bfloat16(), cache, tables, lens, 1.0)


def test_writes_to_a_bf16_cache_are_rounded_to_nearest():
    cache = new_kv_cache(2, 4, 2, 8, head_major=True, dtype=torch.bfloat16)
    k, v = torch.randn(2, 3, 2, 8)
    write_kv_cache_ref(k, v, cache, torch.tensor([5, 0, 7]))
    assert torch.equal(cache[0, 1, 1], k[0].bfloat16()) and torch.equal(cache[1, 1, 3], v[2].bfloat16())
    assert (cache[0, 1, 1].float() - k[0]).abs().max() <= k[0].abs().max() * 2**-8


@pytest.mark.parametrize("dtype", CACHE_DTYPES)
def test_kernel_keeps_a_peaked_softmax(dtype):
    """Scores hundreds apart (weights below float32's range but one): the output is the top
    position's value, as in float64, and a flat softmax gives the plain mean."""
    torch.manual_seed(1)
    heads, dim, n = 2, 16, 40
    cache, tables, dense = paged_contexts(random.Random(1), [n], 16, heads, dim, True, set(), dtype)
    k, v = dense[0]
    top = 7
    q = (k[top] * 1000)[None]  # [1, heads, dim]: position 7 scores ~1000x its squared norm
    lens = torch.tensor([n], dtype=torch.int32)
    out = paged_decode_attention_cpu(q, cache, tables, lens, 1.0)
    torch.testing.assert_close(out[0], dense_attention(q[0], k, v, 1.0).float(), atol=1e-5, rtol=1e-5)
    flat = paged_decode_attention_cpu(torch.zeros(1, heads, dim), cache, tables, lens, 1.0)
    torch.testing.assert_close(flat[0], v.mean(0), atol=1e-5, rtol=1e-5)


@numba.njit
def _narrowed(x, out):
    like = out[0]
    for i in range(x.shape[0]):
        out[i] = narrow(x[i], like)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_narrow_rounds_as_torch(dtype):
    """The numba step's writes into a half cache (cpu_paged_attention.narrow) give torch's bits:
    random values over many magnitudes, exact halfway cases (ties to even), subnormals, zeros."""
    torch.manual_seed(2)
    x = torch.randn(4000) * torch.logspace(-9, 4, 4000)
    step = 2.0**-10 if dtype == torch.float16 else 2.0**-7  # one unit in the last place at 1.0
    ties = 1 + step * (torch.arange(64) + 0.5)  # halfway between two codes, odd and even below
    x = torch.cat([x, ties, -ties, torch.tensor([0.0, -0.0, 1e-7, 3e-8, 60000.0])])
    bits = CACHE_DTYPES_READ[dtype]
    out = torch.zeros(len(x), dtype=dtype)
    _narrowed(x.numpy(), out.view(bits).numpy())
    assert torch.equal(out.view(bits), x.to(dtype).view(bits))
