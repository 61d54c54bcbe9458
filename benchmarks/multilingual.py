"""The multilingual Whisper base on real non-English speech: Scriba against faster-whisper,
the same weights (the offline `base`: pip install 'scriba[multilingual]' and the bench extra).

    python -m benchmarks multilingual [--data DIR] [--english DIR] [--smoke]
        [--peers-python PEERS --openvino-models OV] [--vllm VLLM --vllm-model HF_BASE]
        [--out benchmarks/results/multilingual_base.tsv]

The data: a MANIFEST.tsv with the columns `file`, `language`, `reference_text` and, where a clip
has one, `english_translation` (the layout of tests/data/multilingual, the default and the smoke
run's set; the --english folder in
benchmarks/data.py's layout adds its short clips as English). Every clip, one at a time, the
language detected (none given), greedy, timestamps on, each system's defaults otherwise
(Scriba: Silero VAD for clips over 30 s; faster-whisper: beam_size=1, no VAD). Scriba runs in
float32 and in its CPU default (int8); faster-whisper in float32 and int8, its sampled
fallbacks seeded; with PEERS and OV (benchmarks/README.md: OpenVINO GenAI's environment and the
exported models), OpenVINO GenAI int8 (no temperature fallback; its own long-form loop); with
VLLM and HF_BASE (benchmarks/server.py's setup; `python -m benchmarks export-hf base HF_BASE`),
vLLM's CPU server in float32 (temperature 0, no fallback; long clips cut by its server).
Prints per system: the seconds, the languages detected right, per language the error rate
(WER; CER for Japanese and Chinese; Whisper's basic normalizer on both sides) and their mean
over the languages but English; then the clips with an English reference translated
(task=translate): WER per language and over them all. --out writes every figure as a table
(tests/whisper/test_whisper_base.py holds Scriba to faster-whisper's).
Keep the machine otherwise idle: the seconds are compared.
"""

from __future__ import annotations

import csv
import os
import subprocess
import time

import torch

import scriba
from benchmarks.data import edit_distance, speech_set, words
from benchmarks.report import ROOT, Report, suite_parser
from scriba.models.offline import offline_model_path

DATA = os.path.join(ROOT, "tests", "data", "multilingual")
CHARACTER_LANGUAGES = {"ja", "zh", "yue", "th", "lo", "my", "km", "bo"}  # written without spaces


def multilingual_units(language: str, text: str) -> list[str]:
    """Whisper's basic normalizer (lower case, punctuation and symbols dropped); words, or the
    characters of languages written without spaces between words."""
    from transformers.models.whisper.english_normalizer import BasicTextNormalizer

    # The normalizer drops text in parentheses; references put spoken words there.
    text = BasicTextNormalizer()(text.replace("(", " ").replace(")", " "))
    return list(text.replace(" ", "")) if language in CHARACTER_LANGUAGES else text.split()


def error_rate(language: str, refs: list[str], hyps: list[str]) -> float:
    """WER, or CER for languages written without spaces, pooled over the pairs."""
    pairs = [(multilingual_units(language, r), multilingual_units(language, h)) for r, h in zip(refs, hyps)]
    return sum(edit_distance(r, h) for r, h in pairs) / sum(len(r) for r, _ in pairs)


