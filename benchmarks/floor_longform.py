"""Can Scriba reach 1.5x faster-whisper's batched mode on long recordings on this CPU? A floor.

    python benchmarks/floor_longform.py [--model tiny.en] [--repeats 3] [--data ../shared/data]
        [--out benchmarks/results/floor_longform_cpu.txt]

In one run, on the dev long-form set (the 7.8-minute chapter and the 158 s sonnets, each file
transcribed alone, as bench_whisper.py does):
  1. faster-whisper int8's BatchedInferencePipeline (its faster mode) and Scriba's default, warmed
     up, then timed in `repeats` interleaved rounds (the fastest counts): 1.5x faster-whisper's
     speed leaves Scriba `budget` seconds. Scriba's work in its fastest round is counted and
     timed: encoder passes (windows), decode steps and their sequences.
  2. The work this design cannot skip, each part timed alone at its best, with the model's own
     int8 weights: Silero VAD over the files (faster-whisper runs the same model); per encoder
     pass the log-mel features, the two convolutions, the float32 attention over 1,500 positions
     (PyTorch's fused SDPA), the int8 products of every encoder Linear and of the cross-attention
     K/V projections (fbgemm's kernel alone), and the layer norms, GELU and residual adds; per
     decode step the reads of each sequence's cross-attention K/V in every layer, in bfloat16, at
     the speed of a plain sum over memory, the int8 products of the decoder's Linears and its
     output projection, the norms, GELU and adds, and an argmax over the logits. Left out, so the
     floor is below any real run: row scaling, self-attention, the sampler's rules, host work,
     threads.
The floor adds these up for the passes and steps Scriba made, and again for the fewest passes the
speech allows (its VAD seconds / 30 s, nothing decoded twice; steps scaled down alike). A floor
above the budget: no implementation of this design (float32 attention, int8 products through
fbgemm, Silero VAD) reaches 1.5x here; below it, the gap is what overhead leaves.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from bench_whisper import DATA, workloads
from bench_whisper_parity import best_of
from machine import cpu_name
from results_file import save_lines
from whisper_systems import faster_whisper_systems

import scriba
from scriba.engine.sequence import SequenceStatus
from scriba.media.load import SAMPLE_RATE, load_audio
from scriba.models.quantize import RowScaledLinear, _int8_linear
from scriba.runtime.loops import get_engine
from scriba.transcription.engine_settings import speech_config
from scriba.transcription.vad import speech_chunks
from scriba.whisper.log_mel import log_mel

POSITIONS = 1500  # the encoder's output positions: 30 s
CACHE_BYTES = 2  # a cached K or V element in bfloat16, the least Scriba stores (kv_cache_dtype)


def best_seconds(run, repeats: int) -> float:
    run()  # warm-up
    return best_of(repeats, run)


def int8_product_seconds(module: RowScaledLinear, rows: int, repeats: int = 5) -> float:
    """fbgemm's int8 product alone (input quantization in the kernel, no row scaling), [rows, in]."""
    x = torch.rand(rows, module.in_features) * 2 - 1
    return best_seconds(lambda: _int8_linear(x, module.SCALE, module.ZERO_POINT, module.packed), repeats)


def encoder_pass_floor(model) -> dict[str, float]:
    """Seconds per 30 s window: convolutions, float32 attention, int8 products (batch 1)."""
    encoder, decoder = model.model.encoder, model.model.decoder
    features = torch.randn(1, encoder.conv1.in_channels, 2 * POSITIONS)
    convs = best_seconds(lambda: encoder.conv2(encoder.conv1(features)), 5)
    attn = encoder.layers[0].self_attn.attn
    q, k, v = (torch.randn(1, attn.num_heads, POSITIONS, attn.head_dim) for _ in range(3))
    sdpa = best_seconds(lambda: F.scaled_dot_product_attention(q, k, v), 5) * len(encoder.layers)
    linears = [m for m in encoder.modules() if isinstance(m, RowScaledLinear)]
    linears += [layer.encoder_attn.kv_proj for layer in decoder.layers]
    products = sum(int8_product_seconds(m, POSITIONS) for m in linears)
    window = [np.zeros(30 * SAMPLE_RATE, np.float32)]
    mel = best_seconds(lambda: log_mel(window, encoder.conv1.in_channels), 5)
    return {
        "log-mel features": mel,
        "convolutions": convs,
        "attention (float32 SDPA)": sdpa,
        "int8 products": products,
        "norms, GELU, residuals": elementwise_seconds(encoder.layers, POSITIONS),
    }


