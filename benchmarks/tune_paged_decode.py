"""Launch settings of the Triton paged decode kernel on this GPU: Whisper large's cross
attention (1500 positions, 20 heads of 64) and a short self-attention context, at batch 64
and 256. Prints time, achieved K/V read bandwidth and the error against the torch reference.

    python benchmarks/tune_paged_decode.py   # on a GPU
"""

from __future__ import annotations

import itertools

import torch
import triton

from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton


def case(seqs: int, length: int, heads=20, dim=64, block=16, dtype=torch.float16):
    per_seq = -(-length // block)
    cache = torch.randn(2, seqs * per_seq + 1, block, heads, dim, device="cuda", dtype=dtype)
    tables = (
        torch.randperm(seqs, device="cuda")[:, None] * per_seq + torch.arange(per_seq, device="cuda")
    ).int() + 1
    lens = torch.full((seqs,), length, dtype=torch.int32, device="cuda")
    q = torch.randn(seqs, heads, dim, device="cuda", dtype=dtype)
    return q, cache, tables, lens


def main() -> None:
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    rows = []
    for seqs, length in [(64, 1500), (256, 1500), (64, 80)]:
        q, cache, tables, lens = case(seqs, length)
        ref = paged_decode_attention_ref(q.float(), cache.float(), tables, lens, 0.125)
        nbytes = 2 * seqs * length * q.shape[1] * q.shape[2] * q.element_size()
        configs = itertools.product([64, 128, 256], [4, 8], [2, 3, 4], [None, 2])
        for tile, warps, stages, splits in configs:
            launch = dict(tile=tile, num_warps=warps, num_stages=stages)
            run = lambda: paged_decode_attention_triton(  # noqa: E731
                q, cache, tables, lens, 0.125, num_splits=splits, launch=launch
            )
            try:
                err = (run().float() - ref).abs().max().item()
                ms = triton.testing.do_bench(run, warmup=20, rep=100, return_mode="median")
            except Exception as e:  # noqa: BLE001 - a setting the compiler refuses
                print(f"seqs {seqs} len {length} {launch} splits {splits}: {type(e).__name__}")
                continue
            rows.append((seqs, length, tile, warps, stages, splits, ms, nbytes / ms / 1e6, err))
    for seqs, length in [(64, 1500), (256, 1500), (64, 80)]:
        mine = sorted((r for r in rows if r[:2] == (seqs, length)), key=lambda r: r[6])
        default = [r for r in mine if r[2:6] == (64, 4, 3, None)]
        print(
            f"\n## {seqs} seqs x {length} positions: best 8 of {len(mine)}; default {default[0][6] * 1e3:.1f} us"
            if default
            else ""
        )
        for r in mine[:8]:
            print(
                f"tile {r[2]:3d} warps {r[3]} stages {r[4]} splits {r[5]}: {r[6] * 1e3:8.1f} us {r[7]:6.0f} GB/s err {r[8]:.1e}"
            )


if __name__ == "__main__":
    main()
