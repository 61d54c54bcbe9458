"""Launch settings of the Triton paged decode kernel on this GPU: Whisper large's cross
attention (1500 positions, 20 heads of 64) and a short self-attention context, at batch 64
and 256, over a float16 cache, an fp8 one and a 4-bit one, with the grid's sequences or heads first
(LAUNCH's `heads_first`). Prints time, achieved K/V read bandwidth and the error against the
torch reference; `--best-out` writes the fastest tile and grid order of the 256 x 1500 case of
`--best-kind`'s cache (float16 by default) and whether in two passes (LAUNCH's `two_pass`), its
warps left to the engine's rule (int4: its warps too, and LAUNCH's `int_scores`).

    python benchmarks/tune_paged_decode.py [--best-out best.json]   # on a GPU
"""

from __future__ import annotations

import argparse
import itertools
import json

import torch
import triton

from scriba.kernels.kv8 import FP8, PACKED4, pack4, packed_view, quantize
from scriba.kernels.paged_attention import (
    paged_decode_attention_ref,
    paged_decode_attention_triton,
)
from scriba.kernels.paged_decode_plan import resolve_launch

CASES = [
    (64, 1500, "float16"),
    (256, 1500, "float16"),
    (64, 80, "float16"),
    (256, 1500, "fp8"),
    (256, 1500, "int4"),
]


def case(seqs: int, length: int, kind: str, heads=20, dim=64, block=16):
    """(q, cache, tables, lens, scales or None): each sequence's blocks one run, in shuffled order."""
    per_seq = -(-length // block)
    cache = torch.randn(2, seqs * per_seq + 1, block, heads, dim, device="cuda", dtype=torch.float16)
    scales = None
    if kind == "fp8":
        cache, scales = quantize(cache, FP8)
    if kind == "int4":  # as the engine holds it: the packed_view of an int8 cache (strided)
        codes, scales = quantize(cache, PACKED4)
        cache = packed_view(torch.zeros_like(codes))
        cache.copy_(pack4(codes))
    tables = (
        torch.randperm(seqs, device="cuda")[:, None] * per_seq + torch.arange(per_seq, device="cuda")
    ).int() + 1
    lens = torch.full((seqs,), length, dtype=torch.int32, device="cuda")
    q = torch.randn(seqs, heads, dim, device="cuda", dtype=torch.float16)
    return q, cache, tables, lens, scales


def launches(kind: str) -> list[tuple[dict, int | None]]:
    """(LAUNCH's overrides, splits or None: planned) tried for a cache of this kind."""
    quantized = kind != "float16"  # (there heads first and tiles of 32 or 64 always led: H200, s31)
    tiles, orders = ([32, 64], [True]) if quantized else ([32, 64, 128], [False, True])
    integer = [False, True] if kind == "int4" else [False]  # LAUNCH's int_scores
    configs = itertools.product(tiles, [4, 8], [3], [None, 2], orders, integer, [False, True])
    return [
        (dict(tile=tile, num_warps=warps, num_stages=stages, heads_first=heads_first, int_scores=integer,
              two_pass=two_pass), splits)
        for tile, warps, stages, splits, heads_first, integer, two_pass in configs
    ]  # fmt: skip


def measure(seqs: int, length: int, kind: str) -> list[tuple]:
    q, cache, tables, lens, scales = case(seqs, length, kind)
    ref = paged_decode_attention_ref(
        q.float(), cache if scales is not None else cache.float(), tables, lens, 0.125, kv_scales=scales
    )
    nbytes = 2 * seqs * length * q.shape[1] * cache.shape[-1] * cache.element_size()
    rows = []
    for launch, splits in launches(kind):
        run = lambda: paged_decode_attention_triton(  # noqa: E731
            q, cache, tables, lens, 0.125, num_splits=splits, launch=launch, kv_scales=scales
        )
        try:
            err = (run().float() - ref).abs().max().item()
            ms = triton.testing.do_bench(run, warmup=20, rep=100, return_mode="median")
        except Exception as e:  # noqa: BLE001 - a setting the compiler refuses
            print(f"{seqs} x {length} {kind} {launch} splits {splits}: {type(e).__name__}: {e}"[:300])
            continue
        rows.append((launch, splits, ms, nbytes / ms / 1e6, err))
    return rows


def defaults(kind: str) -> dict:
    """LAUNCH as the engine resolves it for this cache."""
    tile, heads_first, options = resolve_launch(None, kind != "float16")
    return {"tile": tile, "heads_first": heads_first, **options}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--best-out",
        help="write the fastest 256 x 1500 launch here (JSON); a path with {kind}: one per cache timed",
    )
    parser.add_argument(
        "--best-kind", default="float16", choices=["float16", "fp8", "int4"], help="its cache"
    )
    parser.add_argument("--kinds", default="float16,fp8,int4", help="the caches to time (of CASES')")
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for seqs, length, kind in (c for c in CASES if c[2] in args.kinds.split(",")):
        rows = sorted(measure(seqs, length, kind), key=lambda r: r[2])
        report(seqs, length, kind, rows)
        planned = [r for r in rows if r[1] is None]  # the engine plans its splits itself
        wanted = args.best_out and ("{kind}" in args.best_out or kind == args.best_kind)
        if wanted and (seqs, length) == (256, 1500) and planned:
            write_best(args.best_out.format(kind=kind), kind, planned[0][0])


def report(seqs: int, length: int, kind: str, rows: list[tuple]) -> None:
    """The 8 fastest launches, the default's time, and the fastest with each setting on and off."""
    default = [r for r in rows if r[1] is None and all(r[0][k] == v for k, v in defaults(kind).items())]
    print(f"\n## {seqs} seqs x {length} positions, {kind} cache: best 8 of {len(rows)}", end="")
    print(f"; default {default[0][2] * 1e3:.1f} us {default[0][3]:.0f} GB/s" if default else "")
    for launch, splits, ms, gbs, err in rows[:8]:
        print(f"{launch} splits {splits}: {ms * 1e3:8.1f} us {gbs:6.0f} GB/s err {err:.1e}")
    for key, value in itertools.product(("heads_first", "int_scores", "two_pass"), (False, True)):
        mine = [r for r in rows if r[0][key] == value]
        if mine and len(mine) < len(rows):
            print(f"best, {key}={value}: {mine[0][0]} splits {mine[0][1]}: {mine[0][2] * 1e3:.1f} us")


def write_best(path: str, kind: str, launch: dict) -> None:
    """The launch's tile, grid order and passes (a quantized cache's warps too; int4's int_scores)."""
    keys = ("tile", "heads_first", "two_pass") + (("num_warps",) if kind != "float16" else ())
    keys += ("int_scores",) if kind == "int4" else ()
    best = {k: launch[k] for k in keys}
    with open(path, "w") as f:
        json.dump(best, f)
    print(f"wrote {best} to {path}")


if __name__ == "__main__":
    main()