def load_clips(data: str, english: str | None = None) -> list[dict]:
    """The manifest's clips; with `english` (the dev_speech folder), its short English ones too."""
    with open(os.path.join(data, "MANIFEST.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    clips = [
        {
            "path": os.path.join(data, r["file"]),
            "language": r["language"],
            "ref": r["reference_text"],
            "english": r.get("english_translation") or None,
        }
        for r in rows
    ]
    if english:
        paths, refs = speech_set(english, "short")
        clips += [{"path": p, "language": "en", "ref": r, "english": None} for p, r in zip(paths, refs)]
    return clips


def scriba_system(**options):
    def run(path: str, task: str = "transcribe") -> tuple[str, str]:
        result = scriba.transcribe(path, model="base", task=task, **options)
        return result.language, result.text

    return run


def faster_whisper_system(compute_type: str):
    import ctranslate2
    from faster_whisper import WhisperModel

    model = WhisperModel(
        offline_model_path("base"),
        device="cpu",
        compute_type=compute_type,
        cpu_threads=torch.get_num_threads(),
    )

    def run(path: str, task: str = "transcribe") -> tuple[str, str]:
        ctranslate2.set_random_seed(0)  # its fallback's draws, the same in every run
        segments, info = model.transcribe(path, beam_size=1, task=task)
        return info.language, "".join(s.text for s in segments).strip()

    return run


def openvino_system(python: str, folder: str, clips: list[dict]):
    """OpenVINO GenAI int8 on the same weights exported (benchmarks/README.md), in its own Python
    through benchmarks/field_worker.py: every clip one by one, language detected; the texts of a
    task are computed at its first call, and `seconds` holds the worker's timed pass."""
    import json
    import subprocess

    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "field_worker.py")
    found: dict = {}

    def compute(task: str) -> None:
        paths = [c["path"] for c in clips if task == "transcribe" or c["english"]]
        command = [python, worker, "openvino-genai", folder, "one-by-one", *paths, "--rounds", "1"]
        done = subprocess.run([*command, "--task", task, "--detect"], capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"OpenVINO GenAI failed:\n{done.stderr[-3000:]}")
        out = json.loads(done.stdout.strip().splitlines()[-1])
        found.update({(p, task): pair for p, pair in zip(paths, zip(out["languages"], out["texts"]))})
        run.seconds = sum(out["seconds"][-1])

    def run(path: str, task: str = "transcribe") -> tuple[str, str]:
        if (path, task) not in found:
            compute(task)
        return found[(path, task)]

    return run


def vllm_system(vllm: str, folder: str):
    """vLLM's CPU server (`vllm serve FOLDER`, float32) on the same weights exported to a Hugging
    Face folder (python -m benchmarks export-hf base FOLDER): each clip a request to
    /v1/audio/transcriptions or /v1/audio/translations, temperature 0 as the other systems' first
    try; long clips cut as vLLM's server cuts them. Its verbose_json keeps only a long clip's last
    piece (vLLM 0.32), so the text is json's and the language detected a second, verbose_json
    request's (its seconds count both). `run.stop()` ends the server."""
    import httpx

    from benchmarks.server import free_port, wait_ready

    server: list[subprocess.Popen] = []  # started at the first request (the others run alone)
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    def start() -> None:
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_TARGET_DEVICE": "cpu"}
        command = [vllm, "serve", folder, "--port", str(port), "--dtype", "float32"]
        command += ["--served-model-name", "whisper"]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        server.append(subprocess.Popen(command, env=env, **quiet))
        wait_ready(base, server[0], timeout=600)

    def run(path: str, task: str = "transcribe") -> tuple[str, str]:
        if not server:
            start()
        route = "transcriptions" if task == "transcribe" else "translations"
        text = ask(route, path, "json")["text"]
        language = ask(route, path, "verbose_json").get("language") if task == "transcribe" else None
        return language, text.strip()

    def ask(route: str, path: str, response_format: str) -> dict:
        with open(path, "rb") as f:
            files = {"file": (os.path.basename(path), f.read())}
        data = {"model": "whisper", "temperature": "0", "response_format": response_format}
        response = httpx.post(f"{base}/v1/audio/{route}", files=files, data=data, timeout=600)
        response.raise_for_status()
        return response.json()

    run.stop = lambda: server and server[0].terminate()
    return run


def systems(say, smoke: bool, clips: list[dict], python: str | None, openvino: str | None) -> dict:
    found = {"Scriba default": scriba_system()}  # on a CPU: int8
    if not smoke:
        found["Scriba float32"] = scriba_system(dtype="float32")
    try:
        if not smoke:
            found["faster-whisper float32"] = faster_whisper_system("float32")
        found["faster-whisper int8"] = faster_whisper_system("int8")
    except ImportError:
        say("faster-whisper is not installed (pip install '.[bench]'): its rows are left out")
    exported = os.path.join(openvino or "", "base")
    if python and os.path.isdir(exported) and not smoke:
        found["OpenVINO GenAI int8"] = openvino_system(python, exported, clips)
    else:
        say(f"OpenVINO GenAI: no --peers-python or no export at {exported!r}: its rows are left out")
    return found


