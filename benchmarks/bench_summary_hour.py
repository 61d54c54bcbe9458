"""A one-hour transcript summarized on this CPU with a bart-large-cnn-shaped random model.

    python benchmarks/bench_summary_hour.py [--minutes 60] [--max-length 142] [--out FILE]

No BART checkpoint can be downloaded here, so the model has bart-large-cnn's shape (d_model
1024, 12+12 layers, 1,024 positions) and generation settings (4 beams, length penalty 2,
lengths 56..142, no repeated trigrams) with random weights, and the tokenizer is GPT-2's byte
BPE (BART's own vocabulary, renumbered), taken from the bundled Whisper tiny.en: the token
counts, pieces and levels are those bart-large-cnn would see. Random weights do not stop
early, so every summary runs to its length bound: the time is an upper bound for a real model.
The transcript: the dev long-form recording transcribed by Scriba, its segments repeated
(shifted in time) until it lasts --minutes. Prints the pieces per level, the time, the
summary's length against max_length, and the sections with their time ranges.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

import torch
from bench_bart import cpu_name
from results_file import save_lines
from transformers import BartConfig, BartForConditionalGeneration, BartTokenizer, GenerationConfig

import scriba
from scriba.models.offline import offline_model_path
from scriba.runtime.loops import get_loop

HERE = os.path.dirname(os.path.abspath(__file__))
CHAPTER = os.path.join(HERE, "..", "..", "shared", "data", "dev_longform")
CNN_GENERATION = dict(
    num_beams=4, length_penalty=2.0, max_length=142, min_length=56, no_repeat_ngram_size=3,
    early_stopping=True, decoder_start_token_id=2, bos_token_id=0, eos_token_id=2, pad_token_id=1,
    forced_bos_token_id=0, forced_eos_token_id=2,
)  # fmt: skip


def write_gpt2_bart_tokenizer(folder: str) -> None:
    """BART's tokenizer files from GPT-2's byte BPE (Whisper's English vocabulary): the
    specials first, as BART numbers them."""
    with open(os.path.join(offline_model_path("tiny.en"), "tokenizer.json"), encoding="utf-8") as f:
        bpe = json.load(f)["model"]
    tokens = sorted(bpe["vocab"], key=bpe["vocab"].get)
    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", *tokens, "<mask>"])}
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write(
            "#version: 0.2\n" + "\n".join(m if isinstance(m, str) else " ".join(m) for m in bpe["merges"])
        )
    BartTokenizer(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt")).save_pretrained(
        folder
    )


def make_cnn_shaped_model(folder: str) -> None:
    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=50265, d_model=1024, encoder_layers=12, decoder_layers=12, encoder_attention_heads=16,
        decoder_attention_heads=16, encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_position_embeddings=1024,
        **{k: v for k, v in CNN_GENERATION.items() if k.endswith("token_id")},
    )  # fmt: skip
    model = BartForConditionalGeneration(config)
    model.generation_config = GenerationConfig(**CNN_GENERATION)
    model.save_pretrained(folder)
    write_gpt2_bart_tokenizer(folder)


def hour_transcript(minutes: float) -> scriba.Transcription:
    """The dev long-form chapter's transcript, its segments repeated until it lasts `minutes`."""
    chapter = sorted(f for f in os.listdir(CHAPTER) if f.endswith(".flac"))[0]
    once = scriba.transcribe(os.path.join(CHAPTER, chapter))
    segments, shift = [], 0.0
    while shift < minutes * 60:
        for s in once.segments:
            segments.append(dataclasses.replace(s, start=s.start + shift, end=s.end + shift))
        shift += once.duration
    text = "".join(s.text for s in segments).strip()
    return scriba.Transcription(text, "en", None, shift, segments)


def record_generated_lengths(model: str) -> list[list[int]]:
    """Per engine batch (one per level), the generated token count of each output."""
    loop = get_loop(model)
    generated, generate = [], loop.generate

    def recording(prompts, params, **kw):
        outputs = generate(prompts, params, **kw)
        generated.append([len(o.outputs[0].token_ids) for o in outputs])
        return outputs

    loop.generate = recording
    return generated


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--max-length", type=int, default=142)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    lines = [f"# python benchmarks/bench_summary_hour.py {' '.join(sys.argv[1:] if argv is None else argv)}"]
    say = lambda line: (print(line, flush=True), lines.append(line))  # noqa: E731
    say(f"# machine: {cpu_name()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}")
    transcript = hour_transcript(args.minutes)
    folder = tempfile.mkdtemp(prefix="scriba-cnn-shaped-")
    make_cnn_shaped_model(folder)
    tokenizer = BartTokenizer.from_pretrained(folder)
    tokens = len(tokenizer(transcript.text, add_special_tokens=False)["input_ids"])
    say(f"transcript: {transcript.duration / 60:.1f} min, {len(transcript.segments)} segments, "
        f"{len(transcript.text.split())} words, {tokens} tokens")  # fmt: skip
    scriba.summarize("Warm up.", model=folder, max_length=args.max_length)  # load, first allocations
    generated = record_generated_lengths(folder)
    start = time.perf_counter()
    summary = scriba.summarize(transcript, model=folder, max_length=args.max_length)
    elapsed = time.perf_counter() - start
    pieces = " -> ".join(map(str, summary.pieces))
    say(f"summarized in {elapsed:.1f} s: {summary.levels} levels, pieces {pieces}")
    # Generated tokens, as max_length counts them (with the decoder's 2 start tokens): the
    # random model's text re-tokenizes to other merges, so it is not counted from the text.
    say(
        f"summary: {generated[-1][0] + 2} tokens (max_length {args.max_length}), {len(summary.split())} words"
    )
    say(f"sections: {len(summary.sections)} (tokens each, max_length {args.max_length})")
    for s, n in zip(summary.sections, generated[0]):
        say(f"  {s.time_range}  {n + 2}")
    save_lines(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
