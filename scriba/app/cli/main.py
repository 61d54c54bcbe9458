"""The `scriba` command line.

    scriba transcribe FILE|FOLDER ... [--model M] [--language L] [--task T] [--mode M] [--beam-size K]
                               [--format txt|srt|vtt|tsv|lrc|json|docx|html|md[,...]] [--output-dir DIR]
                               [--glob PATTERN] [--skip-existing] [--times] [--max-line-width N]
                               [--max-line-count N] [--max-words-per-line N] [--highlight-words]
                               [--word-cues] [faster-whisper's
                               options: --hotwords, --prefix, --multilingual, --clip-timestamps, ...]
    scriba summarize FILE|TRANSCRIPT.json|- [--model M] [--max-length N] [--min-length N] [--format txt|json]
    scriba ui [--host 127.0.0.1] [--port 7860] [--share]
    scriba download MODEL [--revision R] [--to FOLDER]
    scriba serve [--host 127.0.0.1] [--port 8000] [--model M ...] [--summarizer S] [--api-key KEY] [--ui]
    scriba voices add NAME CLIP... [--replace|--extend] | list | remove NAME | rename OLD NEW
    scriba batch INPUTS... --output OUT.jsonl|OUT.parquet [--workers N] [--ray-address ADDR]
    scriba generate MODEL [TEXT ...] [--max-tokens N] [--temperature T] [--seed S] [--json]

Commands that run a model take --device, --dtype, --quantization int8, --kv-cache-dtype and
--threads.
Errors print one line on stderr and exit 1; bad usage exits 2 (argparse).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from scriba.app.cli.engine_options import add_engine_options, engine_options
from scriba.app.cli.subtitle_flags import add_subtitle_flags
from scriba.app.cli.transcribe_files import add_output_flags, run_transcribe
from scriba.app.cli.transcribe_flags import add_transcribe_flags
from scriba.app.cli.voices import add_voices_parser, run_voices
from scriba.app.cluster.commands import (
    add_batch_parser,
    add_ray_serve_options,
    run_batch,
    run_serve_on_ray,
)
from scriba.summarization import DEFAULT_SUMMARIZER

MODEL_TTL = 300.0  # scriba serve: seconds a model stays loaded unused (speaches' default)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scriba", description="Scriba: encoder/decoder inference (BART, Whisper)."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_generate(sub)
    _add_transcribe(sub)
    _add_summarize(sub)
    _add_ui(sub)
    _add_serve(sub)
    _add_download(sub)
    _add_prepare(sub)
    add_voices_parser(sub)
    add_batch_parser(sub)
    return parser


def _add_generate(sub) -> None:
    gen = sub.add_parser("generate", help="run an encoder/decoder model on texts")
    gen.add_argument("model", help="Hugging Face hub id or local checkpoint folder")
    gen.add_argument("texts", nargs="*", help="input texts (default: one per line from stdin)")
    gen.add_argument("--max-tokens", type=int, default=64)
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--seed", type=int, default=None)
    add_engine_options(gen)
    gen.add_argument("--json", action="store_true", help="print one JSON object per input")


def _add_transcribe(sub) -> None:
    tr = sub.add_parser(
        "transcribe", help="transcribe audio and video files, or folders of them (default model: tiny.en)"
    )
    tr.add_argument(
        "files", nargs="+", metavar="FILE|FOLDER",
        help="audio or video files (wav, flac, ogg, mp3, m4a, mp4, mkv, webm, opus, ...) or folders of them",
    )
    add_transcribe_flags(tr)
    add_subtitle_flags(tr)
    add_output_flags(tr)
    add_engine_options(tr)


def _add_summarize(sub) -> None:
    sm = sub.add_parser(
        "summarize", help="summarize a text file or a transcript's JSON (with sections), or standard input"
    )
    sm.add_argument(
        "file", help="a text file, a `scriba transcribe --format json` file, or - for standard input"
    )
    sm.add_argument(
        "--model",
        default=DEFAULT_SUMMARIZER,
        help=f"a BART checkpoint: Hugging Face id or folder (default {DEFAULT_SUMMARIZER}, "
        "downloaded on first use: it needs the network once)",
    )
    sm.add_argument(
        "--max-length", type=int, default=None, help="tokens per summary at most (default: the model's)"
    )
    sm.add_argument(
        "--min-length", type=int, default=None, help="tokens per summary at least (default: the model's)"
    )
    sm.add_argument(
        "--format", default="txt", choices=["txt", "json"], help="json: the summary, its levels and sections"
    )
    add_engine_options(sm)


def _add_ui(sub) -> None:
    ui = sub.add_parser("ui", help="start the web app (Gradio)")
    ui.add_argument("--host", default="127.0.0.1", help="interface to bind (default: this machine only)")
    ui.add_argument("--port", type=int, default=7860)
    ui.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    ui.add_argument(
        "--whisper-model",
        action="append",
        default=None,
        help="a Whisper model the page offers (repeat for several; the first loads at start; "
        "default: the bundled tiny.en)",
    )
    ui.add_argument("--summarizer", default=DEFAULT_SUMMARIZER, help="the BART model of the Summarize tab")


def _add_serve(sub) -> None:
    sv = sub.add_parser("serve", help="an OpenAI-compatible server (/v1/audio/transcriptions, ...)")
    sv.add_argument("--host", default="127.0.0.1", help="interface to bind (default: this machine only)")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--model", action="append", default=None, help="a Whisper model to serve (repeatable)")
    sv.add_argument("--summarizer", default=None, help="a summarization model to serve")
    sv.add_argument("--api-key", default=None, help="require Authorization: Bearer KEY on /v1 routes")
    sv.add_argument("--allow-models", default="", help="comma-separated extra models requests may ask for")
    sv.add_argument("--max-loaded", type=int, default=2, help="engines kept loaded (least recently used go)")
    sv.add_argument(
        "--model-ttl", type=float, default=MODEL_TTL, metavar="SECONDS",
        help=f"unload a model unused this long (default {MODEL_TTL:g}; -1: never; 0: after each request)",
    )
    sv.add_argument(
        "--preload", action="append", default=None, metavar="MODEL",
        help="load this served model at start (repeatable; default: the first --model)",
    )
    sv.add_argument("--ui", action="store_true", help="also mount the web app at /ui")
    add_engine_options(sv)
    add_ray_serve_options(sv)


def _add_download(sub) -> None:
    dl = sub.add_parser("download", help="fetch a model from the Hugging Face hub for offline use")
    dl.add_argument("model", help="hub id, e.g. facebook/bart-large-cnn or openai/whisper-small")
    dl.add_argument("--revision", default=None, help="branch, tag or commit")
    dl.add_argument("--to", default=None, help="a folder to put it in (default: the Hugging Face cache)")


def _add_prepare(sub) -> None:
    pr = sub.add_parser(
        "prepare",
        help="compile the CPU kernels and time the encoders now, so that a first run starts warm",
    )
    pr.add_argument(
        "--model", action="append", default=None,
        help="a model to prepare (repeatable; default: every offline model installed)",
    )


def run_prepare(args: argparse.Namespace) -> int:
    from scriba.transcription.prepare import prepare

    prepare(args.model)
    return 0


def run_serve(args: argparse.Namespace) -> int:
    try:
        from scriba.app.server.app import ServerSettings, serve
        from scriba.app.server.models import ServedModels
    except ImportError as e:
        raise ImportError(
            f"scriba serve needs the server extra ({e.name} is missing): pip install 'scriba[server]'"
        ) from None

    config = engine_options(args)
    allow = [m.strip() for m in args.allow_models.split(",") if m.strip()]
    if args.ray:
        return run_serve_on_ray(args, config, allow)
    on_demand = dict(max_loaded=args.max_loaded, ttl=args.model_ttl, preload=args.preload or ())
    served = ServedModels(args.model or [], args.summarizer, allow, **on_demand, **config)
    ui = None
    if args.ui:
        from scriba.app.ui import build_ui

        ui = build_ui(args.model, args.summarizer or DEFAULT_SUMMARIZER)
    serve(served, ServerSettings(api_key=args.api_key), args.host, args.port, ui)
    return 0


def run_download(args: argparse.Namespace) -> int:
    from scriba.models.loader import download_model

    print(download_model(args.model, args.revision, args.to))
    return 0


def run_generate(args: argparse.Namespace) -> int:
    from scriba import Engine, SamplingParams

    texts = args.texts or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    if not texts:
        raise ValueError("no input texts: give them as arguments or on standard input")
    params = SamplingParams(
        max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed
    )
    engine = Engine(args.model, **engine_options(args))
    for out in engine.generate(texts, params):
        completion = out.outputs[0]
        if args.json:
            record = {
                "input": out.encoder_prompt,
                "text": completion.text,
                "token_ids": completion.token_ids,
                "finish_reason": completion.finish_reason,
            }
            print(json.dumps(record, ensure_ascii=False))
        else:
            print(completion.text)
    return 0


def run_summarize(args: argparse.Namespace) -> int:
    from scriba.summarization.summarize import summarize

    text = sys.stdin.read() if args.file == "-" else _read_text(args.file)
    summary = summarize(
        _transcript_or_text(text),
        model=args.model,
        max_length=args.max_length,
        min_length=args.min_length,
        **engine_options(args),
    )
    if args.format == "json":
        print(json.dumps(summary.to_dict(), ensure_ascii=False, indent=2))
        return 0
    print(summary)
    if len(summary.sections) > 1:
        print("\n" + "\n".join(f"{s.time_range}  {' '.join(s.summary.split())}" for s in summary.sections))
    if summary.levels > 1:
        levels = " -> ".join(str(n) for n in summary.pieces)
        print(f"scriba: summarized in {summary.levels} levels ({levels} pieces)", file=sys.stderr)
    return 0


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _transcript_or_text(text: str):
    """A transcript's JSON (`scriba transcribe --format json`) as its dict; anything else as text."""
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return text
        if isinstance(data, dict) and "segments" in data:
            return data
    return text


