"""Does the audio encoder overlap the decode on one GPU? The question that decides the engine's next
design for GPU.md's RTFx targets (benchmarks/NOTES.md, sessions 22-23): the encoder is compute-bound
(matrix products), a decode step memory-bound (every sequence's cross K/V read), and one after the
other they bound RTFx near 1,740 at batch 256. Run on two CUDA streams at once, how much of the
shorter one hides under the longer?

Two graphs on whisper-large-v3's shape, random float16 weights: the encoder's 32 layers over
`--windows` windows (what one admitting step encodes), and `--steps` decode steps' cross attention
(32 calls a step of Scriba's Triton paged decode over `--seqs` x 1,500 positions). Timed alone,
one after the other on one stream, and at once on two streams, the encoder's products with none
or some of the SMs carved out for the decode (cuBLAS's SM count target, PyTorch's
`_set_sm_carveout_experimental`).

    python benchmarks/bench_overlap_gpu.py [--carveouts 0,16,32] [--out FILE]

overlap = (alone + alone - at once) / the shorter alone: 1 hides it entirely, 0 not at all.
Without a GPU it runs a small shape one stream only, with the torch reference decode (a smoke
test of the script only).
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch
import torch.nn.functional as F

from scriba.kernels.paged_attention import paged_decode_attention_ref, paged_decode_attention_triton

LARGE = dict(layers=32, d_model=1280, heads=20, ffn=5120, positions=1500)
SMALL = dict(layers=2, d_model=64, heads=2, ffn=128, positions=60)  # the CPU smoke test
BLOCK = 16


def encoder_layers(shape: dict, device, dtype) -> list[dict[str, torch.Tensor]]:
    """Random weights of the encoder layers: fused QKV, out, fc1, fc2 (no norms' parameters:
    their cost is the same without)."""
    d, f = shape["d_model"], shape["ffn"]
    sizes = {"qkv": (3 * d, d), "out": (d, d), "fc1": (f, d), "fc2": (d, f)}
    new = lambda rows, cols: torch.randn(rows, cols, device=device, dtype=dtype) / cols**0.5  # noqa: E731
    return [
        {name: new(*size) for name, size in sizes.items()} | {"bias": new(1, f).view(f)}
        for _ in range(shape["layers"])
    ]


def encoder(x: torch.Tensor, layers: list[dict], shape: dict) -> torch.Tensor:
    """x [windows, positions, d_model] through pre-norm transformer layers as Whisper's."""
    windows, positions, d = x.shape
    heads = shape["heads"]
    for w in layers:
        h = F.layer_norm(x, (d,))
        q, k, v = F.linear(h, w["qkv"]).view(windows, positions, 3, heads, -1).unbind(2)
        context = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)))
        x = x + F.linear(context.transpose(1, 2).reshape(windows, positions, d), w["out"])
        h = F.gelu(F.linear(F.layer_norm(x, (d,)), w["fc1"], w["bias"]))
        x = x + F.linear(h, w["fc2"])
    return x


