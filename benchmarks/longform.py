"""Long recordings: Scriba batched and sequential, VAD on and off, against transformers' sequential
long-form generate(), the same weights (the bundled tiny.en), default decoding, English.

    python -m benchmarks longform [--data DIR] [--smoke] [--out FILE]

Recordings: each of the data's long ones; "joined", its short clips end to end with no pause
(speech across every window boundary); "gaps", the same clips 2-8 s apart with silence or noise
between them (nothing but the speech should be transcribed). Prints RTFx and WER per recording,
WER over all, and for "gaps" the segments that lie outside the speech (more than 1 s from every
clip). Keep the machine otherwise idle.
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from benchmarks.data import speech_set, wer
from benchmarks.report import Report, suite_parser

RATE = 16000


def recordings(data: str | None, folder: str) -> dict[str, tuple[str, str, list | None]]:
    """name -> (path, reference, the clips' spans in seconds for "gaps", else None)."""
    import soundfile as sf

    from scriba.media.load import load_audio

    long_files, long_refs = speech_set(data, "longform")
    out = {os.path.basename(f): (f, r, None) for f, r in zip(long_files, long_refs)}
    files, refs = speech_set(data, "short")
    clips = [load_audio(f) for f in files]
    rng = np.random.default_rng(0)
    parts, spans, at = [], [], 0.0
    for clip in clips:
        gap = rng.uniform(2, 8)
        noise = rng.standard_normal(int(gap * RATE)).astype(np.float32) * rng.choice([0.0, 0.003])
        parts += [noise, clip]
        spans.append((at + gap, at + gap + len(clip) / RATE))
        at += gap + len(clip) / RATE
    made = (("joined", np.concatenate(clips), None), ("gaps", np.concatenate(parts), spans))
    for name, audio, where in made:
        path = os.path.join(folder, f"{name}.wav")
        sf.write(path, audio, RATE)
        out[name] = (path, " ".join(refs), where)
    return out


def transformers_long_form():
    """transformers' WhisperForConditionalGeneration (sdpa, float32) on the bundled weights: path -> text."""
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperTokenizerFast

    from scriba.media.load import load_audio
    from scriba.models.registry import default_model_path
    from scriba.models.whisper.checkpoint_config import transformers_configs
    from scriba.models.whisper.ctranslate2 import load_ctranslate2_whisper

    folder = default_model_path()
    state_dict, *configs = load_ctranslate2_whisper(folder)
    config, generation_config = transformers_configs(*configs)
    config._attn_implementation = "sdpa"
    model = WhisperForConditionalGeneration(config)
    model.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=False)
    model.generation_config = generation_config
    model.eval()
    tokenizer = WhisperTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json"))
    extractor = WhisperFeatureExtractor(feature_size=config.num_mel_bins)

    def run(path: str) -> str:
        features = extractor(
            [load_audio(path)], sampling_rate=RATE, truncation=False, padding="longest",
            return_attention_mask=True, return_tensors="pt",
        )  # fmt: skip
        with torch.inference_mode():
            ids = model.generate(
                features.input_features, attention_mask=features.attention_mask, return_timestamps=True
            )
        return tokenizer.batch_decode(ids, skip_special_tokens=True)[0]

    return run


def systems() -> dict:
    import scriba

    found = {}
    for mode in ("batched", "sequential"):
        for vad in (None, False):
            name = f"Scriba {mode}" + (" (VAD off)" if vad is False else "")
            found[name] = lambda path, m=mode, v=vad: scriba.transcribe(path, mode=m, vad_filter=v)
    return {**found, "transformers sequential": transformers_long_form()}


def outside(result, spans) -> int:
    return sum(not any(a - 1 <= s.start and s.end <= b + 1 for a, b in spans) for s in result.segments)


def main(argv: list[str]) -> int:
    import soundfile as sf

    parser = suite_parser("longform", __doc__, data=True)
    parser.add_argument("--smoke", action="store_true", help="the bundled clip")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    report = Report("longform", argv)
    recs = recordings(None if args.smoke else args.data, tempfile.mkdtemp(prefix="scriba-longform-"))
    runs = systems()
    runs["Scriba batched"](recs["gaps"][0])  # warm-up
    columns = "".join(f"{n[:12] + ' RTFx':>18}{'WER':>8}" for n in recs)
    report(f"{'system':<28}{columns}  all WER outside")
    for name, run in runs.items():
        row, hyps, refs, extra = f"{name:<28}", [], [], ""
        for path, ref, spans in recs.values():
            start = time.perf_counter()
            result = run(path)
            elapsed = time.perf_counter() - start
            text = result if isinstance(result, str) else result.text
            row += f"{sf.info(path).duration / elapsed:>17.1f}x{wer([ref], [text]):>8.4f}"
            hyps.append(text)
            refs.append(ref)
            if spans is not None and not isinstance(result, str):
                extra = f"{outside(result, spans):>8}"
        report(row + f"{wer(refs, hyps):>9.4f}{extra}")
    report.save(args.out)
    return 0
