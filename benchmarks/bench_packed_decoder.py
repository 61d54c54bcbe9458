"""The decoder's products with oneDNN-packed weights (models/packed_linear.py) against PyTorch's
plain float32 `linear`, in one run, on the CPU: the engine built both ways from the same weights.

Workloads: a bart-large-shaped random BART summarizing one 700-token input with
bart-large-cnn's settings (4 beams), then 8 inputs at once; Whisper tiny.en (the bundled
CTranslate2 weights, float32, no quantization) transcribing jfk.flac. The two engines
alternate for --rounds rounds; the best time of each counts, and the outputs must agree.

    python benchmarks/bench_packed_decoder.py
    python benchmarks/bench_packed_decoder.py --rounds 2 --out benchmarks/results/packed_decoder_cpu.txt
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from unittest import mock

import torch
from bench_bart import make_prompts
from machine import cpu_name
from results_file import save_lines
from transformers import BartConfig, BartForConditionalGeneration

import scriba
import scriba.engine.engine as engine_module
from scriba import Engine, SamplingParams

BART_LARGE = dict(
    vocab_size=50264, d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
    decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024,
)  # fmt: skip
CNN = dict(beam_width=4, length_penalty=2.0, no_repeat_ngram_size=3, early_stopping=True)
JFK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets", "jfk.flac")


def engines(model: str) -> dict[str, Engine]:
    """The same model twice: with PyTorch's plain float32 products, and packed."""
    with mock.patch.object(engine_module, "packs", lambda *a: False):
        plain = Engine(model, device="cpu", dtype="float32")
    return {"plain": plain, "packed": Engine(model, device="cpu", dtype="float32")}


def race(label: str, runs: dict, rounds: int, lines: list[str]) -> None:
    """runs: name -> a call returning comparable outputs; alternated, best time of each."""
    best, outs = {name: float("inf") for name in runs}, {}
    for name, run in runs.items():
        outs[name] = run()  # warm-up
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            outs[name] = run()
            best[name] = min(best[name], time.perf_counter() - start)
    same = outs["plain"] == outs["packed"]
    lines.append(
        f"{label}: plain {best['plain']:.2f} s, packed {best['packed']:.2f} s, "
        f"{best['plain'] / best['packed']:.2f}x; outputs identical: {same}"
    )
    print(lines[-1], flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args()
    lines = [
        f"# bench_packed_decoder: {cpu_name()}, {os.cpu_count()} cores, "
        f"{torch.get_num_threads()} torch threads, torch {torch.__version__}"
    ]
    torch.manual_seed(0)
    folder = tempfile.mkdtemp(prefix="bench-packed-")
    BartForConditionalGeneration(BartConfig(**BART_LARGE)).save_pretrained(folder)
    bart = engines(folder)
    params = SamplingParams(max_tokens=args.new_tokens, **CNN)
    for n in (1, 8):
        requests = [{"prompt_token_ids": p} for p in make_prompts(n, 700, 700, n)]
        runs = {
            name: (lambda e=e: [o.outputs[0].token_ids for o in e.generate(requests, params)])
            for name, e in bart.items()
        }
        race(
            f"bart-large shape, {n} x 700 tokens, 4 beams, {args.new_tokens} tokens", runs, args.rounds, lines
        )
    del bart
    # transcribe() keeps one engine per settings: the plain one is built (under the patch) with
    # num_threads spelled out, which keys it apart and changes nothing else.
    threads = torch.get_num_threads()
    with mock.patch.object(engine_module, "packs", lambda *a: False):
        scriba.transcribe(JFK, quantization=None, vad_filter=False, num_threads=threads)
    runs = {
        "plain": lambda: (
            scriba.transcribe(JFK, quantization=None, vad_filter=False, num_threads=threads).text
        ),
        "packed": lambda: scriba.transcribe(JFK, quantization=None, vad_filter=False).text,
    }
    race("Whisper tiny.en float32, jfk.flac (11 s)", runs, args.rounds, lines)
    save_lines(lines, args.out)


if __name__ == "__main__":
    main()
