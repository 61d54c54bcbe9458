"""Cross-attention read through the encoder states (kernels/paged_states_attention.py): the torch
form against the cross-attention of the projected K/V it replaces, the Triton kernel against it."""

import random

import pytest
import torch

from scriba.kernels.kv8 import FP8, dequantized, new_kv_scales
from scriba.kernels.paged_attention import paged_decode_attention_ref
from scriba.kernels.paged_states_attention import attend_states_ref, states_decode_attention, write_states
from scriba.kernels.paged_states_triton import attend_states_triton, slices_of

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BLOCK_SIZE = 16


def states_batch(lengths, heads, head_dim, seed, dtype=torch.float32):
    """A cache whose K half holds encoder states [positions, heads * head_dim] in shuffled blocks
    (NaN in every slot no sequence owns). Returns (cache, tables, lens, states per sequence)."""
    rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
    need = [-(-n // BLOCK_SIZE) for n in lengths]
    physical = list(range(sum(need) + 5))
    rng.shuffle(physical)
    cache = torch.full((2, len(physical), BLOCK_SIZE, heads, head_dim), float("nan"))
    tables, per_seq = [], []
    for n, count in zip(lengths, need):
        table, physical = physical[:count], physical[count:]
        states = torch.randn(n, heads, head_dim, generator=gen)
        for pos in range(n):
            cache[0, table[pos // BLOCK_SIZE], pos % BLOCK_SIZE] = states[pos]
        tables.append(table + [physical[0]] * (max(need) + 1 - count))  # padded past the longest
        per_seq.append(states.flatten(1).to(dtype))
    to = dict(device=DEVICE, dtype=dtype)
    tables = torch.tensor(tables, dtype=torch.int32, device=DEVICE)
    return cache.to(**to), tables, torch.tensor(lengths, dtype=torch.int32, device=DEVICE), per_seq


def test_states_attention_is_the_projected_cross_attention():
    """q over the states, through W_k and W_v, = q over K = E W_k^T + b_k and V = E W_v^T + b_v:
    K's bias drops out of the softmax, V's is added after."""
    heads, head_dim, lengths = 3, 8, [1, 17, 40, 33]
    cache, tables, lens, per_seq = states_batch(lengths, heads, head_dim, seed=1, dtype=torch.float64)
    d_model = heads * head_dim
    gen = torch.Generator().manual_seed(2)
    weight = torch.randn(2 * d_model, d_model, generator=gen, dtype=torch.float64) / d_model**0.5
    bias = torch.randn(2 * d_model, generator=gen, dtype=torch.float64)
    q = torch.randn(len(lengths), heads, head_dim, generator=gen, dtype=torch.float64)
    projected = torch.zeros_like(cache)  # each layer's K/V cache, as cross_cache="projected" holds it
    for table, states in zip(tables.tolist(), per_seq):
        k, v = (states @ weight.T + bias).chunk(2, dim=-1)
        for pos in range(states.shape[0]):
            at = table[pos // BLOCK_SIZE], pos % BLOCK_SIZE
            projected[0][at], projected[1][at] = k[pos].view(heads, -1), v[pos].view(heads, -1)
    expected = paged_decode_attention_ref(q, projected, tables, lens, head_dim**-0.5)
    got = states_decode_attention(
        q, cache.nan_to_num(0), weight, bias, tables, lens, head_dim**-0.5, attend_states_ref
    )
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)
    no_bias = states_decode_attention(
        q, cache.nan_to_num(0), weight, None, tables, lens, head_dim**-0.5, attend_states_ref
    )
    torch.testing.assert_close(got - no_bias, bias[d_model:].view(heads, -1).expand_as(got))


# (heads, head_dim): 4 slices of 16, no tail, one head group; 4 slices of 64 + 16 (d_model 320) and
# two groups of 10 heads (20 heads: Whisper large's); 8 slices of 32 + 16 (tiny's d_model 384)
SHAPES = [(4, 16), (20, 16), (6, 64)]


@pytest.mark.parametrize("heads, head_dim", SHAPES, ids=str)
def test_triton_matches_the_reference(heads, head_dim):
    lengths = [1, 15, 16, 17, 100, 37]
    cache, tables, lens, _ = states_batch(lengths, heads, head_dim, seed=heads)
    gen = torch.Generator().manual_seed(heads)
    queries = torch.randn(len(lengths), heads, heads * head_dim, generator=gen).to(DEVICE) / head_dim
    expected = attend_states_ref(queries, cache[0].nan_to_num(0), tables, lens, head_dim**-0.5)
    for num_splits in (None, 1, 3):  # planned, one pass, several (some empty for short sequences)
        got = attend_states_triton(queries, cache[0], tables, lens, head_dim**-0.5, num_splits=num_splits)
        torch.testing.assert_close(got, expected, rtol=2e-5, atol=2e-5)
    # tiles of 16 positions; rows=32: Whisper large's 20 heads in one program, not two
    for launch in [dict(tile=16)] + [dict(rows=32)] * (heads > 16):
        got = attend_states_triton(queries, cache[0], tables, lens, head_dim**-0.5, launch=launch)
        torch.testing.assert_close(got, expected, rtol=2e-5, atol=2e-5)


def test_triton_moves_its_softmax_reference_when_a_later_score_jumps():
    """The kernel rescales its accumulators only when a row's max passes its reference by more than
    8 (LAZY): states 10x larger from position 50 on make later tiles' scores jump past it, in the
    middle of a split and at a split's start."""
    heads, head_dim, lengths = 4, 16, [90, 120, 70]
    cache, tables, lens, per_seq = states_batch(lengths, heads, head_dim, seed=8)
    for table, length in zip(tables.tolist(), lengths):
        for pos in range(50, length):
            cache[0, table[pos // BLOCK_SIZE], pos % BLOCK_SIZE] *= 10
    gen = torch.Generator().manual_seed(8)
    queries = torch.randn(len(lengths), heads, heads * head_dim, generator=gen).to(DEVICE) / 4
    scores = 0.25 * queries[0] @ per_seq[0].to(DEVICE).T  # [heads, positions] of the first sequence
    early, late = scores[:, :32].amax(1), 10 * scores[:, 50:].amax(1)
    assert (late - early).max() > 8  # a later tile passes the first one's reference by more than LAZY
    expected = attend_states_ref(queries, cache[0].nan_to_num(0), tables, lens, 0.25)
    for num_splits, tile in ((1, 32), (2, 16)):
        launch = dict(tile=tile)
        got = attend_states_triton(
            queries, cache[0], tables, lens, 0.25, num_splits=num_splits, launch=launch
        )
        torch.testing.assert_close(got, expected, rtol=2e-5, atol=2e-5)
    # in float16 the weights go to the products as float16: a reference left e^LAZY behind would overflow
    q16, e16 = queries.half(), cache[0].nan_to_num(0).half()
    half = attend_states_triton(q16, e16, tables, lens, 0.25, launch=dict(tile=16))
    expected = attend_states_ref(q16.float(), e16.float(), tables, lens, 0.25)  # the same rounded inputs
    torch.testing.assert_close(half.float(), expected, rtol=3e-3, atol=3e-3)


def test_triton_reads_half_precision_states():
    heads, head_dim, lengths = 4, 16, [9, 70]
    cache, tables, lens, _ = states_batch(lengths, heads, head_dim, seed=5, dtype=torch.float16)
    queries = torch.randn(len(lengths), heads, heads * head_dim).to(DEVICE, torch.float16) / head_dim
    expected = attend_states_ref(queries.float(), cache[0].nan_to_num(0).float(), tables, lens, 0.25)
    got = attend_states_triton(queries, cache[0], tables, lens, 0.25, num_splits=2)
    torch.testing.assert_close(got.float(), expected, rtol=3e-3, atol=3e-3)


def test_slices_cover_d_model_or_say_why_not():
    d_models = (64, 320, 384, 512, 768, 1024, 1280, 48)
    expected = [
        (4, 16, 0),
        (4, 64, 16),
        (8, 32, 16),
        (8, 64, 0),
        (8, 64, 32),
        (8, 128, 0),
        (8, 128, 32),
        (1, 32, 16),
    ]
    assert [slices_of(d) for d in d_models] == expected
    for d_model, (slices, width, tail_width) in zip(d_models, expected):
        assert slices * (width + tail_width) == d_model
    with pytest.raises(ValueError, match="d_model 1792"):
        slices_of(1792)  # 8 x (128 + 96), 4 x (256 + 192), ...: no power-of-two tail
    with pytest.raises(ValueError, match="d_model 40"):
        slices_of(40)


def quantized_states(lengths, heads, head_dim, dtype, seed):
    """states_batch's states written again into an 8-bit cache by write_states: (codes cache,
    scales, tables, lens, the float cache)."""
    cache, tables, lens, per_seq = states_batch(lengths, heads, head_dim, seed)
    codes = torch.zeros(cache.shape, dtype=dtype, device=DEVICE)
    scales = new_kv_scales(cache.shape[1], BLOCK_SIZE, heads, device=DEVICE)
    for table, states in zip(tables.tolist(), per_seq):
        slots = torch.tensor(
            [table[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE for p in range(len(states))]
        )
        write_states(states.to(DEVICE), codes, scales, slots.to(DEVICE))
    return codes, scales, tables, lens, cache


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=str)
def test_8bit_states_keep_one_scale_a_row(dtype):
    codes, scales, tables, lens, cache = quantized_states([5, 40], 4, 16, dtype, seed=3)
    blocks = tables[1, :3].long()
    row_scales = scales[0, blocks]  # [3, block_size, heads]: one value a row, in every head's slot
    assert torch.equal(row_scales, row_scales[..., :1].expand_as(row_scales))
    float_rows = cache[0, blocks].flatten(0, 1)[:40].flatten(1)
    rows = dequantized(codes[0, blocks], scales[0, blocks]).flatten(0, 1)[:40].flatten(1)
    step = {FP8: 1 / 16, torch.int8: 1 / 127}[dtype]  # e4m3's relative step; int8's of the largest
    largest = float_rows.abs().amax(1, keepdim=True)
    bound = (float_rows.abs() if dtype == FP8 else largest) * step + largest * 2**-9 / 448 * 2**3
    assert ((rows - float_rows).abs() <= bound).all()


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=str)
def test_triton_reads_8bit_states_as_the_reference(dtype):
    heads, head_dim, lengths = 20, 16, [3, 16, 50, 77]
    codes, scales, tables, lens, _ = quantized_states(lengths, heads, head_dim, dtype, seed=4)
    queries = torch.randn(len(lengths), heads, heads * head_dim).to(DEVICE) / head_dim
    expected = attend_states_ref(queries, codes[0], tables, lens, 0.25, scales[0])
    for num_splits, tile in ((1, 32), (3, 16)):
        launch = dict(tile=tile)
        got = attend_states_triton(
            queries, codes[0], tables, lens, 0.25, scales[0], num_splits=num_splits, launch=launch
        )
        torch.testing.assert_close(got, expected, rtol=2e-5, atol=2e-5)
