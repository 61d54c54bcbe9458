"""How few bits the cross-attention K/V can keep: WER on real speech with every cached cross K/V
vector rounded to `bits` (symmetric, a scale per group of `group` values: 64 = one per head vector,
as the 8-bit caches' kv8.quantize), the rest as the default transcription runs.

Why: on a GPU a batch-256 decode step reads every sequence's 1,500-position cross K/V, and on the
device the encoder and the decode do not overlap (benchmarks/results/gpu_h200_2026-11-28_session30.txt):
RTFx is bounded by the sum of their device work, which GPU.md's targets pass with an 8-bit cache. A
4-bit cache halves the decode's floor again. This measures its precision before anything is built:
the values are rounded where they are written (the prompt's prefill reads the rounded ones too, a
little worse than a cache would be), in float32 on the CPU.

    python benchmarks/measure_cross_kv_bits.py [--models tiny.en,base] [--cache] [--out FILE]

--cache: instead, the engine's own kv_cache_dtype="int4" (the cross K/V in 4 bits, the self K/V in
int8; read by the torch path on a CPU) against the default cache (numba's path, float16) and the
float32 cache through the same torch path.

--states: instead, cross_cache="states" (the encoder states cached once, read through each layer's
projections) against each layer's K/V cached, both in float32 (states run no int8 products) through
the torch path, with a float32 cache and an fp8 one (states: a scale a position; K/V: a head vector).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
from machine import cpu_name
from measure_fp8_encoder import SPEECH, long_recording
from results_file import Report
from wer import load_manifest, wer

SETTINGS = [(None, None), (8, 64), (4, 64), (4, 32), (4, 16)]  # (bits, group); None: as cached today
ROUNDING = {"bits": None, "group": None}


def rounded(x: torch.Tensor) -> torch.Tensor:
    """x [..., n] (n a multiple of the group) rounded to ROUNDING's bits, a scale per group."""
    bits, group = ROUNDING["bits"], ROUNDING["group"]
    if bits is None:
        return x
    groups = x.float().reshape(-1, group)
    top = 2 ** (bits - 1) - 1
    scale = (groups.abs().amax(-1, keepdim=True) / top).clamp_min(1e-12)
    return ((groups / scale).round().clamp(-top, top) * scale).reshape(x.shape).to(x.dtype)


def round_cross_writes() -> None:
    """Every cross K/V write rounded: through the attention (a prefill's) and write_cross_kv (the
    numba decoder's prompts, the encoder's stream)."""
    from scriba.models.layers import Attention, AttentionType, MultiHeadAttention

    forward, write = Attention.forward, MultiHeadAttention.write_cross_kv

    def attention_forward(self, q, k, v, meta, *rest, **kwargs):
        if self.attn_type is AttentionType.CROSS and k is not None:
            k, v = rounded(k), rounded(v)
        return forward(self, q, k, v, meta, *rest, **kwargs)

    def write_cross_kv(self, cross_kv, meta):
        return write(self, rounded(cross_kv), meta)

    Attention.forward, MultiHeadAttention.write_cross_kv = attention_forward, write_cross_kv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--cache", action="store_true", help="kv_cache_dtype='int4' against the default")
    parser.add_argument("--states", action="store_true", help="cross_cache='states' against 'projected'")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import scriba
    from scriba.media.load import load_audio

    say = Report()
    say(f"# python benchmarks/measure_cross_kv_bits.py {' '.join(sys.argv[1:])}")
    say(f"host: {cpu_name()}, {os.cpu_count()} CPUs")
    if not (args.cache or args.states):
        round_cross_writes()
    paths, refs = load_manifest(SPEECH, "short")
    audios = [load_audio(p) for p in paths]
    long_path, long_ref = long_recording()
    torch_path = {"attention_backend": "torch", "decoder_runtime": "torch"}
    settings = [
        ({}, "the default cache"),
        ({**torch_path, "kv_cache_dtype": "auto"}, "the float32 cache, torch path"),
        ({"kv_cache_dtype": "int4"}, 'kv_cache_dtype="int4" (torch path)'),
    ]
    if args.states:
        exact = {**torch_path, "dtype": "float32"}
        settings = [
            ({**exact, "cross_cache": cross, "kv_cache_dtype": kv}, f'cross_cache="{cross}", {kv} cache')
            for kv in ("auto", "fp8")
            for cross in ("projected", "states")
        ]
    elif not args.cache:
        settings = [({}, describe(bits, group), bits, group) for bits, group in SETTINGS]
    for model in args.models.split(","):
        for options, kept, *rounding in settings:
            if rounding:
                ROUNDING.update(bits=rounding[0], group=rounding[1])
            options = dict(options, model=model, language="en")
            hyps = [scriba.transcribe((a, 16000), **options).text for a in audios]
            text = scriba.transcribe(long_path, **options).text
            say(
                f"{model}, {kept}: WER over {len(paths)} short clips {wer(refs, hyps):.4f}, "
                f"{os.path.basename(long_path)} {wer([long_ref], [text]):.4f}"
            )
    say.save(args.out)


def describe(bits, group) -> str:
    return (
        f"cross K/V {bits} bits, a scale per {group} values" if bits else "cross K/V as cached (the default)"
    )


if __name__ == "__main__":
    main()