def decode_inputs(shape: dict, seqs: int, device, dtype):
    """(q, cross cache, block tables, lengths): every sequence's 1,500 positions, one run each."""
    heads, dim, length = shape["heads"], shape["d_model"] // shape["heads"], shape["positions"]
    per_seq = -(-length // BLOCK)
    cache = torch.randn(2, seqs * per_seq, BLOCK, heads, dim, device=device, dtype=dtype)
    tables = (
        torch.arange(seqs, device=device)[:, None] * per_seq + torch.arange(per_seq, device=device)
    ).int()
    lens = torch.full((seqs,), length, dtype=torch.int32, device=device)
    return torch.randn(seqs, heads, dim, device=device, dtype=dtype), cache, tables, lens


def decode(inputs, shape: dict, steps: int) -> torch.Tensor:
    """`steps` decode steps' cross attention: one paged decode a layer (every layer reads the one
    cache: it is ~2 GB a layer at batch 256, far beyond L2, so the bytes read are the same)."""
    q, cache, tables, lens = inputs
    attend = paged_decode_attention_triton if q.is_cuda else paged_decode_attention_ref
    for _ in range(steps * shape["layers"]):
        q = attend(q, cache, tables, lens, 0.125)
    return q


def graphed(fn):
    """fn captured in a CUDA graph (replay: no host launches in the timing); eager on the CPU."""
    if not torch.cuda.is_available():
        return fn
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # compiles Triton, picks cuBLAS algorithms
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def seconds(fn, repeats: int = 5) -> float:
    """Median wall seconds of fn(), the device idle at both ends."""
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def at_once(first, second, second_first: bool = False):
    """Both on streams of their own, launched together; `second_first`: the second's stream has
    the higher priority (the block scheduler starts its waiting blocks first as SMs free up)."""
    if not torch.cuda.is_available():
        return lambda: (first(), second())
    streams = torch.cuda.Stream(), torch.cuda.Stream(priority=-1 if second_first else 0)

    def run():
        for stream, fn in zip(streams, (first, second)):
            with torch.cuda.stream(stream):
                fn()

    return run


@contextlib.contextmanager
def carveout(sms: int):
    """cuBLAS leaves `sms` SMs free (it reads the target when a product is planned: capture inside)."""
    if not sms:
        yield
        return
    torch._C._set_sm_carveout_experimental(sms)
    try:
        yield
    finally:
        torch._C._set_sm_carveout_experimental(None)


def measure(shape: dict, windows: int, seqs: int, steps: int, sms: int, device, dtype) -> dict:
    torch.manual_seed(0)
    layers = encoder_layers(shape, device, dtype)
    x = torch.randn(windows, shape["positions"], shape["d_model"], device=device, dtype=dtype)
    inputs = decode_inputs(shape, seqs, device, dtype)
    with carveout(sms):
        run_encoder = graphed(lambda: encoder(x, layers, shape))
    run_decode = graphed(lambda: decode(inputs, shape, steps))
    enc, dec = seconds(run_encoder), seconds(run_decode)
    serial = seconds(lambda: (run_encoder(), run_decode()))
    both = seconds(at_once(run_encoder, run_decode))
    urgent = seconds(at_once(run_encoder, run_decode, second_first=True))
    hidden = lambda t: (enc + dec - t) / min(enc, dec)  # noqa: E731
    return dict(
        enc=enc,
        dec=dec,
        serial=serial,
        both=both,
        urgent=urgent,
        overlap=hidden(both),
        urgent_overlap=hidden(urgent),
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=10)
    parser.add_argument("--seqs", type=int, default=256)
    parser.add_argument(
        "--steps", type=int, default=3, help="decode steps against one admitting step's encoder"
    )
    parser.add_argument("--carveouts", default="0,16,32", help="SMs cuBLAS leaves free for the decode")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    device, dtype, shape = ("cuda", torch.float16, LARGE) if cuda else ("cpu", torch.float32, SMALL)
    name = torch.cuda.get_device_name() if cuda else "CPU (smoke test: one stream, small shape)"
    lines = [f"# encoder and decode at once on {name}, torch {torch.__version__}", f"{vars(args)}"]
    lines.append(
        "| SMs carved out | encoder alone | decode alone | one stream | two streams (overlap) "
        "| two, the decode's first (overlap) |"
    )
    lines.append("| --- | --- | --- | --- | --- | --- |")
    carveouts = [int(s) for s in args.carveouts.split(",")] if cuda else [0]
    if not hasattr(torch._C, "_set_sm_carveout_experimental"):  # PyTorch before 2.6
        lines.append("(this PyTorch has no SM carveout for cuBLAS: 0 only)")
        carveouts = [0]
    for sms in carveouts:
        r = measure(shape, args.windows, args.seqs, args.steps, sms, device, dtype)
        ms = {k: f"{r[k] * 1e3:.2f} ms" for k in ("enc", "dec", "serial", "both", "urgent")}
        lines.append(
            f"| {sms} | {ms['enc']} | {ms['dec']} | {ms['serial']} | {ms['both']} ({r['overlap']:.2f}) "
            f"| {ms['urgent']} ({r['urgent_overlap']:.2f}) |"
        )
        print(lines[-1], flush=True)
        if cuda:  # the last carveout's graphs and cache are gone: their memory back before the next
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
