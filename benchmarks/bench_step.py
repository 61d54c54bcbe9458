"""Host work per decode step: Scriba vs transformers generate() on a tiny random Whisper.

The model is tiny (d_model 64, 2+2 layers), so the step is what surrounds the matrix work:
sampling, the logits processors (suppress, timestamp rules), input packing, attention calls,
output bookkeeping. It carries tiny.en's real vocabulary (51,864 tokens), tokenizer and
generation config (from the bundled CTranslate2 folder). Every row decodes the same number of
tokens on both sides (<|endoftext|> is added to the suppressed tokens), from the same
features. Per-step time = (time for N tokens - time for 1 token) / (N - 1), best of
--repeats. On a GPU the host time per step is printed too (CUDA-synchronised step time
minus the time the device was busy is not measured here; use torch.profiler for that).

    python benchmarks/bench_step.py                       # batch 64 and 256, timestamps on and off
    python benchmarks/bench_step.py --batches 64 --tokens 32 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import torch

from scriba import Engine, SamplingParams
from scriba.models.registry import default_model_path
from scriba.whisper.checkpoint_config import transformers_configs
from scriba.whisper.ctranslate2 import load_ctranslate2_whisper

TINY = dict(
    d_model=64,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=256,
    decoder_ffn_dim=256,
)


def make_model(folder: str):
    """A random tiny Whisper with tiny.en's vocabulary, tokenizer and generation config."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    bundled = default_model_path()
    _, *configs = load_ctranslate2_whisper(bundled)
    real_config, generation_config = transformers_configs(*configs)
    config = WhisperConfig(**{**real_config.to_dict(), **TINY})
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(config).eval()
    eot = generation_config.eos_token_id
    generation_config.suppress_tokens = sorted(set(generation_config.suppress_tokens) | {eot})
    model.generation_config = generation_config
    model.save_pretrained(folder)
    shutil.copy(os.path.join(bundled, "tokenizer.json"), folder)
    return model


def features(batch: int, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.standard_normal((batch, 80, 3000)).astype(np.float32) * 0.5)


def scriba_run(engine: Engine, feats: torch.Tensor, timestamps: bool, tokens: int) -> list[list[int]]:
    prompts = [{"input_features": f.numpy(), "timestamps": timestamps} for f in feats]
    outs = engine.generate(prompts, SamplingParams(max_tokens=tokens))
    return [o.outputs[0].token_ids for o in outs]


def hf_run(model, feats: torch.Tensor, timestamps: bool, tokens: int) -> list[list[int]]:
    with torch.inference_mode():
        out = model.generate(input_features=feats, max_new_tokens=tokens, return_timestamps=timestamps)
    ids = out if isinstance(out, torch.Tensor) else out["sequences"]
    return ids.tolist()


def per_step(fn, tokens: int, repeats: int) -> float:
    """Seconds per decode step: (N-token run - 1-token run) / (N - 1), best of `repeats`."""

    def best(n: int) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn(n)
            times.append(time.perf_counter() - start)
        return min(times)

    fn(tokens)  # warm-up
    return (best(tokens) - best(1)) / (tokens - 1)


def agreement(ours: list[list[int]], theirs: list[list[int]], n: int) -> str:
    """How many rows agree on their first `n` generated tokens (transformers' timestamped
    output is post-processed into segments, so only a prefix is compared)."""
    same = sum(a[:n] == b[:n] and len(a) >= n for a, b in zip(ours, theirs))
    return f"{same}/{len(ours)}"


def main() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per row")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from bench_bart import cpu_name

    folder = tempfile.mkdtemp(prefix="bench-step-")
    hf = make_model(folder)
    engine = Engine(folder, device="cpu", dtype="float32", max_num_seqs=max(args.batches))
    print(f"machine: {cpu_name()}, {torch.get_num_threads()} threads, torch {torch.__version__}")
    print(
        "model: random tiny Whisper (d_model 64, 2+2 layers) with tiny.en's 51,864-token vocabulary, float32"
    )
    print(
        f"{'batch':>6} {'timestamps':>11} {'scriba ms/step':>15} "
        f"{'transformers ms/step':>21} {'ratio':>7}  same tokens"
    )
    for batch in args.batches:
        feats = features(batch)
        for timestamps in (True, False):
            ours = per_step(lambda n: scriba_run(engine, feats, timestamps, n), args.tokens, args.repeats)
            theirs = per_step(lambda n: hf_run(hf, feats, timestamps, n), args.tokens, args.repeats)
            same = agreement(scriba_run(engine, feats, timestamps, 8), hf_run(hf, feats, timestamps, 8), 6)
            print(
                f"{batch:>6} {str(timestamps):>11} {ours * 1e3:>15.2f} "
                f"{theirs * 1e3:>21.2f} {theirs / ours:>6.2f}x  {same}"
            )
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