def elementwise_seconds(layers, rows: int) -> float:
    """Each layer's layer norms, GELU and residual adds alone, on [rows, d_model] (GELU: fc1's out)."""
    layer = layers[0]
    x, wide = torch.randn(rows, layer.fc2.out_features), torch.randn(rows, layer.fc1.out_features)
    norms = 3 if hasattr(layer, "encoder_attn") else 2
    norm = best_seconds(lambda: layer.final_layer_norm(x), 5)
    add = best_seconds(lambda: x + x, 5)
    gelu = best_seconds(lambda: F.gelu(wide), 5)
    return len(layers) * (norms * (norm + add) + gelu)


def read_seconds_per_byte() -> float:
    """A plain float32 sum over 256 MB: the memory's read speed."""
    buffer = torch.ones(64 << 20)
    return best_seconds(lambda: buffer.sum(), 5) / buffer.nbytes


def decode_step_floor(model, rows: int, per_byte: float) -> float:
    """Seconds for one decode step of `rows` sequences: cross-attention K/V reads + int8 products."""
    decoder = model.model.decoder
    d_model = decoder.layer_norm.normalized_shape[0]
    reads = rows * len(decoder.layers) * 2 * POSITIONS * d_model * CACHE_BYTES * per_byte
    kv = {id(layer.encoder_attn.kv_proj) for layer in decoder.layers}
    linears = [m for m in decoder.modules() if isinstance(m, RowScaledLinear) and id(m) not in kv]
    products = sum(int8_product_seconds(m, rows, 3) for m in [*linears, model.quantized_head])
    logits = torch.randn(rows, model.quantized_head.out_features)
    choice = best_seconds(lambda: logits.argmax(-1), 3)  # greedy: the least a sampler does
    return reads + products + elementwise_seconds(decoder.layers, rows) + choice


