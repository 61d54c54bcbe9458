"""The cross-attention read through the encoder states (EngineConfig.cross_cache="states",
kernels/paged_states_triton.py) against the paged decode of each layer's projected K/V, on this
GPU: Whisper large's shape (1500 positions, 20 heads of 64, d_model 1280), float16 and fp8 states
(a scale a row), batch 64 and 256. Times one layer's read (the states kernel alone, and with the
query's absorption and the context's projection), its bytes per second, the error against the
torch form, over LAUNCH's grid (tile, rows, warps, stages); `--best-out` writes the
fastest launch at the largest batch (a file a kind where its name has "{kind}").

    python benchmarks/tune_states_decode.py [--best-out best.json]   # on a GPU
"""

from __future__ import annotations

import argparse
import itertools
import json

import torch
import triton

from scriba.kernels import paged_states_triton as states_attention
from scriba.kernels.kv8 import FP8, quantize
from scriba.kernels.paged_attention import paged_decode_attention_triton
from scriba.kernels.paged_states_attention import attend_states_ref, states_decode_attention
from scriba.kernels.paged_states_triton import attend_states_triton

DEVICE = "cuda"  # (the tests run it on CPU tensors in Triton's interpreter, at a tiny shape)
HEADS, HEAD_DIM, LENGTH, BLOCK = 20, 64, 1500, 16
D_MODEL = HEADS * HEAD_DIM
# Compiled for sm_90 with `compile_for_gpu.py --grid --model`, the launches of 32 rows or 4 warps
# spill registers, in float16 and fp8, and tiles of 64 need more shared memory than an SM has in
# Triton 3.6 (the GPU machine's). What fails on the GPU is reported and skipped.
GRID = dict(tile=(16, 32), rows=(16,), num_warps=(8,), num_stages=(1, 2, 3))


def case(seqs: int, kind: str):
    """(queries [seqs, heads, d_model], cache [2, blocks, block, heads, head_dim] whose K half holds
    the states, their scales [blocks, block, heads] (fp8: one a row) or None, tables, lens): each
    sequence's blocks one run, the runs in shuffled order."""
    per_seq = -(-LENGTH // BLOCK)
    cache = torch.randn(2, seqs * per_seq + 1, BLOCK, HEADS, HEAD_DIM, device=DEVICE, dtype=torch.float16)
    scales = None
    if kind == "fp8":
        codes, row_scale = quantize(cache.flatten(3), FP8)  # [2, blocks, block, d_model], [2, blocks, block]
        cache, scales = codes.view(cache.shape), row_scale[0, ..., None].expand(-1, -1, HEADS).contiguous()
    order = torch.randperm(seqs, device=DEVICE)[:, None] * per_seq
    tables = (order + torch.arange(per_seq, device=DEVICE)).int() + 1
    lens = torch.full((seqs,), LENGTH, dtype=torch.int32, device=DEVICE)
    queries = torch.randn(seqs, HEADS, D_MODEL, device=DEVICE, dtype=torch.float16) / HEAD_DIM
    return queries, cache, scales, tables, lens


def timed(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=60) * 1e-3


def measure(seqs: int, kind: str) -> list[tuple[dict, float, float]]:
    """(launch, seconds, max error) of every launch in GRID that compiles and runs."""
    queries, cache, scales, tables, lens = case(seqs, kind)
    states = cache[0] if scales is not None else cache[0].float()
    ref = attend_states_ref(queries.float(), states, tables, lens, 0.125, scales)
    rows = []
    for values in itertools.product(*GRID.values()):
        launch = dict(zip(GRID, values))

        def run(launch=launch):
            return attend_states_triton(queries, cache[0], tables, lens, 0.125, scales, launch=launch)

        try:
            error = (run().float() - ref).abs().max().item()
            rows.append((launch, timed(run), error))
            print(
                f"  ran {launch}: {rows[-1][1] * 1e6:.1f} us", flush=True
            )  # (a stage's timeout keeps these)
        except Exception as e:  # noqa: BLE001 (out of shared memory or registers: that launch cannot run)
            print(f"  {launch}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    return rows


def layer_costs(seqs: int, kind: str, launch: dict) -> dict[str, float]:
    """Seconds of one layer's cross-attention read: the states way, whole and the kernel alone, and
    the projected K/V's paged decode over a cache of the same kind (twice the bytes)."""
    queries, cache, scales, tables, lens = case(seqs, kind)
    q = torch.randn(seqs, HEADS, HEAD_DIM, device=DEVICE, dtype=torch.float16)
    weight = torch.randn(2 * D_MODEL, D_MODEL, device=DEVICE, dtype=torch.float16) / D_MODEL**0.5
    bias = torch.randn(2 * D_MODEL, device=DEVICE, dtype=torch.float16)
    states_attention.LAUNCH.update(launch)
    attend = states_attention.attend_states_triton
    kv_scales = None if scales is None else torch.stack([scales, scales])
    head_scales = None if scales is None else torch.ones_like(kv_scales)  # (the projected cache's: per head)
    return {
        "states kernel": timed(lambda: attend_states_triton(queries, cache[0], tables, lens, 0.125, scales)),
        "states, with the projections": timed(
            lambda: states_decode_attention(q, cache, weight, bias, tables, lens, 0.125, attend, kv_scales)
        ),
        f"projected K/V ({kind} paged decode)": timed(
            lambda: paged_decode_attention_triton(q, cache, tables, lens, 0.125, kv_scales=head_scales)
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--kinds", default="float16,fp8", help="the states' cache: float16, fp8")
    parser.add_argument(
        "--best-out",
        help='write the fastest launch at the largest batch here (JSON; "{kind}" in it: a file a kind)',
    )
    args = parser.parse_args(argv)
    default = dict(states_attention.LAUNCH)
    device = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU tensors, Triton's interpreter"
    print(f"# {device}, triton {triton.__version__}; LAUNCH {default}")
    batches = [int(b) for b in args.batches.split(",")]
    for kind, seqs in itertools.product(args.kinds.split(","), batches):
        rows = sorted(measure(seqs, kind), key=lambda r: r[1])
        states_bytes = seqs * LENGTH * D_MODEL * (2 if kind == "float16" else 1)
        print(f"## {kind} states, batch {seqs}: {len(rows)} launches ran; {states_bytes / 1e9:.2f} GB read")
        for launch, seconds, error in rows[:12]:
            rate = states_bytes / seconds / 1e12
            print(f"  {launch}: {seconds * 1e6:8.1f} us  {rate:5.2f} TB/s  err {error:.1e}")
        if not rows:
            continue
        for what, seconds in layer_costs(seqs, kind, rows[0][0]).items():
            print(f"  one layer, {what}: {seconds * 1e6:.1f} us")
        states_attention.LAUNCH.update(default)
        if args.best_out and seqs == max(batches):
            path = args.best_out.format(kind=kind)
            with open(path, "w") as f:
                json.dump(rows[0][0], f)
            print(f"  best launch -> {path}: {rows[0][0]}")


if __name__ == "__main__":
    main()
