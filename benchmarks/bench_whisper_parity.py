"""Scriba vs transformers on the bundled Whisper tiny.en (same weights), on this machine.

Audio: real speech (jfk.flac, 11 s) laid end to end with pauses of 0.3-1.5 s. Greedy
decoding, no timestamps, at most 224 new tokens per 30 s window, sdpa attention and the
weights from Scriba's CTranslate2 reader for transformers. Two workloads, in one run:

1. Short clips (4-30 s), all in one batch: Scriba's `Engine.generate` (one audio request
   per clip) vs `WhisperForConditionalGeneration.generate()` on the batched features. The
   tokens must agree.
2. Long recordings (1-3 min): `scriba.transcribe(mode="batched")` vs the transformers
   pipeline as its docs recommend for long audio (`chunk_length_s=30, batch_size=16`,
   greedy). The pipeline's chunks overlap by 5 s on each side; Scriba's windows do not.
faster-whisper (CTranslate2), when installed, runs workload 2 on the same folder: the bar.
Everything is warmed up first; the best of --repeats runs counts. Prints the real-time
factor (seconds of audio per second of compute) and the ratios.

    python benchmarks/bench_whisper_parity.py                   # 24 clips, 4 recordings
    python benchmarks/bench_whisper_parity.py --num-clips 8 --num-files 2 --repeats 1
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from scriba import Engine, SamplingParams
from scriba.media.load import load_audio
from scriba.models.registry import default_model_path
from scriba.whisper.checkpoint_config import transformers_configs
from scriba.whisper.ctranslate2 import load_ctranslate2_whisper
from scriba.whisper.log_mel import log_mel

HERE = os.path.dirname(os.path.abspath(__file__))
JFK = os.path.join(HERE, "..", "assets", "jfk.flac")
MAX_NEW = 224


def speech(copies: int, rng) -> np.ndarray:
    jfk, parts = load_audio(JFK), []
    for _ in range(copies):
        parts += [jfk * rng.uniform(0.5, 1.0), np.zeros(int(16000 * rng.uniform(0.3, 1.5)), np.float32)]
    return np.concatenate(parts).astype(np.float32)


def make_clips(num: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    audio = speech(4 * num, rng)
    clips, start = [], 0
    for _ in range(num):
        length = int(16000 * rng.uniform(4, 30))
        clips.append(audio[start : start + length])
        start += length
    return clips


def run_scriba(engine: Engine, clips) -> list[list[int]]:
    outputs = engine.generate([{"audio": (c, 16000)} for c in clips], SamplingParams(max_tokens=MAX_NEW))
    eot = engine.model.tokens.eot
    return [[t for t in o.outputs[0].token_ids if t != eot] for o in outputs]


def run_transformers(model, clips) -> list[list[int]]:
    features = torch.tensor(log_mel(clips, 80))  # the same extractor transformers' processor uses
    with torch.inference_mode():
        out = model.generate(input_features=features, max_new_tokens=MAX_NEW, return_timestamps=False)
    gen = model.generation_config
    # Rows may start with the control tokens, and end without <|endoftext|> (the longest)
    # or padded with it (the others): compare the text tokens.
    control = {gen.eos_token_id, gen.decoder_start_token_id, gen.no_timestamps_token_id}
    return [[t for t in row if t not in control] for row in out.tolist()]


def hf_pipeline(model, folder: str):
    from transformers import WhisperFeatureExtractor, WhisperTokenizerFast, pipeline

    tokenizer = WhisperTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer.json"))
    tokenizer.pad_token = "<|endoftext|>"
    asr = pipeline(
        "automatic-speech-recognition",
        model=model,
        tokenizer=tokenizer,
        feature_extractor=WhisperFeatureExtractor(feature_size=80),
        chunk_length_s=30,
        batch_size=16,
        device="cpu",
    )
    kwargs = dict(num_beams=1, max_new_tokens=MAX_NEW)
    return lambda files: [
        o["text"] for o in asr([{"raw": f, "sampling_rate": 16000} for f in files], generate_kwargs=kwargs)
    ]


def run_faster_whisper(folder: str, files):
    try:
        from faster_whisper import BatchedInferencePipeline, WhisperModel
    except ImportError:
        return None
    model = BatchedInferencePipeline(
        WhisperModel(folder, device="cpu", compute_type="float32", cpu_threads=torch.get_num_threads())
    )

    def run():
        for f in files:
            list(model.transcribe(f, beam_size=1, without_timestamps=True, batch_size=16)[0])

    return run


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-clips", type=int, default=24)
    parser.add_argument("--num-files", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from bench_bart import cpu_name
    from transformers import WhisperForConditionalGeneration

    folder = default_model_path()
    clips = make_clips(args.num_clips, args.seed)
    seconds = sum(len(c) for c in clips) / 16000
    print(f"device: {cpu_name()} ({torch.get_num_threads()} threads), torch {torch.__version__}")
    print(
        "model: Whisper tiny.en (bundled CTranslate2 folder), float32; "
        f"{len(clips)} clips, {seconds:.0f} s of audio, greedy, no timestamps"
    )

    engine = Engine(folder, device="cpu", dtype="float32")
    state_dict, *configs = load_ctranslate2_whisper(folder)
    config, generation_config = transformers_configs(*configs)
    config._attn_implementation = "sdpa"
    hf = WhisperForConditionalGeneration(config)
    hf.load_state_dict({k: v.float() for k, v in state_dict.items()}, strict=False)
    hf.generation_config = generation_config
    hf.eval()

    print("\n1. short clips, one batch")
    ours, theirs = run_scriba(engine, clips), run_transformers(hf, clips)  # warm-up, and the check
    same = sum(a == b for a, b in zip(ours, theirs))
    t_scriba = best_of(args.repeats, lambda: run_scriba(engine, clips))
    t_hf = best_of(args.repeats, lambda: run_transformers(hf, clips))
    print(f"same tokens as transformers: {same}/{len(clips)}")
    report(seconds, [("Scriba Engine.generate", t_scriba), ("transformers generate()", t_hf)])

    import scriba

    rng = np.random.default_rng(args.seed + 1)
    files = [speech(int(n), rng) for n in np.linspace(5, 15, args.num_files)]
    seconds = sum(len(f) for f in files) / 16000
    print(f"\n2. {len(files)} recordings, {seconds:.0f} s of audio in all, long-form")
    ours = lambda: scriba.transcribe(files, timestamps=False, temperature=0.0, mode="batched")  # noqa: E731
    pipe = hf_pipeline(hf, folder)
    texts_ours, texts_hf = [r.text for r in ours()], pipe(files)
    for name, texts in (("Scriba", texts_ours), ("transformers", texts_hf)):
        counts = [t.lower().count("fellow americans") for t in texts]
        print(
            f"{name}: 'fellow americans' found {counts} times (spoken "
            f"{[int(n) for n in np.linspace(5, 15, args.num_files)]})"
        )
    rows = [
        ("scriba.transcribe (batched)", best_of(args.repeats, ours)),
        ("transformers pipeline", best_of(args.repeats, lambda: pipe(files))),
    ]
    fw = run_faster_whisper(folder, files)
    if fw is not None:
        fw()
        rows.append(("faster-whisper (batched)", best_of(args.repeats, fw)))
    else:
        print("faster-whisper: not installed (pip install faster-whisper to compare)")
    report(seconds, rows)


def report(seconds: float, rows: list[tuple[str, float]]) -> None:
    print(f"{'system':<30}{'seconds':>10}{'real-time factor':>20}")
    for name, t in rows:
        print(f"{name:<30}{t:>10.2f}{seconds / t:>19.1f}x")
    ours = rows[0][1]
    for name, t in rows[1:]:
        print(f"Scriba / {name}: {t / ours:.2f}x")


if __name__ == "__main__":
    main()
