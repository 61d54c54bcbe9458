"""Where Scriba's GPU steps make the host wait: every synchronizing CUDA call (PyTorch's sync debug
mode) during the admission of a batch of 30 s windows and the decode steps after it, grouped by
the Scriba lines that led to it. A tiny random Whisper of the real input shape; a GPU only.

    python benchmarks/find_gpu_syncs.py --batch 16 [--async-scheduling off]
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import traceback
import warnings

import torch
from bench_gpu import make_model

from scriba import Engine, SamplingParams


def scriba_frames(stack) -> str:
    """The innermost Scriba frames of a stack, one 'file:line function' each."""
    ours = [f for f in stack if "/scriba/" in f.filename]
    return " <- ".join(f"{f.filename.split('/scriba/')[-1]}:{f.lineno} {f.name}" for f in ours[::-1][:4])


def run(engine: Engine, prompts, new_tokens: int) -> collections.Counter:
    """Synchronizing calls by where they came from, while `prompts` are admitted and decoded."""
    seen: collections.Counter = collections.Counter()

    def record(message, category, filename, lineno, file=None, line=None):
        seen[f"{str(message).splitlines()[0][:60]} at {scriba_frames(traceback.extract_stack())}"] += 1

    params = SamplingParams(max_tokens=new_tokens, min_tokens=new_tokens, ignore_eos=True)
    for i, p in enumerate(prompts):
        engine.add_request(f"r{i}", p, params)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            while engine.has_unfinished_requests():
                engine.step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--async-scheduling", choices=["on", "off"], default="on")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        make_model("whisper", folder, True, torch.float16, "cuda")
        engine = Engine(
            folder,
            device="cuda",
            max_num_seqs=args.batch,
            max_num_batched_tokens=4 * 1504,  # a few windows a step, as at batch 256
            async_scheduling=args.async_scheduling == "on",
        )
        features = torch.randn(args.batch, 128, 3000).mul(0.5).numpy()
        prompts = [
            {"input_features": f, "language": "en", "task": "transcribe", "timestamps": False}
            for f in features
        ]
        run(engine, prompts[:2], 2)  # warm-up
        seen = run(engine, prompts, args.new_tokens)
    print(
        f"synchronizing calls, async scheduling {args.async_scheduling}, "
        f"batch {args.batch}: {sum(seen.values())}"
    )
    for where, count in seen.most_common(20):
        print(f"{count:5d}  {where}")


if __name__ == "__main__":
    main()
