"""The `scriba` command line.

    scriba generate MODEL [TEXT ...] [--max-tokens N] [--temperature T] [--seed S] [--json]

Reads texts from the arguments, or one per line from standard input when none are given.
"""

from __future__ import annotations

import argparse
import json
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scriba", description="Scriba: encoder/decoder inference (BART, Whisper).")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="run an encoder/decoder model on texts")
    gen.add_argument("model", help="Hugging Face hub id or local checkpoint folder")
    gen.add_argument("texts", nargs="*", help="input texts (default: one per line from stdin)")
    gen.add_argument("--max-tokens", type=int, default=64)
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.add_argument("--top-p", type=float, default=1.0)
    gen.add_argument("--seed", type=int, default=None)
    gen.add_argument("--device", default="auto")
    gen.add_argument("--json", action="store_true", help="print one JSON object per input")
    return parser


def run_generate(args: argparse.Namespace) -> int:
    from scriba import Engine, SamplingParams

    texts = args.texts or [line.rstrip("\n") for line in sys.stdin if line.strip()]
    if not texts:
        raise ValueError("no input texts: give them as arguments or on standard input")
    params = SamplingParams(max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed)
    engine = Engine(args.model, device=args.device)
    for out in engine.generate(texts, params):
        completion = out.outputs[0]
        if args.json:
            record = {"input": out.encoder_prompt, "text": completion.text, "token_ids": completion.token_ids, "finish_reason": completion.finish_reason}
            print(json.dumps(record, ensure_ascii=False))
        else:
            print(completion.text)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run_generate(args)
    except (OSError, ValueError, TypeError) as e:  # bad model, bad input: one line, no traceback
        print(f"scriba: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
