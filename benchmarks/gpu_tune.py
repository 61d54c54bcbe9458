"""Launch settings of the Triton paged decode kernel on this GPU: Whisper large's cross attention
(1500 positions, 20 heads of 64) and a short self-attention context, at batch 64 and 256, over a
float16 and an fp8 cache, with the grid's sequences or heads first. Prints time, achieved K/V read
bandwidth and the error against the torch reference, and the fastest launch of each case: adopting
one means changing kernels/paged_decode_plan.DEFAULT_LAUNCH (the kernel takes a tuner's candidates
as its `launch` argument; nothing global changes).

    python -m benchmarks gpu-tune [--kinds float16,fp8] [--out FILE]   # on a GPU
    python -m benchmarks gpu-tune --smoke                              # tiny case, the interpreter
"""

from __future__ import annotations

import itertools
import os
import time

import torch

from benchmarks.report import Report, suite_parser

CASES = [(64, 1500, "float16"), (256, 1500, "float16"), (64, 80, "float16"), (256, 1500, "fp8")]


def case(seqs: int, length: int, kind: str, device: str, heads=20, dim=64, block=16):
    """(q, cache, tables, lens, scales or None): each sequence's blocks one run, in shuffled order."""
    from scriba.kernels.kv8 import FP8, quantize

    dtype = torch.float16 if device == "cuda" else torch.float32
    per_seq = -(-length // block)
    cache = torch.randn(2, seqs * per_seq + 1, block, heads, dim, device=device, dtype=dtype)
    scales = None
    if kind == "fp8":
        cache, scales = quantize(cache, FP8)
    offsets = torch.randperm(seqs, device=device)[:, None] * per_seq
    tables = (offsets + torch.arange(per_seq, device=device)).int() + 1
    lens = torch.full((seqs,), length, dtype=torch.int32, device=device)
    q = torch.randn(seqs, heads, dim, device=device, dtype=dtype)
    return q, cache, tables, lens, scales


def launches(kind: str, smoke: bool) -> list[tuple[dict, int | None]]:
    """(the kernel's launch, splits or None: planned) tried for a cache of this kind."""
    if smoke:
        return [(dict(tile=16, heads_first=True), None), (dict(tile=32, heads_first=False), 2)]
    tiles, orders = ([32, 64], [True]) if kind != "float16" else ([32, 64, 128], [False, True])
    configs = itertools.product(tiles, [4, 8], [None, 2], orders)
    return [
        (dict(tile=tile, num_warps=warps, num_stages=3, heads_first=heads_first), splits)
        for tile, warps, splits, heads_first in configs
    ]


def timed(run, device: str) -> float:
    """Milliseconds a call (median, on a GPU through Triton's do_bench)."""
    if device == "cuda":
        import triton

        return triton.testing.do_bench(run, warmup=20, rep=100, return_mode="median")
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1e3


def measure(seqs: int, length: int, kind: str, device: str, smoke: bool) -> list[tuple]:
    from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton

    q, cache, tables, lens, scales = case(seqs, length, kind, device, heads=2 if smoke else 20)
    ref = paged_decode_attention_ref(
        q.float(), cache if scales is not None else cache.float(), tables, lens, 0.125, kv_scales=scales
    )
    nbytes = 2 * seqs * length * q.shape[1] * cache.shape[-1] * cache.element_size()
    rows = []
    for launch, splits in launches(kind, smoke):
        def run():
            return paged_decode_attention_triton(
                q, cache, tables, lens, 0.125, num_splits=splits, launch=launch, kv_scales=scales
            )

        err = (run().float() - ref).abs().max().item()
        ms = timed(run, device)
        rows.append((launch, splits, ms, nbytes / ms / 1e6, err))
    return rows


def main(argv: list[str]) -> int:
    parser = suite_parser("gpu-tune", __doc__)
    parser.add_argument("--kinds", default="float16,fp8", help="the caches to time")
    parser.add_argument("--smoke", action="store_true", help="one tiny case on the CPU, Triton interpreted")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.smoke:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # read when Triton is first imported
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    say = Report("gpu-tune", argv)
    cases = [(2, 40, "fp8")] if args.smoke else [c for c in CASES if c[2] in args.kinds.split(",")]
    for seqs, length, kind in cases:
        rows = sorted(measure(seqs, length, kind, device, args.smoke), key=lambda r: r[2])
        say(f"\n## {seqs} seqs x {length} positions, {kind} cache: best 8 of {len(rows)}")
        for launch, splits, ms, gbs, err in rows[:8]:
            say(f"{launch} splits {splits}: {ms * 1e3:8.1f} us {gbs:6.0f} GB/s err {err:.1e}")
        if max(r[4] for r in rows) > 1e-2:
            say("a launch's output differs from the reference by more than 1e-2")
            return 1
    say.save(args.out)
    return 0
