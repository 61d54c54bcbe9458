"""One Whisper system timed on one workload, in the Python that has it installed; the field suite
(field.py) runs one of these per system and reads the JSON line it prints. A plain script: a peer's
Python runs it without Scriba's benchmarks package.

    python benchmarks/field_worker.py SYSTEM MODEL_FOLDER WORKLOAD FILE [FILE ...] [--rounds N]
        [--task transcribe|translate --detect]   (openvino-genai: the multilingual suite's runs)

SYSTEM: scriba | faster-whisper | faster-whisper-batched | openvino-genai.
WORKLOAD: one-by-one (each file alone: a person's request; per-file seconds kept) or one-call
(every file in a single call, for systems that take a list). The system is warmed up on the
first file, then each round is timed; every round's per-file seconds and the last round's texts
are printed. Greedy, English, timestamps on (as each system's default long-form needs them).
"""

from __future__ import annotations

import json
import sys
import time


def scriba_system(folder: str, **options):
    import scriba

    model = None if folder in ("", "tiny.en") else folder

    def one(files):
        return [t.text for t in scriba.transcribe(files, model=model, language="en", **options)]

    return one


def faster_whisper_system(folder: str, batched: bool):
    import os

    from faster_whisper import BatchedInferencePipeline, WhisperModel

    threads = len(os.sched_getaffinity(0))
    model = WhisperModel(folder, device="cpu", compute_type="int8", cpu_threads=threads)
    runner = BatchedInferencePipeline(model) if batched else model

    def one(files):
        options = dict(beam_size=1, language="en")
        if batched:
            options["batch_size"] = 8
        return ["".join(s.text for s in runner.transcribe(f, **options)[0]) for f in files]

    return one


def openvino_genai_system(folder: str, task: str = "transcribe", detect: bool = False):
    import openvino_genai
    import soundfile as sf
    import soxr

    pipe = openvino_genai.WhisperPipeline(folder, "CPU")
    multilingual = pipe.get_generation_config().is_multilingual

    def read(path):
        wave, rate = sf.read(path, dtype="float32", always_2d=True)
        wave = wave.mean(axis=1)
        return wave if rate == 16000 else soxr.resample(wave, rate, 16000)

    def one(files):
        texts = []
        for path in files:
            options = dict(return_timestamps=True)
            if multilingual:  # an English-only model takes neither
                options.update(task=task, **({} if detect else {"language": "<|en|>"}))
            result = pipe.generate(read(path).tolist(), **options)
            found = getattr(result, "language", None) or (getattr(result, "languages", None) or [None])[0]
            languages.append(found.strip("<|>") if found else None)
            texts.append(str(result))
        return texts

    languages: list = []  # each file's, as detected (the last round's are printed)
    one.languages = languages
    return one


def system(name: str, folder: str, task: str = "transcribe", detect: bool = False):
    if name == "scriba":
        return scriba_system(folder)
    if name in ("faster-whisper", "faster-whisper-batched"):
        return faster_whisper_system(folder, name.endswith("batched"))
    if name == "openvino-genai":
        return openvino_genai_system(folder, task, detect)
    raise SystemExit(f"unknown system {name!r}")


def main(argv: list[str]) -> None:
    rounds = 3
    if "--rounds" in argv:
        i = argv.index("--rounds")
        rounds, argv = int(argv[i + 1]), argv[:i] + argv[i + 2 :]
    task, detect = "transcribe", "--detect" in argv
    argv = [a for a in argv if a != "--detect"]
    if "--task" in argv:
        i = argv.index("--task")
        task, argv = argv[i + 1], argv[:i] + argv[i + 2 :]
    name, folder, workload, *files = argv
    run = system(name, folder, task, detect)
    run(files[:1])  # warm-up: model load, first allocations, compilation
    seconds, texts = [], []
    for _ in range(rounds):
        if workload == "one-by-one":
            per_file = []
            texts = []
            for f in files:
                start = time.perf_counter()
                texts += run([f])
                per_file.append(time.perf_counter() - start)
            seconds.append(per_file)
        else:
            start = time.perf_counter()
            texts = run(files)
            seconds.append([time.perf_counter() - start])
    languages = getattr(run, "languages", [])[-len(files) :]
    print(json.dumps({"seconds": seconds, "texts": texts, "languages": languages}))


if __name__ == "__main__":
    main(sys.argv[1:])