def count_work(engine) -> dict:
    """Wraps the engine to count encoder passes and each step's sequences, and to time the
    encoder and the steps (model, sampler, host work; an encoder prefill's step included)."""
    counts = {"passes": 0, "steps": [], "encoder": 0.0, "engine steps": 0.0}
    encoder = engine.model.model.encoder
    forward, execute = encoder.forward, engine.runner.execute

    def counted_forward(features, meta):
        start = time.perf_counter()
        try:
            return forward(features, meta)
        finally:
            counts["passes"] += features.shape[0]
            counts["encoder"] += time.perf_counter() - start

    def counted_execute(sched, blocks):
        running = sum(len(g.seqs_with(SequenceStatus.RUNNING)) for g in sched.decodes)
        counts["steps"].append(running + len(sched.prefills))
        start = time.perf_counter()
        try:
            return execute(sched, blocks)
        finally:
            counts["engine steps"] += time.perf_counter() - start

    encoder.forward, engine.runner.execute = counted_forward, counted_execute
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="an offline model name (default tiny.en)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    files = workloads(args.data)["long-form"][0]
    audio = sum(len(load_audio(f)) for f in files) / SAMPLE_RATE
    say(f"# python benchmarks/floor_longform.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    say(f"# {cpu_name()}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    say(f"# model {args.model or 'tiny.en'} (int8); {len(files)} files, {audio:.0f} s")
    fw_seconds, scriba_seconds, work = run_both(args, files)
    budget = fw_seconds / 1.5
    passes, steps = work["passes"], work["steps"]
    say(f"faster-whisper int8 batched  {fw_seconds:6.2f} s  {audio / fw_seconds:5.1f}x")
    say(f"1.5x that (the target)       {budget:6.2f} s  {1.5 * audio / fw_seconds:5.1f}x")
    say(
        f"Scriba default               {scriba_seconds:6.2f} s  {audio / scriba_seconds:5.1f}x  "
        f"({fw_seconds / scriba_seconds:.2f}x faster-whisper batched)"
    )
    say(f"  {passes} encoder passes: {1e3 * work['encoder'] / passes:.0f} ms each")
    decoding = work["engine steps"] - work["encoder"]
    say(
        f"  {len(steps)} steps, {np.mean(steps):.1f} sequences each on average: {decoding:.2f} s"
        " besides the encoder"
    )
    say(f"  the rest (VAD, features, threads, segments): {scriba_seconds - work['engine steps']:.2f} s")
    report(args.model, files, budget, passes, steps)
    save_lines(LINES, args.out)
    return 0


LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def run_both(args, files: list[str]) -> tuple[float, float, dict]:
    """faster-whisper batched's and Scriba's best seconds over the files (warmed up, then timed
    in interleaved rounds), and Scriba's work in its best round (count_work)."""
    fw = faster_whisper_systems(torch.get_num_threads(), args.model, ("int8",))["faster-whisper int8 batched"]
    runs = {
        "fw": lambda: fw(files),
        "scriba": lambda: [scriba.transcribe(f, model=args.model, language="en") for f in files],
    }
    for run in runs.values():
        run()  # warm-up: model load, first allocations
    counts = count_work(get_engine(args.model, **speech_config({})))
    times, work = {name: [] for name in runs}, []
    for _ in range(args.repeats):
        for name, run in runs.items():
            counts.update(passes=0, steps=[], encoder=0.0, **{"engine steps": 0.0})
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
        work.append(dict(counts))
    best = min(range(args.repeats), key=lambda i: times["scriba"][i])
    return min(times["fw"]), times["scriba"][best], work[best]


def report(model_name, files: list[str], budget: float, passes: int, steps: list[int]) -> None:
    model = get_engine(model_name, **speech_config({})).model
    waves = [load_audio(f) for f in files]
    vad = best_seconds(lambda: [speech_chunks(w) for w in waves], 2)
    speech = [sum(e - s for s, e in speech_chunks(w)) / SAMPLE_RATE for w in waves]
    fewest = sum(math.ceil(seconds / 30) for seconds in speech)
    encoder = encoder_pass_floor(model)
    per_pass = sum(encoder.values())
    per_byte = read_seconds_per_byte()
    step_floor = {rows: decode_step_floor(model, rows, per_byte) for rows in sorted(set(steps))}
    decode = sum(step_floor[rows] for rows in steps)
    say()
    say("the floor, each part alone at its best:")
    say(f"  Silero VAD over the files                 {vad:6.2f} s  ({sum(speech):.0f} s of speech found)")
    for name, seconds in encoder.items():
        say(f"  encoder pass: {name:<27} {1e3 * seconds:6.1f} ms")
    say(f"  memory read speed                         {1e-9 / per_byte:6.1f} GB/s")
    floor = vad + passes * per_pass + decode
    say(
        f"  {passes} passes x {1e3 * per_pass:.0f} ms + {len(steps)} decode steps ({decode:.2f} s) + VAD"
        f" = {floor:.2f} s: {floor / budget:.2f}x the budget"
    )
    scaled = vad + fewest * per_pass + decode * fewest / max(passes, 1)
    say(
        f"  the fewest passes the speech allows ({fewest}), steps scaled alike: {scaled:.2f} s: "
        f"{scaled / budget:.2f}x the budget"
    )


if __name__ == "__main__":
    sys.exit(main())
