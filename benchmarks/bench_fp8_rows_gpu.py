"""The fp8 row quantizer (kernels/fp8_rows.py) on a GPU at the shapes of whisper-large-v3's encoder
feed-forward inputs in one admission wave (10 windows of 1,500 positions: fc1 reads 1,280 columns,
fc2 5,120), float16: microseconds a call and the bytes moved per second (the row read once, its
codes written), beside torch's form of the same arithmetic (kv8.quantize).

    python benchmarks/bench_fp8_rows_gpu.py [--rows 15000]
"""

from __future__ import annotations

import argparse

import torch

from scriba.kernels.fp8_rows import quantize_rows_fp8_triton
from scriba.kernels.kv8 import FP8, quantize


def microseconds(fn, calls: int = 50) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=15000)
    args = parser.parse_args()
    print(f"# fp8 row quantizer on {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| columns | Triton kernel | GB/s | torch (kv8.quantize) | GB/s |")
    print("| --- | --- | --- | --- | --- |")
    for cols in (1280, 5120):
        x = torch.randn(args.rows, cols, device="cuda", dtype=torch.float16)
        moved = x.numel() * 3  # float16 read once, one byte of code written
        kernel = microseconds(lambda: quantize_rows_fp8_triton(x))
        reference = microseconds(lambda: quantize(x, FP8))
        print(
            f"| {cols} | {kernel:.1f} us | {moved / kernel / 1e3:.0f} | {reference:.1f} us"
            f" | {moved / reference / 1e3:.0f} |"
        )


if __name__ == "__main__":
    main()
