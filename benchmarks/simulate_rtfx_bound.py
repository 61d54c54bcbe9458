"""What RTFx bench_gpu's batch-256 run could reach if the encoder ran beside the decode instead of
inside the engine's steps: a schedule simulated from measured costs, no GPU needed.

Windows arrive all at once; the encoder takes them in waves (one admitting step's worth) back to
back on its own; a wave starts decoding once encoded, and the decode steps at its own pace over
every sequence encoded so far, each step costing a fixed part (the decoder's weights, launches)
plus a part per sequence (its cross K/V read). `--encoder-slowdown`: the encoder's waves made
slower by sharing the device with the decode (the decode is taken as unslowed: an upper bound).
Defaults: the H100 figures of benchmarks/results/gpu_h100_2026-11-27_session23.txt (whisper-large-v3
shape; 1.54 s of encoder device time for 26 waves of ~10 windows; the decode step's floor 22.5 ms
at 256 sequences).

    python benchmarks/simulate_rtfx_bound.py [--encoder-slowdown 1,1.2,1.5]
"""

from __future__ import annotations

import argparse


def simulate(
    windows: int, per_wave: int, wave_seconds: float, tokens: int, step_fixed: float, step_per_seq: float
) -> float:
    """Seconds until every window has its `tokens` tokens."""
    clock, encoded, next_wave, remaining = 0.0, 0, wave_seconds, []
    while encoded < windows or remaining:
        while encoded < windows and next_wave <= clock:  # waves encoded by now join the decode
            arrived = min(per_wave, windows - encoded)
            remaining += [tokens] * arrived
            encoded, next_wave = encoded + arrived, next_wave + wave_seconds
        if not remaining:  # nothing to decode until the next wave is encoded
            clock = next_wave
            continue
        clock += step_fixed + step_per_seq * len(remaining)
        remaining = [r - 1 for r in remaining if r > 1]
    return clock


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=256)
    parser.add_argument("--per-wave", type=int, default=10, help="windows one admitting step encodes")
    parser.add_argument("--encoder-seconds", type=float, default=1.54, help="device time of every wave")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument(
        "--step-fixed", type=float, default=0.6e-3, help="seconds a decode step costs at any size"
    )
    parser.add_argument("--step-floor", type=float, default=22.5e-3, help="the full batch's step floor")
    parser.add_argument("--encoder-slowdown", default="1,1.2,1.5")
    args = parser.parse_args(argv)
    waves = -(-args.windows // args.per_wave)
    audio = args.windows * 30.0
    per_seq = args.step_floor / args.windows
    sequential = args.encoder_seconds + args.tokens * (args.step_fixed + args.step_floor)
    print(f"one after the other (no overlap): {sequential:.2f} s, RTFx {audio / sequential:,.0f}")
    for slowdown in (float(s) for s in args.encoder_slowdown.split(",")):
        wave = args.encoder_seconds / waves * slowdown
        wall = simulate(args.windows, args.per_wave, wave, args.tokens, args.step_fixed, per_seq)
        print(
            f"encoder beside the decode, encoder slowed x{slowdown:g}: {wall:.2f} s, RTFx {audio / wall:,.0f}"
        )


if __name__ == "__main__":
    main()
