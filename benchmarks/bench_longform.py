"""Long-form quality and speed: Scriba batched vs sequential, VAD on and off, vs transformers.

    python benchmarks/bench_longform.py [--data ../shared/data/dev_speech]

Same weights everywhere (the bundled tiny.en), default decoding (temperature fallback,
conditioning on previous text), English. Three long recordings:
  sonnets   the dev set's long-form recording (158 s of continuous reading)
  joined    the dev set's short utterances and jfk.flac end to end, no pauses between them
            (speech runs across every window boundary)
  gaps      the same utterances with 2-8 s of silence, white or brown noise or a tone between
            them (nothing but the speech should be transcribed)
Prints RTFx and WER per recording, WER over all three, and for "gaps" the segments that lie
outside the speech (more than 1 s from every utterance). Keep the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import soundfile as sf
from wer import load_manifest, wer
from whisper_systems import transformers_system

import scriba
from scriba.media.load import load_audio

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
from compositions import compose  # noqa: E402

JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
JFK_TEXT = (
    "And so my fellow Americans, ask not what your country can do for you, "
    "ask what you can do for your country."
)


def recordings(data: str, folder: str) -> dict[str, tuple[str, str, list]]:
    """name -> (path, reference, speech spans in seconds or None)."""
    long_files, long_refs = load_manifest(data, "longform")
    files, refs = load_manifest(data, "short")
    clips = [load_audio(f) for f in files + [JFK]]
    text = " ".join(refs + [JFK_TEXT])
    rng = np.random.default_rng(0)
    kinds = ["silence", "white", "brown", "tone"]
    parts = [p for clip in clips for p in (clip, (kinds[rng.integers(4)], float(rng.uniform(2, 8))))]
    made = {"joined": (np.concatenate(clips), None), "gaps": compose(parts)}
    out = {"sonnets": (long_files[0], long_refs[0], None)}
    for name, (audio, spans) in made.items():
        path = os.path.join(folder, f"{name}.wav")
        sf.write(path, audio, 16000)
        out[name] = (path, text, spans)
    return out


def scriba_systems() -> dict:
    systems = {}
    for mode in ("batched", "sequential"):
        for vad in (None, False):
            name = f"Scriba {mode}" + (" (VAD off)" if vad is False else "")
            systems[name] = lambda path, m=mode, v=vad: scriba.transcribe(path, mode=m, vad_filter=v)
    return systems


def outside(result, spans) -> int:
    return sum(not any(a - 1 <= s.start and s.end <= b + 1 for a, b in spans) for s in result.segments)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=os.path.join(HERE, "..", "..", "shared", "data", "dev_speech"))
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="scriba-longform-")
    recs = recordings(args.data, folder)
    hf = transformers_system(long_form=True)["transformers float32"]
    systems = {**scriba_systems(), "transformers sequential": lambda path: hf([path])[0]}
    scriba.transcribe(JFK)  # warm-up
    print(
        f"{'system':<30}" + "".join(f"{n + ' RTFx':>14}{n + ' WER':>13}" for n in recs) + "  all WER  outside"
    )
    for name, run in systems.items():
        row, hyps, refs, extra = f"{name:<30}", [], [], ""
        for rec, (path, ref, spans) in recs.items():
            start = time.perf_counter()
            result = run(path)
            elapsed = time.perf_counter() - start
            text = result if isinstance(result, str) else result.text
            row += f"{sf.info(path).duration / elapsed:>13.1f}x{wer([ref], [text]):>13.4f}"
            hyps.append(text)
            refs.append(ref)
            if spans is not None and not isinstance(result, str):
                extra = f"{outside(result, spans):>8}"
        print(row + f"{wer(refs, hyps):>9.4f}{extra}", flush=True)


if __name__ == "__main__":
    main()
