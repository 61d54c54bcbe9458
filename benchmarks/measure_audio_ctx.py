"""A design measured and not adopted (issue 42): encoding only as many of the encoder's 1,500
positions as a short clip needs (whisper.cpp's `audio_ctx`), the decoder cross-attending to those
alone. The encoder's work falls with the clip's length, but the model never saw a shorter context
in training: word error rate on the dev set's short clips, greedy, transformers' Whisper from a
Hugging Face folder (`benchmarks/export_hf_whisper.py`), at full context and at the clip's length
plus each margin (`--data`: the dev sets, ../shared/data by default).

    python benchmarks/measure_audio_ctx.py --hf-model /tmp/ov/hf-tiny.en [--margins 2,5]
"""

from __future__ import annotations

import argparse
import csv
import math
import time

import torch
import torch.nn.functional as F
from transformers import WhisperForConditionalGeneration, WhisperProcessor
from transformers.modeling_outputs import BaseModelOutput
from wer import wer

from scriba.media.load import load_audio

FRAMES_PER_SECOND = 50  # encoder positions a second of audio


def encode(encoder, features: torch.Tensor, positions: int) -> torch.Tensor:
    """transformers' WhisperEncoder.forward over the first `positions` positions only."""
    x = F.gelu(encoder.conv2(F.gelu(encoder.conv1(features)))).permute(0, 2, 1)
    x = x[:, :positions] + encoder.embed_positions.weight[:positions]
    for layer in encoder.layers:
        out = layer(x, None)
        x = out[0] if isinstance(out, tuple) else out
    return encoder.layer_norm(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hf-model", required=True)
    parser.add_argument("--margins", default="2,5", help="seconds of context past the clip's end")
    parser.add_argument("--data", default="../shared/data")
    args = parser.parse_args()
    torch.set_num_threads(2)
    model = WhisperForConditionalGeneration.from_pretrained(args.hf_model).eval()
    processor = WhisperProcessor.from_pretrained(args.hf_model)
    with open(f"{args.data}/dev_speech/MANIFEST.tsv") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["file"].startswith("short")]
    multilingual = getattr(model.generation_config, "is_multilingual", False)
    english = {"language": "en", "task": "transcribe"} if multilingual else {}  # the clips' language
    waves = [load_audio(f"{args.data}/dev_speech/{r['file']}") for r in rows]
    for margin in [None, *(float(m) for m in args.margins.split(","))]:
        texts, encoding = [], 0.0
        for wave in waves:
            features = processor(wave, sampling_rate=16000, return_tensors="pt").input_features
            seconds = len(wave) / 16000 + (margin or 0.0)
            positions = 1500 if margin is None else min(1500, math.ceil(seconds * FRAMES_PER_SECOND))
            with torch.no_grad():
                start = time.perf_counter()
                states = encode(model.model.encoder, features, positions)
                encoding += time.perf_counter() - start
                ids = model.generate(
                    encoder_outputs=BaseModelOutput(last_hidden_state=states), max_new_tokens=120, **english
                )
            texts.append(processor.batch_decode(ids, skip_special_tokens=True)[0])
        label = "all 1,500 positions" if margin is None else f"the clip + {margin:g} s"
        error = wer([r["reference_text"] for r in rows], texts)
        print(f"{label:22s} WER {error:.4f}, encoder {encoding:.1f} s over {len(rows)} clips", flush=True)


if __name__ == "__main__":
    main()