def measure(say, name: str, run, clips: list[dict]) -> list[dict]:
    run(clips[-1]["path"])  # warm-up: model load, first allocations
    start = time.perf_counter()
    found = [run(c["path"]) for c in clips]
    seconds = getattr(run, "seconds", time.perf_counter() - start)  # a peer's own timing
    right = sum(lang == c["language"] for (lang, _), c in zip(found, clips))
    say(f"\n{name}: {seconds:.1f} s, languages detected right {right}/{len(clips)}")
    rows = []
    for language in dict.fromkeys(c["language"] for c in clips):
        mine = [(c, f) for c, f in zip(clips, found) if c["language"] == language]
        refs = [c["ref"] for c, _ in mine]
        units = sum(len(multilingual_units(language, r)) for r in refs)
        errors = round(error_rate(language, refs, [f[1] for _, f in mine]) * units)
        metric = "cer" if language in CHARACTER_LANGUAGES else "wer"
        detected = sum(f[0] == language for _, f in mine)
        say(f"  {language}  {metric} {errors / units:.4f}  detected {detected}/{len(mine)}")
        rows.append(_row(name, language, metric, errors, units, len(mine), detected, f"{seconds:.1f}"))
    others = [float(r["error"]) for r in rows if r["language"] != "en"]
    if others:
        say(f"  macro over the {len(others)} languages but English: {sum(others) / len(others):.4f}")
    return rows


def translation_errors(clips: list[dict], texts: list[str]) -> tuple[int, int]:
    """(word errors, reference words) of `texts` against the clips' English references."""
    errors = sum(edit_distance(words(c["english"]), words(t)) for c, t in zip(clips, texts))
    return errors, sum(len(words(c["english"])) for c in clips)


def translations(say, name: str, run, clips: list[dict], seconds: str) -> list[dict]:
    """The clips with an English reference translated (task=translate): WER per language and
    over them all (benchmarks/data.py's words on both sides)."""
    clips = [c for c in clips if c["english"]]
    found = [run(c["path"], task="translate")[1] for c in clips]
    say(f"\n{name}, translated to English:")
    rows = []
    for language in [*dict.fromkeys(c["language"] for c in clips), "all"]:
        mine = [(c, f) for c, f in zip(clips, found) if language in (c["language"], "all")]
        errors, units = translation_errors([c for c, _ in mine], [f for _, f in mine])
        say(f"  {language} -> en  wer {errors / units:.4f}  ({errors}/{units})")
        if language != "all":
            say(f"    {mine[0][1][:160]!r}")
        rows.append(_row(name, f"{language}->en", "wer", errors, units, len(mine), "", seconds))
    return rows


def _row(system, language, metric, errors, units, clips, detected, seconds) -> dict:
    return {
        "system": system,
        "language": language,
        "metric": metric,
        "error": f"{errors / units:.4f}",
        "errors": errors,
        "units": units,
        "clips": clips,
        "detected": detected,
        "seconds": seconds,
    }


def main(argv: list[str]) -> int:
    parser = suite_parser("multilingual", __doc__)
    parser.add_argument("--data", default=DATA, help="MANIFEST.tsv: file, language, reference_text")
    parser.add_argument("--english", default=None, help="a folder in benchmarks/data.py's layout")
    parser.add_argument("--smoke", action="store_true", help="one short clip, two systems")
    parser.add_argument("--peers-python", default=None, help="the Python with openvino-genai")
    parser.add_argument("--openvino-models", default=None, help="the exported models' folder (base/ in it)")
    parser.add_argument("--vllm", default=None, help="the vllm command of a venv with vllm-cpu")
    parser.add_argument("--vllm-model", default=None, help="base exported to a Hugging Face folder")
    parser.add_argument("--out", default=None, help="write the per-language figures (TSV) here")
    args = parser.parse_args(argv)
    say = Report("multilingual", argv)
    clips = load_clips(args.data, args.english)
    if args.smoke:
        clips = sorted(clips, key=lambda c: os.path.getsize(c["path"]))[:1]
    say(f"torch {torch.get_num_threads()} threads; {len(clips)} clips")
    rows = []
    found = systems(say, args.smoke, clips, args.peers_python, args.openvino_models)
    if args.vllm and args.vllm_model and not args.smoke:
        found["vLLM CPU float32"] = vllm_system(args.vllm, args.vllm_model)
    for name, run in found.items():
        rows += measure(say, name, run, clips)
        if not args.smoke:
            rows += translations(say, name, run, clips, rows[-1]["seconds"])
        if hasattr(run, "stop"):
            run.stop()
    if args.out:
        with open(args.out, "w", newline="") as f:
            f.write("\n".join(say.lines[:3]) + "\n")  # the header: command, commit, versions, host
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
            writer.writeheader()
            writer.writerows(rows)
    return 0
