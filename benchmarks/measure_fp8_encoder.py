"""The encoder's products in fp8 (EngineConfig.encoder_quantization="fp8") against the compute dtype:
WER on dev_speech's short clips (and with --long, on dev_longform's recording).

    python benchmarks/measure_fp8_encoder.py [--models base,tiny.en] [--long] [--out FILE]

On the CPU (torch._scaled_mm's CPU kernel, the GPU's arithmetic): the precision a GPU would give, not
its speed. base runs in float32; tiny.en (an int8 checkpoint, run in the int8 mode in float32) in
bfloat16, so that its encoder's products are its float weights' either way.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

from machine import cpu_name
from results_file import save_lines
from wer import load_manifest, wer

HERE = os.path.dirname(os.path.abspath(__file__))
SPEECH = os.path.join(HERE, "..", "..", "shared", "data", "dev_speech")
LONG = os.path.join(HERE, "..", "..", "shared", "data", "dev_longform")
DTYPE = {"base": "float32", "tiny.en": "bfloat16"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="base,tiny.en")
    parser.add_argument("--long", action="store_true", help="also dev_longform's recording (its WER)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import scriba
    from scriba.media.load import load_audio

    lines = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    say(f"# python benchmarks/measure_fp8_encoder.py {' '.join(sys.argv[1:])}")
    say(f"host: {cpu_name()}, {os.cpu_count()} CPUs")
    paths, refs = load_manifest(SPEECH, "short")
    audios = [load_audio(p) for p in paths]
    for model in args.models.split(","):
        dtype = DTYPE.get(model, "float32")
        for fp8 in (None, "fp8"):
            options = dict(model=model, dtype=dtype, encoder_runtime="torch", encoder_quantization=fp8)
            hyps = [scriba.transcribe((a, 16000), language="en", **options).text for a in audios]
            line = f"{model} ({dtype}), encoder {fp8 or dtype}: WER over {len(paths)} short clips "
            line += f"{wer(refs, hyps):.4f}"
            if args.long:
                path, ref = long_recording()
                text = scriba.transcribe(path, language="en", **options).text
                line += f", {os.path.basename(path)} {wer([ref], [text]):.4f}"
            say(line)
    save_lines(lines, args.out)


def long_recording() -> tuple[str, str]:
    """(path, reference text) of dev_longform's recording."""
    with open(os.path.join(LONG, "MANIFEST.tsv"), newline="") as f:
        row = next(csv.DictReader(f, delimiter="\t"))
    return os.path.join(LONG, row["file"]), row["reference_text"]


if __name__ == "__main__":
    main()
