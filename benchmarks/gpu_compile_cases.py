"""The Triton launches compile_for_gpu.py compiles: each a (name, call of a kernel's wrapper), on CPU
tensors of Whisper large's shapes (20 heads of 64, d_model 1280, 1500 positions, blocks of 16).

engine_cases: what the engine launches (LAUNCH's defaults): the K/V writes, the paged decode, the
states' read, fp8 rows, in every cache dtype and compute dtype it takes, one split and several.
grid_cases: the launches the GPU tuners try (tune_paged_decode.py, tune_states_decode.py).
"""

from __future__ import annotations

import itertools

import torch

from scriba.kernels.fp8_rows import quantize_rows_fp8_triton
from scriba.kernels.kv8 import FP8, new_kv_scales, packed_view
from scriba.kernels.kv_cache import write_kv_cache_triton
from scriba.kernels.paged_attention import paged_decode_attention_triton
from scriba.kernels.paged_states_triton import attend_states_triton

HEADS, HEAD_DIM, LENGTH, BLOCK, SEQS = 20, 64, 1500, 16, 2
D_MODEL = HEADS * HEAD_DIM
FLOATS = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
CACHES = [*FLOATS, "fp8", "int8", "int4"]
# Engine launches that spill registers, and why that is let be (every other one must not spill):
ACCEPTED_SPILLS = {
    "states int8": "~450 bytes a thread: int8 codes converted one by one; fp8 states are the fast 8 bits",
}


def paged(
    kind: str, heads: int = HEADS
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """(cache [2, blocks, BLOCK, heads, head_dim] of this kind, its scales or None, tables, lens):
    SEQS sequences of LENGTH positions, as the engine holds them (int4: packed_view of an int8 cache)."""
    per_seq = -(-LENGTH // BLOCK)
    blocks = SEQS * per_seq + 1
    shape = (2, blocks, BLOCK, heads, HEAD_DIM)
    if kind in FLOATS:
        cache, scales = torch.zeros(shape, dtype=FLOATS[kind]), None
    else:
        dtype = {"fp8": FP8, "int8": torch.int8, "int4": torch.int8}[kind]
        cache, scales = torch.zeros(shape, dtype=dtype), new_kv_scales(blocks, BLOCK, heads)
        cache = packed_view(cache) if kind == "int4" else cache
    tables = torch.arange(SEQS * per_seq, dtype=torch.int32).view(SEQS, per_seq) + 1
    return cache, scales, tables, torch.full((SEQS,), LENGTH, dtype=torch.int32)


def compute_dtype(kind: str) -> torch.dtype:
    """The queries' dtype over a cache of this kind (a quantized cache's: float16)."""
    return FLOATS.get(kind, torch.float16)


def write_case(kind: str):
    cache, scales, _, _ = paged(kind)
    k = torch.zeros(64, HEADS, HEAD_DIM, dtype=compute_dtype(kind))
    slots = torch.arange(64, dtype=torch.int64)
    return lambda: write_kv_cache_triton(k, k.clone(), cache, slots, scales)


def decode_case(kind: str, launch: dict | None = None, splits: int | None = None):
    cache, scales, tables, lens = paged(kind)
    q = torch.zeros(SEQS, HEADS, HEAD_DIM, dtype=compute_dtype(kind))
    return lambda: paged_decode_attention_triton(
        q, cache, tables, lens, 0.125, num_splits=splits, launch=launch, kv_scales=scales
    )


def states_case(kind: str, launch: dict | None = None, splits: int | None = None, heads: int = HEADS):
    """The states in the K half (8-bit: a scale a row, in each head's slot), queries d_model wide."""
    cache, scales, tables, lens = paged(kind, heads)
    queries = torch.zeros(SEQS, heads, heads * HEAD_DIM, dtype=compute_dtype(kind))
    row_scales = None if scales is None else scales[0]
    return lambda: attend_states_triton(queries, cache[0], tables, lens, 0.125, row_scales, splits, launch)


def engine_cases() -> list[tuple[str, object]]:
    """The engine's launches: LAUNCH's defaults, planned splits and one split."""
    cases = [(f"write {kind}", write_case(kind)) for kind in CACHES]
    for kind, splits in itertools.product(CACHES, (None, 1)):
        cases.append((f"decode {kind} splits {splits or 'planned'}", decode_case(kind, splits=splits)))
    for kind in ("float16", "fp8"):
        cases.append((f"decode {kind} two_pass", decode_case(kind, dict(two_pass=True))))
    for two_pass in (False, True):
        launch = dict(int_scores=True, two_pass=two_pass)
        cases.append((f"decode int4 int_scores two_pass={two_pass}", decode_case("int4", launch)))
    for kind, splits in itertools.product([*FLOATS, "fp8", "int8"], (None, 1)):
        cases.append((f"states {kind} splits {splits or 'planned'}", states_case(kind, splits=splits)))
    for heads in (
        6,
        8,
        12,
        16,
    ):  # Whisper tiny's d_model 384 (2 + 1 slices), base's 512, small's 768, medium's
        cases.append((f"states float16 d_model {heads * HEAD_DIM}", states_case("float16", heads=heads)))
    for dtype, cols in itertools.product((torch.float16, torch.float32), (D_MODEL, 4 * D_MODEL)):
        x = torch.zeros(64, cols, dtype=dtype)
        cases.append((f"fp8 rows {str(dtype)[6:]} x {cols}", lambda x=x: quantize_rows_fp8_triton(x)))
    return cases


def grid_cases() -> list[tuple[str, object]]:
    """The tuners' launches (on a GPU each is timed; here each compiles, or not)."""
    from tune_paged_decode import launches
    from tune_states_decode import GRID

    cases = []
    for kind in ("float16", "fp8", "int4"):
        for launch, splits in launches(kind):
            cases.append((f"decode {kind} {launch} splits {splits}", decode_case(kind, launch, splits)))
    for kind, values in itertools.product(("float16", "fp8"), itertools.product(*GRID.values())):
        launch = dict(zip(GRID, values))
        cases.append((f"states {kind} {launch}", states_case(kind, launch)))
    return cases
