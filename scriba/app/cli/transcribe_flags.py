"""The transcription flags `scriba transcribe` and `scriba batch` share, and TranscribeOptions
from them: openai-whisper's and faster-whisper's options under their own names, in kebab case.
A flag that is not given leaves its option to TranscribeOptions' own default, which the help
shows: no default is written here."""

from __future__ import annotations

import argparse
import dataclasses

# option -> (flag, type, what it means); a bool option is a switch that flips its default
FLAGS = {
    "model": ("--model", str, "Whisper checkpoint: hub id, folder, or CTranslate2 folder"),
    "language": ("--language", str, "language code or name (default: detect)"),
    "task": ("--task", ["transcribe", "translate"], "transcribe, or translate to English"),
    "mode": ("--mode", ["batched", "sequential"], "every window at once, or openai-whisper's loop"),
    "beam_size": ("--beam-size", int, "beams (1: greedy)"),
    "timestamps": ("--no-timestamps", bool, "one segment per window, no timestamp tokens"),
    "word_timestamps": ("--word-timestamps", bool, "time each word (JSON gets words; SRT/VTT cues on words)"),
    "diarize": ("--diarize", bool, "who spoke when: speaker labels on segments and words"),
    "num_speakers": ("--num-speakers", int, "with --diarize: exactly this many speakers"),
    "min_speakers": ("--min-speakers", int, "with --diarize: at least this many speakers"),
    "max_speakers": ("--max-speakers", int, "with --diarize: at most this many speakers"),
    "use_voice_library": ("--no-voices", bool, "with --diarize: do not name speakers from the voice library"),
    "language_detection_threshold": (
        "--language-detection-threshold", float,
        "a speech window this sure of its language decides it (else more windows vote)",
    ),
    "language_detection_segments": ("--language-detection-segments", int, "speech windows that vote at most"),
}
# faster-whisper's transcribe() options (docs/transcription.md has the table)
DECODING_FLAGS = {
    "initial_prompt": ("--initial-prompt", str, "text the first window is conditioned on"),
    "hotwords": ("--hotwords", str, "hint phrases put before every window's previous text"),
    "prefix": ("--prefix", str, "the text the file's first window starts with"),
    "multilingual": ("--multilingual", bool, "detect each window's language (segments carry it)"),
    "clip_timestamps": ("--clip-timestamps", str, "decode only these clips: 'start,end,start,end' seconds"),
    "max_new_tokens": ("--max-new-tokens", int, "tokens per window at most (default: the model's limit)"),
    "suppress_tokens": (
        "--suppress-tokens", str,
        "token ids never written, comma-separated (write --suppress-tokens=-1,50362); "
        "-1: the model's non-speech set; '': none",
    ),
    "suppress_blank": ("--no-suppress-blank", bool, "let a window start with a blank"),
    "max_initial_timestamp": ("--max-initial-timestamp", float, "seconds: the first timestamp's latest"),
    "prepend_punctuations": ("--prepend-punctuations", str, "marks joined to the next word"),
    "append_punctuations": ("--append-punctuations", str, "marks joined to the previous word"),
    "best_of": ("--best-of", int, "samples drawn at a fallback temperature, the likeliest kept"),
    "prompt_reset_on_temperature": (
        "--prompt-reset-on-temperature", float,
        "a window decoded above this temperature gives the next no previous text",
    ),
    "patience": ("--patience", float, "beam search: finished hypotheses = beam size x this"),
    "length_penalty": ("--length-penalty", float, "beam search: score / length ** this"),
    "repetition_penalty": ("--repetition-penalty", float, "> 1 makes repeating a token less likely"),
    "no_repeat_ngram_size": ("--no-repeat-ngram-size", int, "never repeat an n-gram this long (0: off)"),
}  # fmt: skip


def option_defaults() -> dict:
    from scriba.transcription.options import TranscribeOptions

    return {f.name: f.default for f in dataclasses.fields(TranscribeOptions)}


def _add(add, option: str, flag: str, kind, meaning: str, default) -> None:
    if kind is bool:  # a switch: given, the option is the opposite of its default
        add(flag, dest=option, action="store_const", const=not default, default=None, help=meaning)
    elif isinstance(kind, list):
        add(flag, dest=option, choices=kind, default=None, help=f"{meaning} (default: {default})")
    else:
        shown = "" if default is None or "default:" in meaning else f" (default: {default})"
        add(flag, dest=option, type=kind, default=None, help=meaning + shown)


def add_transcribe_flags(parser: argparse.ArgumentParser) -> None:
    defaults = option_defaults()
    for option, (flag, kind, meaning) in FLAGS.items():
        _add(parser.add_argument, option, flag, kind, meaning, defaults[option])
    parser.add_argument(
        "--known-speaker",
        dest="known_speakers",
        action="append",
        metavar="NAME=CLIP",
        help="with --diarize: name the voice that matches this short clip of the speaker (repeatable)",
    )
    parser.add_argument(
        "--vad",
        default=None,
        choices=["auto", "on", "off"],
        help="decode only the speech Silero VAD finds (default: auto, for audio over 30 s)",
    )
    decoding = parser.add_argument_group("decoding (faster-whisper's options)").add_argument
    for option, (flag, kind, meaning) in DECODING_FLAGS.items():
        _add(decoding, option, flag, kind, meaning, defaults[option])


def transcribe_options(args: argparse.Namespace, engine: dict):
    """The flags given, as TranscribeOptions (checked there: a bad value is a one-line error)."""
    from scriba.transcription.options import VAD_CHOICES, TranscribeOptions

    given = {o: v for o in (*FLAGS, *DECODING_FLAGS) if (v := getattr(args, o, None)) is not None}
    if "suppress_tokens" in given:
        given["suppress_tokens"] = _ids(given["suppress_tokens"])
    if args.vad is not None:
        given["vad_filter"] = VAD_CHOICES[args.vad]
    if getattr(args, "known_speakers", None):
        given["known_speakers"] = _known(args.known_speakers)
    return TranscribeOptions(**given, engine=engine)


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--suppress-tokens must be comma-separated token ids, got {text!r}") from None


def _known(pairs: list[str]) -> dict[str, str]:
    """NAME=CLIP pairs -> {name: clip path}."""
    known = {}
    for pair in pairs:
        name, sep, clip = pair.partition("=")
        if not sep or not name.strip() or not clip:
            raise ValueError(f"--known-speaker takes NAME=CLIP, got {pair!r}")
        known[name.strip()] = clip
    return known
