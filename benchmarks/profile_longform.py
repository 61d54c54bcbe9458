"""Where one long file's time goes on this CPU, and how full the engine's batches are.

    python benchmarks/profile_longform.py [FILE] [--model tiny.en] [--quantization int8 | --dtype float32]
        [--kv-cache-dtype bfloat16]
        [--out benchmarks/results/profile_longform_cpu.txt]

Transcribes FILE (default: the 7.8-minute dev long-form recording) with Scriba's defaults (int8 on a
CPU; --dtype float32 for the exact mode), once to warm up and once measured, with timers wrapped
around the parts (CPU ops are synchronous, so wall time is exact): VAD, log-mel features, the
encoder, the decoder's self- and cross-attention, the rest of the decoder, the output projection,
sampling and the engine's host work (scheduling, packing inputs, bookkeeping: a step's time outside
the model and the sampler). Then the occupancy: steps, decoder sequences per step, steps with an
encoder prefill, windows decoded (first passes, unfinished tails decoded again, temperature
retries).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import sys
import time

import torch
from machine import cpu_name

import scriba
from scriba.engine import model_runner
from scriba.engine.sequence import SequenceStatus
from scriba.kernels.metadata import AttentionType
from scriba.models.layers import Attention
from scriba.runtime.loops import get_engine
from scriba.transcription import file as file_transcription
from scriba.transcription import window_decoder
from scriba.transcription.engine_settings import speech_config
from scriba.whisper import log_mel

HERE = os.path.dirname(os.path.abspath(__file__))
LONG = os.path.join(
    HERE, "..", "..", "shared", "data", "dev_longform", "ljspeech_LJ001-0041_to_LJ001-0110_concat.flac"
)


class Timers:
    def __init__(self):
        self.seconds = collections.Counter()
        self.active = False

    def wrap(self, owner, name: str, label: str) -> None:
        original = getattr(owner, name)
        timers = self

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if timers.active:
                    timers.seconds[label] += time.perf_counter() - start

        setattr(owner, name, timed)


def instrument(engine, timers: Timers, steps: list) -> None:
    model = engine.model
    timers.wrap(file_transcription, "speech_and_pauses", "VAD")
    timers.wrap(log_mel, "log_mel", "features (log-mel)")
    if model.encoder_runtime is not None:  # OpenVINO: the encoder and the cross K/V of its states
        timers.wrap(model, "encoder_runtime", "encoder")
    else:
        timers.wrap(model.model.encoder, "forward", "encoder")
    timers.wrap(model, "compute_logits", "output projection")
    timers.wrap(model_runner, "sample_on_device", "sampler")
    timers.wrap(model.model.decoder, "forward", "decoder (all)")
    numba_step = engine.runner.decode_step
    if numba_step is not None:  # a few rows' decode steps in one numba call, and their logits
        timers.wrap(type(numba_step), "__call__", "numba decoder step")
        timers.wrap(numba_step, "logits", "output projection")
    original_attention = Attention.forward

    def attention(self, q, k, v, meta):
        start = time.perf_counter()
        try:
            return original_attention(self, q, k, v, meta)
        finally:
            if timers.active and self.attn_type is not AttentionType.ENCODER:
                label = (
                    "decoder cross-attention"
                    if self.attn_type is AttentionType.CROSS
                    else "decoder self-attention"
                )
                timers.seconds[label] += time.perf_counter() - start

    Attention.forward = attention
    step = engine.step

    def counted_step():
        start = time.perf_counter()
        outputs = step()
        if timers.active:
            timers.seconds["engine steps (all)"] += time.perf_counter() - start
            steps.append(last_batch[:])
        return outputs

    last_batch = [0, 0]
    launch = engine.runner.launch

    def launch_counted(sched, blocks, feed=None):
        running = sum(len(g.seqs_with(SequenceStatus.RUNNING)) for g in sched.decodes)
        last_batch[:] = [len(sched.prefills), running + len(sched.prefills)]
        return launch(sched, blocks, feed=feed)

    engine.runner.launch = launch_counted
    engine.step = counted_step


def count_windows(windows: collections.Counter) -> None:
    """Counts the windows the decoder queues: first passes, tails, temperature retries."""
    params = window_decoder.WindowDecoder._params

    def counted_params(self, w, temperature):
        if temperature > 0:
            windows["retries at a higher temperature"] += 1
        elif w.prev_ids:  # only a tail carries the text before it (batched windows start bare)
            windows["tails decoded again"] += 1
        else:
            windows["first passes"] += 1
        return params(self, w, temperature)

    window_decoder.WindowDecoder._params = counted_params


def report(seconds: float, audio_seconds: float, timers: Timers, steps: list, windows) -> list[str]:
    t = timers.seconds
    decoder_rest = t["decoder (all)"] - t["decoder self-attention"] - t["decoder cross-attention"]
    model_time = t["encoder"] + t["decoder (all)"] + t["numba decoder step"] + t["output projection"]
    host = t["engine steps (all)"] - model_time - t["sampler"]
    rows = [
        ("VAD", t["VAD"]),
        ("features (log-mel)", t["features (log-mel)"]),
        ("encoder", t["encoder"]),
        ("decoder self-attention", t["decoder self-attention"]),
        ("decoder cross-attention", t["decoder cross-attention"]),
        ("decoder, the rest (projections, MLP, norms)", decoder_rest),
        ("numba decoder step (a few rows: every layer)", t["numba decoder step"]),
        ("output projection (logits)", t["output projection"]),
        ("sampler (logits rules, choice)", t["sampler"]),
        ("engine host work (schedule, pack, bookkeeping)", host),
    ]
    other = seconds - sum(v for _, v in rows)
    rows.append(("outside the engine (threads, segments, waiting)", other))
    lines = [
        f"{seconds:.2f} s for {audio_seconds:.0f} s of audio: {audio_seconds / seconds:.1f}x real time",
        "",
    ]
    lines += [f"  {name:<50} {value:6.2f} s  {100 * value / seconds:5.1f}%" for name, value in rows]
    seqs = [s for _, s in steps]
    prefill_steps = sum(1 for p, _ in steps if p)
    lines += [
        "",
        f"steps: {len(steps)}; with an encoder prefill: {prefill_steps}",
        f"decoder sequences per step: mean {sum(seqs) / max(len(seqs), 1):.1f}, "
        f"max {max(seqs, default=0)}; steps with fewer than 8: {sum(1 for s in seqs if s < 8)}",
        "windows: " + ", ".join(f"{k} {v}" for k, v in windows.items()),
    ]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=LONG)
    parser.add_argument("--model", default=None)
    parser.add_argument("--quantization", default=None)
    parser.add_argument("--dtype", default=None, help="float32: the exact mode (default: int8 on a CPU)")
    parser.add_argument("--kv-cache-dtype", default=None, help="bfloat16: the numba decode kernel")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    given = {"quantization": args.quantization, "dtype": args.dtype, "kv_cache_dtype": args.kv_cache_dtype}
    asked = {k: v for k, v in given.items() if v}
    config = speech_config(asked)  # what transcribe() runs with: int8 on a CPU unless asked
    options = {"model": args.model, **asked}
    scriba.transcribe(args.file, **options)  # warm-up: model load, first allocations
    engine = get_engine(args.model, **config)
    timers, steps, windows = Timers(), [], collections.Counter()
    instrument(engine, timers, steps)
    count_windows(windows)
    timers.active = True
    start = time.perf_counter()
    result = scriba.transcribe(args.file, **options)
    seconds = time.perf_counter() - start
    header = [
        f"# python benchmarks/profile_longform.py {' '.join(argv or sys.argv[1:])}".rstrip(),
        f"# {cpu_name()}; torch {torch.__version__}, {torch.get_num_threads()} threads",
        f"# {os.path.basename(args.file)}, "
        f"model {args.model or 'tiny.en'}, {config.get('quantization') or config.get('dtype')}"
        f"{', KV cache ' + args.kv_cache_dtype if args.kv_cache_dtype else ''}",
    ]
    lines = header + report(seconds, result.duration, timers, steps, windows)
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f, contextlib.suppress(Exception):
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
