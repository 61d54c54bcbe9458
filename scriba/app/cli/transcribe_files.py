"""`scriba transcribe FILE|FOLDER ...`: every file's transcript printed, or written under
--output-dir in each --format asked (the input tree mirrored), one progress bar over the files.

Files are read and decoded a group at a time (GROUP_SECONDS of audio, GROUP_FILES files at
most): the windows of a group's files batch together, and a folder of long recordings is never
all in memory at once. A file that cannot be read or transcribed is said in one line and the
others go on; the exit status is how many failed.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from scriba.app.cli.engine_options import engine_options
from scriba.app.cli.inputs import Input, done_already, inputs_of, refuse_collisions
from scriba.app.cli.subtitle_flags import subtitle_options
from scriba.app.cli.transcribe_flags import transcribe_options as flags_to_options
from scriba.transcription.writers import FORMATS

GROUP_SECONDS = 600.0
GROUP_FILES = 16
STREAMED = ("txt", "srt", "vtt", "tsv", "lrc")  # printed segment by segment as they are decoded


def add_output_flags(parser: argparse.ArgumentParser) -> None:
    out = parser.add_argument_group("output").add_argument
    out(
        "--format", action="append", type=_formats, default=None, metavar="FORMAT[,FORMAT...]",
        help=f"one of {', '.join(FORMATS)}, or several, comma-separated or repeated "
        "(several, and docx, need --output-dir; default: txt)",
    )
    out(
        "--output-dir", default=None,
        help="write <file stem>.<format> there instead of printing (a folder's files under their paths)",
    )
    out("--times", action="store_true", help="docx, html, md: each paragraph's start time")
    out("--glob", default=None, help='in folders, only the files matching this (e.g. "*.wav")')
    out(
        "--skip-existing", action="store_true",
        help="with --output-dir: skip a file whose outputs are all there and newer than it",
    )


def _formats(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    for name in names or [text]:
        if name not in FORMATS:
            raise argparse.ArgumentTypeError(f"invalid choice: {name!r} (choose from {', '.join(FORMATS)})")
    return names


def formats_of(args: argparse.Namespace) -> list[str]:
    """The formats asked, each once, in order (default txt)."""
    asked = [name for group in args.format or [["txt"]] for name in group]
    return list(dict.fromkeys(asked))


def transcribe_options(args: argparse.Namespace):
    """`scriba transcribe`'s flags as TranscribeOptions (subtitle lines need word times)."""
    options = flags_to_options(args, engine_options(args))
    if not subtitle_options(args).is_plain and not options.word_timestamps:
        options = replace(options, word_timestamps=True)
    return options


def _check_outputs(args: argparse.Namespace, formats: list[str]) -> None:
    if args.output_dir:
        return
    if len(formats) > 1:
        raise ValueError("several formats are written to files: give --output-dir")
    if formats == ["docx"]:
        raise ValueError("docx is a binary file, not text: give --output-dir")
    if args.skip_existing:
        raise ValueError("--skip-existing needs --output-dir")


def run_transcribe(args: argparse.Namespace) -> int:
    formats = formats_of(args)
    _check_outputs(args, formats)
    inputs = inputs_of(args.files, args.glob)
    if args.output_dir:
        refuse_collisions(inputs, formats, args.output_dir)
    todo = [one for one in inputs if not (args.skip_existing and done_already(one, formats, args.output_dir))]
    if len(todo) < len(inputs):
        skipped = len(inputs) - len(todo)
        print(f"scriba: {skipped} of {len(inputs)} files done already, skipped", file=sys.stderr)
    options = transcribe_options(args)  # a bad option is said before any file is read
    one_printed = len(todo) == 1 and len(inputs) == 1 and not args.output_dir and not options.diarize
    if one_printed and formats[0] in STREAMED:
        return _print_as_decoded(todo[0], options, args, formats[0])
    return _transcribe_all(todo, options, args, formats)


def _print_as_decoded(one: Input, options, args: argparse.Namespace, fmt: str) -> int:
    """One file to the terminal: each segment printed as soon as it is decoded, in order."""
    from scriba.media.load import SAMPLE_RATE, AudioError, load_audio
    from scriba.transcription.stream import transcribe_stream
    from scriba.transcription.writers import stream_transcript

    try:
        audio = (load_audio(one.path), SAMPLE_RATE)
    except AudioError as e:
        print(f"scriba: error: {e}", file=sys.stderr)
        return 1
    bar = sys.stderr.isatty() and not sys.stdout.isatty()  # on a terminal, the text is the progress
    segments, _ = transcribe_stream(audio, options, progress=bar)
    for piece in stream_transcript(segments, fmt, subtitle_options(args)):
        print(piece, end="", flush=True)
    return 0


def _transcribe_all(todo: list[Input], options, args: argparse.Namespace, formats: list[str]) -> int:
    from scriba.app.cli.files_bar import FilesBar
    from scriba.transcription.transcribe import transcribe

    failed, bar = 0, FilesBar(len(todo))
    windows_bar = len(todo) == 1 and sys.stderr.isatty()  # one file: its windows are the progress
    for group, unread in _groups(todo):
        for one, error in unread:
            failed += 1
            bar.said(f"scriba: error: {error}")
        results = transcribe([audio for _, audio in group], options, progress=windows_bar) if group else []
        for (one, _), result in zip(group, results):
            if result.error:
                failed += 1
                bar.said(f"scriba: error: {one.path}: {result.error}")
                continue
            bar.done(one, _deliver(one, result, args, formats, many=len(todo) > 1))
    bar.close()
    return min(failed, 125)


def _groups(todo: list[Input]):
    """(group: [(input, (samples, rate))], unread: [(input, error)]) a group at a time."""
    from scriba.media.load import SAMPLE_RATE, AudioError, load_audio

    group, unread, seconds = [], [], 0.0
    for one in todo:
        try:
            samples = load_audio(one.path)
        except AudioError as e:
            unread.append((one, e))
            continue
        group.append((one, (samples, SAMPLE_RATE)))
        seconds += len(samples) / SAMPLE_RATE
        if seconds >= GROUP_SECONDS or len(group) >= GROUP_FILES:
            yield group, unread
            group, unread, seconds = [], [], 0.0
    if group or unread:
        yield group, unread


def _deliver(one: Input, result, args: argparse.Namespace, formats: list[str], many: bool) -> list[str]:
    """Writes the file's outputs (the paths written) or prints its transcript (no paths)."""
    from scriba.transcription.writers import format_transcript, write_transcript

    subtitles = subtitle_options(args)
    if args.output_dir:
        return [
            write_transcript(result, fmt, args.output_dir, one.stem, subtitles, args.times) for fmt in formats
        ]
    if many:
        print(f"==> {one.path} <==")
    print(format_transcript(result, formats[0], subtitles, args.times), end="", flush=True)
    return []
