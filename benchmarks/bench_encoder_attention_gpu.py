"""The audio encoder's attention on a GPU: every window has the same length (Whisper: 1,500), so
besides the packed varlen flash kernel the engine runs today, dense SDPA over [windows, heads,
positions, head_dim] may use any backend (flash, memory-efficient, cuDNN). Times each on the
large-v3 shape (20 heads of 64) at the window counts one step admits, and checks each against the
varlen kernel's output.

    python benchmarks/bench_encoder_attention_gpu.py [--windows 1,10] [--out FILE]

Without a GPU it runs a small shape on the CPU's SDPA (a smoke test of the script only).
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "sdpa flash": SDPBackend.FLASH_ATTENTION,
    "sdpa cudnn": SDPBackend.CUDNN_ATTENTION,
    "sdpa efficient": SDPBackend.EFFICIENT_ATTENTION,
}


def timed_ms(fn, repeats: int) -> float:
    """Median milliseconds of fn() on the current device (CUDA events; wall clock on the CPU)."""
    fn()
    if not torch.cuda.is_available():
        import time

        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return sorted(times)[len(times) // 2]
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def varlen(q, k, v, cu, length: int, scale: float) -> torch.Tensor:  # packed [windows * length, heads, dim]
    if q.is_cuda:
        return torch.ops.aten._flash_attention_forward(
            q, k, v, cu, cu, length, length, 0.0, False, False, scale=scale
        )[0]
    dense = [t.view(-1, length, *t.shape[1:]).transpose(1, 2) for t in (q, k, v)]
    return F.scaled_dot_product_attention(*dense, scale=scale).transpose(1, 2).reshape(q.shape)


def one_shape(windows: int, heads: int, length: int, dim: int, repeats: int) -> list[str]:
    device, dtype = ("cuda", torch.float16) if torch.cuda.is_available() else ("cpu", torch.float32)
    q, k, v = (torch.randn(windows * length, heads, dim, device=device, dtype=dtype) for _ in range(3))
    cu = torch.arange(windows + 1, device=device, dtype=torch.int32) * length
    scale = dim**-0.5
    flops = 4 * windows * heads * length * length * dim
    reference = varlen(q, k, v, cu, length, scale)
    ms = timed_ms(lambda: varlen(q, k, v, cu, length, scale), repeats)
    lines = [f"windows {windows}: varlen flash (today) {ms:8.3f} ms  {flops / ms / 1e9:6.1f} TFLOP/s"]
    # [windows, heads, length, dim] views of the packed rows (the projections' layout, no copy)
    dense = [t.view(windows, length, heads, dim).transpose(1, 2) for t in (q, k, v)]
    for name, backend in BACKENDS.items() if q.is_cuda else []:
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(*dense, scale=scale)
                ms = timed_ms(lambda: F.scaled_dot_product_attention(*dense, scale=scale), repeats)
        except RuntimeError as error:
            lines.append(f"windows {windows}: {name:18s} unavailable: {str(error).splitlines()[0][:80]}")
            continue
        err = (out.transpose(1, 2).reshape(reference.shape) - reference).abs().max().item()
        lines.append(
            f"windows {windows}: {name:18s} {ms:8.3f} ms  {flops / ms / 1e9:6.1f} TFLOP/s"
            f"  max abs diff from varlen {err:.1e}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", default="1,10")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    gpu = torch.cuda.is_available()
    heads, length, dim = (20, 1500, 64) if gpu else (2, 150, 64)
    name = torch.cuda.get_device_name() if gpu else "CPU (smoke test, float32, a small shape)"
    lines = [
        f"# encoder attention on {name}: torch {torch.__version__}, {heads} heads x {length} x {dim}",
        f"command: python {' '.join(sys.argv)}",
    ]
    for windows in map(int, args.windows.split(",")):
        lines += one_shape(windows, heads, length, dim, args.repeats)
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