def run_ui(args: argparse.Namespace) -> int:
    try:
        from scriba.app.ui import launch
    except ImportError as e:
        missing = f"scriba ui needs the ui extra ({e.name} is missing)"
        raise ImportError(f"{missing}: pip install 'scriba[ui]'") from None

    launch(
        host=args.host,
        port=args.port,
        share=args.share,
        whisper_model=args.whisper_model,
        summarizer=args.summarizer,
    )
    return 0


COMMANDS = {
    "generate": run_generate,
    "transcribe": run_transcribe,
    "summarize": run_summarize,
    "ui": run_ui,
    "download": run_download,
    "prepare": run_prepare,
    "serve": run_serve,
    "batch": run_batch,
    "voices": run_voices,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (
        OSError,
        ValueError,
        TypeError,
        UnicodeDecodeError,
        ImportError,  # an optional extra that is not installed (e.g. Ray): the message says how
    ) as e:  # bad model, bad input: one line, no traceback
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"scriba: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("scriba: interrupted", file=sys.stderr)
        return 130


# Commands that hold nothing to clean up once they have printed or written their results.
QUICK_EXIT = ("transcribe", "summarize", "generate", "download")


def console() -> None:
    """The `scriba` console script: main(), then, for the commands above, straight out once
    the output is flushed. The interpreter's own shutdown (freeing torch, OpenVINO, numba and the
    engine's memory one object at a time) took 0.7-0.8 s after a one-clip transcription on
    this project's 2-core machine, longer than the clip's decoding; the OS frees it all at once.
    The heap's settings come first, before any thread of numpy's, torch's or OpenVINO's takes
    an arena of its own (engine/host_heap.py)."""
    from scriba.engine.host_heap import reuse_freed_memory

    reuse_freed_memory()
    code = main()
    if len(sys.argv) > 1 and sys.argv[1] in QUICK_EXIT:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console()
