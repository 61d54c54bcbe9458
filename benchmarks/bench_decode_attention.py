"""Decode attention on this CPU at Whisper's cross-attention size: the torch path against the
numba kernel, over a float32 and a bfloat16 cache.

    python benchmarks/bench_decode_attention.py [--seqs 17] [--heads 6] [--out FILE]

Each of 4 layers has its own cache (as in a decode step: what one layer read is out of the CPU's
caches when it is read again), holding `seqs` contexts of 1,500 positions as cross-attention's
runs of blocks. Prints the milliseconds per layer of: SDPA on the float32 cache (the torch path,
`paged_decode_attention_ref`), the numba kernel (`paged_decode_attention_cpu`) on the float32 and
on the bfloat16 cache, and a plain sum over the float32 K and V (what reading them costs), with
the rate each reads the float32 bytes at.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from machine import cpu_name
from results_file import save_lines

from scriba.kernels.context_reads import group_context_reads
from scriba.kernels.cpu_paged_attention import paged_decode_attention_cpu
from scriba.kernels.kv_cache import new_kv_cache
from scriba.kernels.paged_attention import paged_decode_attention_ref

POSITIONS, BLOCK, DIM, LAYERS = 1500, 16, 64, 4


def per_layer_ms(run, caches, rounds: int = 40) -> float:
    for cache in caches * 2:  # warm-up (and numba's compilation)
        run(cache)
    start = time.perf_counter()
    for _ in range(rounds):
        for cache in caches:
            run(cache)
    return (time.perf_counter() - start) / rounds / len(caches) * 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seqs", type=int, default=17)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    seqs, heads = args.seqs, args.heads
    blocks = -(-POSITIONS // BLOCK)
    torch.manual_seed(0)
    f32 = [new_kv_cache(seqs * blocks, BLOCK, heads, DIM, head_major=True).normal_() for _ in range(LAYERS)]
    bf16 = [c.bfloat16() for c in f32]
    tables = torch.arange(seqs * blocks, dtype=torch.int32).view(seqs, blocks)
    lens = torch.full((seqs,), POSITIONS, dtype=torch.int32)
    reads = group_context_reads(tables.tolist(), lens.tolist(), BLOCK)
    q, scale = torch.randn(seqs, heads, DIM), DIM**-0.5
    gigabytes = 2 * seqs * POSITIONS * heads * DIM * 4 / 1e9  # K and V in float32
    rows = {
        "SDPA, float32 cache (torch path)": per_layer_ms(
            lambda c: paged_decode_attention_ref(q, c, tables, lens, scale, reads), f32
        ),
        "numba, float32 cache": per_layer_ms(
            lambda c: paged_decode_attention_cpu(q, c, tables, lens, scale), f32
        ),
        "numba, bfloat16 cache": per_layer_ms(
            lambda c: paged_decode_attention_cpu(q, c, tables, lens, scale), bf16
        ),
        "sum of float32 K and V (a read)": per_layer_ms(lambda c: c[:, : seqs * blocks].sum(), f32),
    }
    lines = [
        f"# python benchmarks/bench_decode_attention.py {' '.join(argv or sys.argv[1:])}".rstrip(),
        f"# {cpu_name()}; torch {torch.__version__}, {torch.get_num_threads()} threads",
        f"# {seqs} contexts of {POSITIONS} positions, {heads} heads of {DIM}, {LAYERS} layers in turn",
    ]
    for name, ms in rows.items():
        lines.append(f"  {name:<36} {ms:6.2f} ms a layer  ({gigabytes / ms * 1e3:5.1f} GB/s of float32)")
    print("\n".join(lines))
    save_lines(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
