"""`scriba transcribe`'s subtitle flags: openai-whisper's line control for SRT and VTT, under its
own names in kebab case. Each needs word times, so any of them turns --word-timestamps on."""

from __future__ import annotations

import argparse

from scriba.transcription.subtitles import WORD_CUES, SubtitleOptions


def add_subtitle_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("subtitles (SRT/VTT; each turns on --word-timestamps)")
    group.add_argument("--max-line-width", type=int, default=None, help="characters a line at most")
    group.add_argument(
        "--max-line-count", type=int, default=None,
        help="lines a cue at most (with --max-line-width: lines run across segments)",
    )
    group.add_argument("--max-words-per-line", type=int, default=None, help="words a line at most")
    group.add_argument("--highlight-words", action="store_true", help="underline each word as it is spoken")
    group.add_argument("--word-cues", action="store_true", help="one cue per word")


def subtitle_options(args: argparse.Namespace) -> SubtitleOptions:
    """The flags as SubtitleOptions (--word-cues: a word a cue, whatever else is given)."""
    if args.word_cues:
        return WORD_CUES
    return SubtitleOptions(
        max_line_width=args.max_line_width,
        max_line_count=args.max_line_count,
        max_words_per_line=args.max_words_per_line,
        highlight_words=args.highlight_words,
    )
